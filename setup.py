"""The install step's two additions to pyproject.toml.

- The package list, computed: `iosched` (the root, iosched/) and every package under each top-level folder that
  `[tool.setuptools.package-dir]` maps beneath it (core/ is iosched.core, core/live/ iosched.core.live, …), so a
  new package folder is never left out of the wheel (tests/unit/test_packaging.py checks it).
- The CO-RE block tracer (core/trace/bpf), built into the package. A machine without clang, bpftool, libbpf-dev
  or BTF still installs iosched: bpf/BUILD-FAILED keeps the reason, and tracing runs bpftrace instead, saying why.
"""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def packages() -> list[str]:
    """The root package and, for each folder pyproject maps under it, that folder's package and all below."""
    mapped = tomllib.loads((HERE / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    found = ["iosched"]
    for name, folder in mapped.items():
        found += [name, *(f"{name}.{sub}" for sub in find_packages(str(HERE / folder)))]
    return found


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


setup(packages=packages(), cmdclass={"build_py": BuildWithTracer})
