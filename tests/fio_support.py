"""Helpers of the real tests: start the command line as a child, find its fio and its commands, wait for a line
of it."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# A wait for something to start guards against a hang, never sets a speed: a loaded machine may take many times an
# idle one's seconds, and a passing wait returns as soon as it sees what it waits for. (A wait for something to end
# stays short: an orphan given long enough would end by itself, and the test could no longer fail.)
HANG_S = 120.0


def fio_procs(marker: str) -> list[int]:
    """PIDs of fio processes whose command line mentions ``marker`` (a loop device or scratch dir), or whose
    job file does (a job with roles names its target there)."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd and os.path.basename(cmd[0]) == b"fio" and any(marker.encode() in a or _job_file_names(a, marker)
                                                               for a in cmd):
            pids.append(int(d.name))
    return pids


def _job_file_names(arg: bytes, marker: str) -> bool:
    if not arg.endswith(b".fio"):
        return False
    try:
        return marker in Path(os.fsdecode(arg)).read_text()
    except (OSError, UnicodeDecodeError):
        return False


def start_cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "iosched.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)


def wait_for_fio(marker: str, proc: subprocess.Popen, timeout: float = 20) -> list[int]:
    deadline = time.monotonic() + max(timeout, HANG_S)
    while time.monotonic() < deadline:
        pids = fio_procs(marker)
        if pids:
            return pids
        if proc.poll() is not None:
            pytest.fail(f"iosched ended before fio started: {proc.communicate()}")
        time.sleep(0.05)
    pytest.fail("fio did not start")


def no_fio_left(marker: str) -> None:
    deadline = time.monotonic() + 5
    while fio_procs(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fio_procs(marker) == [], "an orphan fio is still running"


def wait_for_line(proc: subprocess.Popen, want: str, timeout: float = 60) -> list[str]:
    """stderr lines of ``proc`` up to the first that holds ``want``."""
    assert proc.stderr is not None
    deadline, seen = time.monotonic() + max(timeout, HANG_S), []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            pytest.fail(f"iosched ended before {want!r}: {seen[-5:]}")
        seen.append(line)
        if want in line:
            return seen
    pytest.fail(f"no {want!r} in time")


def procs_with(marker: str) -> list[int]:
    """PIDs whose command line holds ``marker`` as one argument word (not this test's own processes)."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                args = (d / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if marker.encode() in args:
                pids.append(int(d.name))
    return pids


def wait_for(marker: str, proc: subprocess.Popen, timeout: float = 20) -> None:
    deadline = time.monotonic() + max(timeout, HANG_S)
    while not procs_with(marker):
        if proc.poll() is not None:
            pytest.fail(f"iosched ended before the command started: {proc.communicate()}")
        if time.monotonic() > deadline:
            pytest.fail("the command did not start")
        time.sleep(0.05)


def gone(marker: str, timeout: float = 5) -> bool:
    deadline = time.monotonic() + timeout
    while procs_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not procs_with(marker)


def cmd_cgroups_of(pid: int) -> list[str]:
    """The command cgroups (iosched-cmd-PID-N) an iosched of this pid made and left, wherever cgroup2 is mounted."""
    found = []
    for top, dirs, _files in os.walk("/sys/fs/cgroup"):
        found += [os.path.join(top, d) for d in dirs if d.startswith(f"iosched-cmd-{pid}-")]
        if top.count("/") >= 6:  # iosched's groups sit a level or two below the mount
            dirs.clear()
    return found
