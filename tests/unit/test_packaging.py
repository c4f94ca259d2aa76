"""The package's folder and the wheel made from it.

In a clone, iosched/ is the whole import package: the root (the version, `python -m iosched`) and a link to each of
the top-level folders, which tools read as they are. The distribution installs that package and nothing else at
the top of site-packages, every file of it a file, the CO-RE tracer's loader built; iosched installed from the wheel
runs and finds its data. The tests themselves run on the editable install (tests/run), so this is where a
packaging mistake shows.
"""

import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from fnmatch import fnmatch
from importlib.metadata import version
from pathlib import Path

import pytest

import iosched

ROOT = Path(__file__).resolve().parents[2]
LINKED = ("cli", "core", "themes", "tui")  # the design card's top-level folders, each a sub-package of iosched
# What the build reads: pyproject.toml, setup.py, the readme it names, and the package's folders.
BUILD_INPUTS = ("pyproject.toml", "setup.py", "README.md", "iosched", *LINKED)
# Made in a clone and never shipped as they are: caches, and the tracer's loader built for the editable install
# (the wheel gets one built for it).
NOT_SOURCE = ("__pycache__", "*.pyc", "iosched-blktrace", "BUILD-FAILED")


def made_here(name: str) -> bool:
    return any(fnmatch(name, pattern) for pattern in NOT_SOURCE)


def package_files(top: Path) -> set[str]:
    """Every file under the package folder `top` (through its links), as paths inside the wheel."""
    found = set()
    for folder, dirs, files in os.walk(top, followlinks=True):
        dirs[:] = [d for d in dirs if not made_here(d)]
        for name in files:
            if not made_here(name):
                found.add(Path("iosched", Path(folder, name).relative_to(top)).as_posix())
    return found


def test_the_package_folder_is_the_root_and_a_link_to_each_top_level_folder() -> None:
    links = {p.name: os.readlink(p) for p in (ROOT / "iosched").iterdir() if p.is_symlink()}
    assert links == {name: f"../{name}" for name in LINKED}
    assert {p.name for p in (ROOT / "iosched").iterdir()} - links.keys() - {"__pycache__"} == {
        "__init__.py", "__main__.py", "py.typed"}
    # As git keeps them (mode 120000: a link, which a clone makes again), not as copies or text files.
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-s", "iosched"], capture_output=True, text=True,
                            check=True).stdout.splitlines()
    modes = {line.split("\t")[1]: line.split()[0] for line in listed}
    assert {f"iosched/{name}": "120000" for name in LINKED}.items() <= modes.items()
    # The build finds the packages in iosched/ alone (no mapping of folders to names to keep beside the links).
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "package-dir" not in setuptools and setuptools["packages"]["find"]["include"] == ["iosched", "iosched.*"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of the build's inputs as they are now (links kept as links), so no earlier build
    of the clone (build/) can lend it a file."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    src.mkdir()
    for name in BUILD_INPUTS:
        if (ROOT / name).is_dir() and not (ROOT / name).is_symlink():
            shutil.copytree(ROOT / name, src / name, symlinks=True, ignore=shutil.ignore_patterns(*NOT_SOURCE))
        else:
            shutil.copy2(ROOT / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(work), str(src)], check=True, capture_output=True)
    (built,) = work.glob("iosched-*.whl")
    return built


def test_the_wheel_holds_the_package_folder_as_files(wheel: Path) -> None:
    infos = zipfile.ZipFile(wheel).infolist()
    names = {i.filename for i in infos}
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"iosched"}
    # Every file the package's folder holds, through its links, and no more (package data included), each a file.
    shipped = {n for n in names if n.startswith("iosched/")} - {"iosched/core/trace/bpf/iosched-blktrace"}
    assert shipped == package_files(ROOT / "iosched")
    assert not [i.filename for i in infos if stat.S_ISLNK(i.external_attr >> 16)]
    for module in ("iosched/__init__.py", "iosched/__main__.py", "iosched/cli/main.py", "iosched/core/live/sampler.py",
                   "iosched/tui/app.py", "iosched/themes/base.tcss", "iosched/cli/web/app_index.html",
                   "iosched/core/py.typed", "iosched/core/load/startup/python-imports.iolog",
                   "iosched/core/trace/bpf/blktrace.bpf.c", "iosched/core/trace/bpf/build.sh"):
        assert module in names
    # The CO-RE tracer's loader, built by the install step, executable (tests/run installs clang, bpftool and
    # libbpf-dev first, so here it must have been built).
    assert "iosched/core/trace/bpf/BUILD-FAILED" not in names
    loader = zipfile.ZipFile(wheel).getinfo("iosched/core/trace/bpf/iosched-blktrace")
    assert (loader.external_attr >> 16) & 0o111 and loader.file_size > 0


def test_iosched_installed_from_the_wheel_runs_and_finds_its_data(wheel: Path, tmp_path: Path, tree) -> None:
    """Installed apart from the clone, run with no site-packages but the dependencies' (-S: the editable install's
    hook is not loaded), from `/`."""
    target = tmp_path / "installed"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target", str(target),
                    str(wheel)], check=True, capture_output=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), sysconfig.get_paths()["purelib"]])}

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-S", *argv], capture_output=True, text=True, cwd="/", env=env,
                              timeout=60)

    r = run("-m", "iosched", "--version")
    assert (r.returncode, r.stdout, r.stderr) == (0, f"iosched {iosched.__version__}\n", "")
    tree.add_disk("sda", "8:0", scheduler="none [mq-deadline]")
    r = run("-m", "iosched", "--root", str(tree.root), "list", "--json")
    assert r.returncode == 0 and '"name": "sda"' in r.stdout, r.stderr
    # What the code reads beside itself, found where the wheel put it.
    r = run("-c", """
import os, iosched
from iosched.cli.serve import PAGE_DIR
from iosched.core.load.bundled import STARTUPS, bundled_startup
from iosched.core.trace.program import loader_path
from iosched.themes import stylesheets
print(iosched.__file__)
assert all(p.is_file() for p in stylesheets())
assert (PAGE_DIR / "app_index.html").is_file()
for name in STARTUPS: bundled_startup(name)
assert os.access(loader_path(), os.X_OK)
""")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{target}/iosched/__init__.py\n"


def test_python_dash_m_iosched_cli_prints_help() -> None:
    r = subprocess.run([sys.executable, "-m", "iosched.cli", "--help"], capture_output=True, text=True, cwd="/")
    assert r.returncode == 0
    assert "usage: iosched" in r.stdout


def test_the_version_is_written_once_and_printed_by_every_entry_point() -> None:
    assert "version" not in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]  # read from iosched/
    assert iosched.__version__ == version("iosched") and iosched.__version__.count(".") == 2
    iosched_command = Path(sys.executable).parent / "iosched"  # the console script the install made
    # From `/` and from a clone, where iosched/ stands first on the path.
    for cwd in ("/", str(ROOT)):
        for argv in ([sys.executable, "-m", "iosched", "--version"], [str(iosched_command), "--version"]):
            r = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=60)
            assert (r.returncode, r.stdout, r.stderr) == (0, f"iosched {iosched.__version__}\n", ""), (argv, cwd)


def test_the_development_install_runs_the_clone() -> None:
    """The editable install: iosched is imported from this clone's iosched/, from anywhere."""
    r = subprocess.run([sys.executable, "-c", "import iosched.core.trace.program as p; print(p.__file__)"],
                       capture_output=True, text=True, cwd="/", timeout=60)
    assert r.stdout == f"{ROOT}/iosched/core/trace/program.py\n", r.stderr


def test_python_dash_m_iosched_runs_the_command_line(tree) -> None:
    tree.add_disk("sda", "8:0", scheduler="none [mq-deadline]")
    for cwd in ("/", str(ROOT)):
        r = subprocess.run([sys.executable, "-m", "iosched", "--root", str(tree.root), "list", "--json"],
                           capture_output=True, text=True, cwd=cwd, timeout=60)
        assert r.returncode == 0, r.stderr
        assert '"name": "sda"' in r.stdout
        assert subprocess.run([sys.executable, "-m", "iosched", "nosuchcommand"], capture_output=True, text=True,
                              cwd=cwd, timeout=60).returncode == 2
    # A clone's Python without iosched's dependencies (-S: no site-packages) runs what needs none of them, and says
    # in one sentence when a command needs one (shtab, for the completion scripts).
    r = subprocess.run([sys.executable, "-S", "-m", "iosched", "--version"], capture_output=True, text=True, cwd=ROOT,
                       timeout=60)
    assert (r.returncode, r.stdout) == (0, f"iosched {iosched.__version__}\n"), r.stderr
    r = subprocess.run([sys.executable, "-S", "-m", "iosched", "--print-completion", "bash"], capture_output=True,
                       text=True, cwd=ROOT, timeout=60)
    said = f"iosched: shtab is not installed for {sys.executable}; install iosched first (README.md, Install)"
    assert (r.returncode, r.stdout, r.stderr) == (1, "", said + "\n")


def test_the_test_runner_says_what_it_does_and_lacks_before_installing_anything(tmp_path):
    """`bash tests/run --help`: usage and the packages this machine lacks; no venv made, nothing installed."""
    venv = tmp_path / "venv"
    out = subprocess.run(["bash", str(ROOT / "tests" / "run"), "--help"], capture_output=True,
                         text=True, timeout=30, env={**os.environ, "IOSCHED_TEST_VENV": str(venv)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: bash tests/run") and "This machine lacks: " in out.stdout
    assert not venv.exists()
