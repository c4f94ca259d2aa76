"""The distribution installs one import package, `iosched`, and nothing else at the top of site-packages."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_holds_only_the_iosched_package(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp_path), str(ROOT)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("iosched-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"iosched"}
    for module in ("iosched/cli/__main__.py", "iosched/cli/main.py", "iosched/core/live/sampler.py",
                   "iosched/tui/app.py", "iosched/themes/base.tcss", "iosched/cli/web/app_index.html",
                   "iosched/core/py.typed"):
        assert module in names
    # The CO-RE tracer: its sources, and its loader built by the install step, executable (tests/run installs
    # clang, bpftool and libbpf-dev first, so here it must have been built).
    for source in ("blktrace.bpf.c", "blktrace.c", "blktrace.h", "build.sh"):
        assert f"iosched/core/trace/bpf/{source}" in names
    assert "iosched/core/trace/bpf/BUILD-FAILED" not in names
    loader = zipfile.ZipFile(wheel).getinfo("iosched/core/trace/bpf/iosched-blktrace")
    assert (loader.external_attr >> 16) & 0o111 and loader.file_size > 0
    # Every package folder of the source is in the wheel (pyproject lists the packages by hand).
    for top in ("cli", "core", "tui", "themes"):
        for init in (ROOT / top).rglob("__init__.py"):
            folder = init.parent.relative_to(ROOT).as_posix()
            assert f"iosched/{folder}/__init__.py" in names, init


def test_python_dash_m_iosched_cli_prints_help() -> None:
    r = subprocess.run([sys.executable, "-m", "iosched.cli", "--help"], capture_output=True, text=True, cwd="/")
    assert r.returncode == 0
    assert "usage: iosched" in r.stdout


def test_the_test_runner_says_what_it_does_and_lacks_before_installing_anything(tmp_path):
    """`bash tests/run --help`: usage and the packages this machine lacks; no venv made, nothing installed."""
    venv = tmp_path / "venv"
    out = subprocess.run(["bash", str(Path(__file__).parents[2] / "tests" / "run"), "--help"], capture_output=True,
                         text=True, timeout=30, env={**os.environ, "IOSCHED_TEST_VENV": str(venv)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: bash tests/run") and "This machine lacks: " in out.stdout
    assert not venv.exists()
