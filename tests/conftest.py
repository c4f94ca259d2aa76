"""Shared fixtures: fixture trees, real loop devices the test creates, and the rule that CI never skips."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

from fixtree import FixTree

# No per-example deadline: a deadline is a timed assertion, and on a loaded machine an example that takes 400 ms
# instead of 200 ms fails a test that found nothing wrong. Every property test still runs its examples.
settings.register_profile("iosched", deadline=None)
settings.load_profile("iosched")

IN_CI = bool(os.environ.get("CI"))


def need(condition: bool, why: str) -> None:
    """Skip locally when the machine cannot run a real test; under CI a skip would hide a gap, so fail."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"real test cannot run under CI: {why}")
    pytest.skip(why)


def need_real(*tools: str) -> None:
    need(os.geteuid() == 0, "needs root (loop devices, sysfs writes)")
    for tool in ("losetup", *tools):
        need(shutil.which(tool) is not None, f"needs {tool} on PATH")


@pytest.fixture(autouse=True)
def private_journal(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own journal and results directories: tests never read or write the machine's
    /run/iosched or /var/lib/iosched (children started by a test inherit both)."""
    run_dir = tmp_path_factory.mktemp("run") / "iosched"
    monkeypatch.setenv("IOSCHED_RUN_DIR", str(run_dir))
    monkeypatch.setenv("IOSCHED_RESULTS_DIR", str(run_dir.parent / "results"))
    return run_dir


@pytest.fixture
def others_dir() -> Iterator[Path]:
    """A folder anyone may write (0777, not sticky: fs.protected_symlinks does not apply there) that the
    unprivileged user of tests/link_support.py can reach, outside the test's private tmp_path; removed after."""
    d = Path(tempfile.mkdtemp(prefix="iosched-shared-", dir="/tmp"))
    os.chmod(d, 0o777)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def tree(tmp_path: Path) -> FixTree:
    return FixTree(tmp_path / "root")


@dataclass
class Loop:
    name: str  # e.g. "loop3"
    path: str  # "/dev/loop3"
    file: Path
    initial_scheduler: str = ""  # what the test starts from: always the kernel's default for loop, none
    node_scheduler: str = ""  # what the node had before: a node keeps its scheduler across attachments
    attached: bool = True  # False once detached: the node may be someone else's after that

    @property
    def sysdir(self) -> Path:
        return Path("/sys/block", self.name)

    def scheduler_text(self) -> str:
        return (self.sysdir / "queue/scheduler").read_text().strip()

    def current(self) -> str:
        text = self.scheduler_text()
        return text[text.index("[") + 1 : text.index("]")]


def attach_loop(directory: Path, size: str = "1G") -> Loop:
    f = directory / "disk.img"
    subprocess.run(["truncate", "-s", size, str(f)], check=True)
    out = subprocess.run(["losetup", "-f", "--show", "--direct-io=on", str(f)],
                         check=True, capture_output=True, text=True)
    path = out.stdout.strip()
    loop = Loop(name=os.path.basename(path), path=path, file=f)
    # Partitions added by hand (partx) outlive `losetup -d` on a node without partscan: drop stale ones.
    subprocess.run(["partx", "-d", path], check=False, capture_output=True)
    # A run killed mid-test can leave a node on another scheduler; every test starts from none all the same.
    loop.node_scheduler = loop.current()
    if loop.node_scheduler != "none":
        (loop.sysdir / "queue/scheduler").write_text("none")
    loop.initial_scheduler = loop.current()
    return loop


def detach_loop(loop: Loop) -> None:
    """Detach and delete; the loop node outlives the attachment, so its scheduler is put back first. Once only:
    a test may detach a device itself (a device that goes away), and the node may be another's by teardown."""
    if not loop.attached:
        return
    loop.attached = False
    try:
        if loop.current() != loop.node_scheduler:
            (loop.sysdir / "queue/scheduler").write_text(loop.node_scheduler)
    except (OSError, ValueError):
        pass
    subprocess.run(["partx", "-d", loop.path], check=False, capture_output=True)
    subprocess.run(["losetup", "-d", loop.path], check=False, capture_output=True)
    loop.file.unlink(missing_ok=True)


@pytest.fixture
def make_loop(tmp_path: Path) -> Iterator[Callable[..., Loop]]:
    """Real block devices over sparse files, as many as a test asks for: `make_loop("64M")`, or
    `make_loop("64M", where)` when where the file lies matters (the demo sandbox's folder). The first lies in
    tmp_path, the others in folders of their own. Each is detached and deleted afterwards, pass or fail."""
    need_real()
    made: list[Loop] = []

    def make(size: str = "1G", directory: Path | None = None) -> Loop:
        if directory is None:
            directory = tmp_path if not made else tmp_path / f"loop-{len(made)}"
        directory.mkdir(parents=True, exist_ok=True)
        made.append(attach_loop(directory, size))
        return made[-1]

    try:
        yield make
    finally:
        for loop in reversed(made):
            detach_loop(loop)


@pytest.fixture
def shm_dir() -> Iterator[Path]:
    """A folder in tmpfs for the file under a loop device that fio writes at random (`make_loop(size, shm_dir)`):
    on the disk such a file ends in tens of thousands of extents, whose unlink took 4-40 s of a teardown; tmpfs
    frees its pages at once (and takes direct IO)."""
    directory = Path(tempfile.mkdtemp(prefix="iosched-test-", dir="/dev/shm"))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)  # detached next, by make_loop: its pages go then


@pytest.fixture
def tmpfs_loop(make_loop: Callable[..., Loop], shm_dir: Path) -> Loop:
    """A loop device over a sparse 1 GiB file in tmpfs (shm_dir), for tests whose fio writes at random."""
    return make_loop("1G", shm_dir)


@pytest.fixture
def loopdev(make_loop: Callable[..., Loop]) -> Loop:
    """A real block device over a sparse 1 GiB file in a temp dir; always detached and deleted afterwards."""
    return make_loop()


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60,
            preexec: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real `iosched` entry point in a child process."""
    cmd = [*(preexec or []), sys.executable, "-m", "iosched.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def one_sentence_exit_2(*args: str) -> str:
    """Run the command line expecting bad input: exit 2 and one sentence on stderr, never a traceback."""
    out = run_cli(*args, timeout=30)
    assert out.returncode == 2, out
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr, out.stderr
    return out.stderr


def drawn_sleep(directory: Path, draw: str) -> str:
    """A `--cmd` that sleeps a time drawn afresh each run: ``draw`` is a Python expression of ``n``, the run's number
    (counted in a file of ``directory`` the runs share, from 0), and ``r``, a random.Random seeded by it."""
    counter = directory / "n"
    counter.write_text("0")
    return (f"{sys.executable} -c \"import pathlib, random, time; p = pathlib.Path('{counter}'); "
            f"n = int(p.read_text()); p.write_text(str(n + 1)); r = random.Random(f'draw-{{n}}'); "
            f"time.sleep({draw})\"")
