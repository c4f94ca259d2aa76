"""The install step's one addition to pyproject.toml: build the CO-RE block tracer (core/trace/bpf) into the
package. A machine without clang, bpftool, libbpf-dev or BTF still installs iosched: bpf/BUILD-FAILED keeps
the reason, and tracing runs bpftrace instead, saying why."""

from __future__ import annotations

import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithTracer(build_py):
    def run(self) -> None:
        super().run()
        out = Path(self.build_lib, "iosched/core/trace/bpf")
        out.mkdir(parents=True, exist_ok=True)
        failed = out / "BUILD-FAILED"
        failed.unlink(missing_ok=True)
        try:
            r = subprocess.run(["sh", str(Path("core/trace/bpf/build.sh").resolve()), str(out)],
                               capture_output=True, text=True, timeout=600)
            ok, why = r.returncode == 0, (r.stderr.strip() or f"build.sh exited with {r.returncode}")
        except (OSError, subprocess.SubprocessError) as e:
            ok, why = False, str(e)
        if not ok:
            failed.write_text(why + "\n")
            self.warn(f"the CO-RE block tracer was not built ({why.splitlines()[-1]}); tracing will use bpftrace")


setup(cmdclass={"build_py": BuildWithTracer})
