"""The install step's one addition to pyproject.toml: the CO-RE block tracer (core/trace/bpf), built into the package.

A wheel (`pip install .`) gets the loader in its own iosched/core/trace/bpf. An editable install for development
(`pip install -e .`) runs the package from the clone, so the loader is built into the clone's core/trace/bpf,
beside its sources (ignored by git), where program.py looks for it. A machine without clang, bpftool, libbpf-dev
or BTF still installs iosched: BUILD-FAILED there keeps the reason, and tracing runs bpftrace instead, saying why.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

# Through the package's own folder (iosched/core is a link to core/ in a clone, a folder in an sdist).
BPF = Path("iosched/core/trace/bpf")


class BuildWithTracer(build_py):
    def run(self) -> None:
        super().run()
        out = BPF if self.editable_mode else Path(self.build_lib, BPF)
        out.mkdir(parents=True, exist_ok=True)
        failed = out / "BUILD-FAILED"
        failed.unlink(missing_ok=True)
        try:
            r = subprocess.run(["sh", str((BPF / "build.sh").resolve()), str(out.resolve())],
                               capture_output=True, text=True, timeout=600)
            ok, why = r.returncode == 0, (r.stderr.strip() or f"build.sh exited with {r.returncode}")
        except (OSError, subprocess.SubprocessError) as e:
            ok, why = False, str(e)
        if not ok:
            failed.write_text(why + "\n")
            self.warn(f"the CO-RE block tracer was not built ({why.splitlines()[-1]}); tracing will use bpftrace")


setup(cmdclass={"build_py": BuildWithTracer})
