"""The distribution installs one import package, `iosched`, and nothing else at the top of site-packages: a real
root (the version, `python -m iosched`) with the top-level folders beneath it."""

import os
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import version
from pathlib import Path

import iosched

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_holds_only_the_iosched_package(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp_path), str(ROOT)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("iosched-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"iosched"}
    for module in ("iosched/__init__.py", "iosched/__main__.py", "iosched/cli/__main__.py", "iosched/cli/main.py",
                   "iosched/core/live/sampler.py", "iosched/tui/app.py", "iosched/themes/base.tcss",
                   "iosched/cli/web/app_index.html", "iosched/core/py.typed",
                   "iosched/core/load/startup/python-imports.iolog",
                   "iosched/core/load/startup/python-imports.iolog.meta.json"):
        assert module in names
    # The CO-RE tracer: its sources, and its loader built by the install step, executable (tests/run installs
    # clang, bpftool and libbpf-dev first, so here it must have been built).
    for source in ("blktrace.bpf.c", "blktrace.c", "blktrace.h", "build.sh"):
        assert f"iosched/core/trace/bpf/{source}" in names
    assert "iosched/core/trace/bpf/BUILD-FAILED" not in names
    loader = zipfile.ZipFile(wheel).getinfo("iosched/core/trace/bpf/iosched-blktrace")
    assert (loader.external_attr >> 16) & 0o111 and loader.file_size > 0
    # Every package folder of the source is in the wheel (setup.py computes the list from pyproject's mapping), and
    # every package in it is one of those folders, where the mapping puts it.
    mapped = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    assert mapped == {"iosched.cli": "cli", "iosched.core": "core", "iosched.tui": "tui", "iosched.themes": "themes"}
    source = {"iosched/__init__.py"} | {f"iosched/{init.relative_to(ROOT).as_posix()}"
                                        for top in mapped.values() for init in (ROOT / top).rglob("__init__.py")}
    assert len(source) > 12 and source == {n for n in names if n.endswith("/__init__.py")}
    assert "packages" not in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_python_dash_m_iosched_cli_prints_help() -> None:
    r = subprocess.run([sys.executable, "-m", "iosched.cli", "--help"], capture_output=True, text=True, cwd="/")
    assert r.returncode == 0
    assert "usage: iosched" in r.stdout


def test_the_version_is_written_once_and_printed_by_every_entry_point() -> None:
    assert "version" not in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]  # read from iosched/
    assert iosched.__version__ == version("iosched") and iosched.__version__.count(".") == 2
    iosched_command = Path(sys.executable).parent / "iosched"  # the console script the install made
    # From `/` and from a clone, where iosched/ stands first on the path and holds only the root.
    for cwd in ("/", str(ROOT)):
        for argv in ([sys.executable, "-m", "iosched", "--version"], [str(iosched_command), "--version"]):
            r = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=60)
            assert (r.returncode, r.stdout, r.stderr) == (0, f"iosched {iosched.__version__}\n", ""), (argv, cwd)


def test_python_dash_m_iosched_runs_the_command_line(tree) -> None:
    tree.add_disk("sda", "8:0", scheduler="none [mq-deadline]")
    for cwd in ("/", str(ROOT)):
        r = subprocess.run([sys.executable, "-m", "iosched", "--root", str(tree.root), "list", "--json"],
                           capture_output=True, text=True, cwd=cwd, timeout=60)
        assert r.returncode == 0, r.stderr
        assert '"name": "sda"' in r.stdout
        assert subprocess.run([sys.executable, "-m", "iosched", "nosuchcommand"], capture_output=True, text=True,
                              cwd=cwd, timeout=60).returncode == 2
    # A clone's Python without iosched installed (-S: no site-packages) finds only the root: one sentence, exit 1.
    r = subprocess.run([sys.executable, "-S", "-m", "iosched", "--version"], capture_output=True, text=True, cwd=ROOT,
                       timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    said = f"iosched: iosched.cli is not installed for {sys.executable}; install iosched first (README.md, Install)"
    assert r.stderr == said + "\n"


def test_the_test_runner_says_what_it_does_and_lacks_before_installing_anything(tmp_path):
    """`bash tests/run --help`: usage and the packages this machine lacks; no venv made, nothing installed."""
    venv = tmp_path / "venv"
    out = subprocess.run(["bash", str(Path(__file__).parents[2] / "tests" / "run"), "--help"], capture_output=True,
                         text=True, timeout=30, env={**os.environ, "IOSCHED_TEST_VENV": str(venv)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: bash tests/run") and "This machine lacks: " in out.stdout
    assert not venv.exists()
