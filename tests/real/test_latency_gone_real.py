"""`iosched latency` on real loop devices that are detached while it runs: it says each one is gone (not "no IO
completed" forever) and stops once every device it was given is gone."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from conftest import detach_loop, need_real

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def wait_for(proc: subprocess.Popen, lines: list[str], want: int, timeout: float = 30) -> None:
    """Read stdout lines until ``want`` of them arrived (bpftrace is up and samples flow)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while len(lines) < want and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
    assert len(lines) >= want, f"only {len(lines)} lines before the timeout or exit"


# A detached loop node is free: another process on the machine may attach it again at once, and then the name
# belongs to another device (a new disk sequence number). Gone either way.
GONE = {"no medium attached", "another device now has its name"}


def test_latency_says_a_detached_device_is_gone_and_stops_when_all_are(tmp_path, make_loop):
    need_real("bpftrace", "setpriv")
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    loops = [make_loop("64M", first), make_loop("64M", second)]
    names = [loop.name for loop in loops]
    proc = subprocess.Popen([sys.executable, "-m", "iosched.cli", "latency", names[0], "-i", "0.3", names[1], "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines: list[str] = []
        wait_for(proc, lines, 2)
        assert "gone" not in json.loads(lines[-1])
        detach_loop(loops[0])
        wait_for(proc, lines, len(lines) + 3)  # it goes on for the device still there
        assert proc.poll() is None
        gone = json.loads(lines[-1])["gone"]
        assert list(gone) == names[:1] and gone[names[0]] in GONE
        detach_loop(loops[1])
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1
    last = json.loads((lines + out.splitlines())[-1])
    assert sorted(last["gone"]) == sorted(names) and set(last["gone"].values()) <= GONE
    said = err.splitlines()
    assert [line.split(" (")[0] for line in said[:2]] == [f"iosched: {n} is gone" for n in names]
    assert said[2:] == ["iosched: every device named is gone: stopped"]


def test_latency_refuses_a_device_already_gone(tmp_path, make_loop):
    need_real("bpftrace", "setpriv")
    for _ in range(3):  # should another process take the freed node first, try another
        loop = make_loop("64M")
        detach_loop(loop)  # the node stays in /sys/block with size 0
        r = subprocess.run([sys.executable, "-m", "iosched.cli", "latency", loop.name, "-c", "1"],
                           capture_output=True, text=True, timeout=60)
        if (loop.sysdir / "size").read_text().strip() == "0":
            break
    assert r.returncode == 1, r.stderr
    assert r.stderr.splitlines() == [f"iosched: {loop.name} is gone (no medium attached)",
                                     "iosched: every device named is gone: nothing to trace"]
    assert r.stdout == ""
