"""A timed replay that cannot keep its capture's timing says so, on a real loop device the test makes: the device
throttled to 16 MiB/s for iosched (a cgroup the test makes and removes), one capture that asks for 32 MiB in 0.3 s
falls behind by about 1.7 s a run (each run invalid, the lag in its line and in the saved run), and one that asks
for 8 MiB over 2 s at the same device keeps up (valid, its lag a few milliseconds)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from schema_support import problems

from iosched.core.base.errors import IoschedError
from iosched.core.kernel.cgroupfs import io_hierarchy
from iosched.core.kernel.devices import read_device
from iosched.core.load.iolog import CaptureWriter, write_meta
from iosched.core.load.replay_lag import LAG_FLOOR_S

from conftest import need, need_real, run_cli

MIB = 1 << 20
RATE = 16 * MIB  # bytes a second the device gives iosched


@pytest.fixture
def throttled(loopdev) -> Iterator[list[str]]:
    """The command prefix that runs iosched (and the fio it starts) in a cgroup whose reads of ``loopdev`` are held
    to RATE; the cgroup is removed afterwards."""
    need_real("fio", "setpriv")
    try:
        h = io_hierarchy()
    except IoschedError as e:
        need(False, f"needs the io (v2) or blkio (v1) cgroup controller: {e}")
    group = h.mount / f"iosched-test-lag-{os.getpid()}"
    group.mkdir()
    try:
        majmin = (loopdev.sysdir / "dev").read_text().strip()
        if h.version == 2:
            (group / "io.max").write_text(f"{majmin} rbps={RATE}\n")
        else:
            (group / "blkio.throttle.read_bps_device").write_text(f"{majmin} {RATE}\n")
        yield ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(group)]
    finally:
        deadline = time.monotonic() + 10
        while True:
            try:
                group.rmdir()
                break
            except OSError:  # a process of the test's still leaving it
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


def capture(path: Path, device: str, count: int, span_s: float) -> Path:
    """A capture of ``count`` 1 MiB reads at depth 1, evenly over ``span_s`` seconds from 0.1 s, ending 0.1 s after."""
    doc = read_device(device)
    assert doc is not None
    with open(path, "w") as out:
        w = CaptureWriter(out, f"/dev/{device}", 0)
        for i in range(count):
            w.add(100_000_000 + int(i * span_s * 1e9 / count), 0, i * MIB // 512, MIB, 1)
        end_us = w.finish(int((0.2 + span_s) * 1e9))
    write_meta(w.meta(iolog=path.name, device=doc, kernel=os.uname().release, started="2026-11-27T00:00:00+00:00",
                      duration_s=end_us / 1e6, ended="duration", timestamps="begin", lost=0, untracked=0), path)
    return path


def replay(loop, log: Path, prefix: list[str]) -> tuple[int, dict, str, str]:
    """Exit code, saved document, report and progress of a timed replay under none and bfq."""
    saved = log.with_suffix(".json")
    r = run_cli("compare", loop.name, "--replay", str(log), "--replay-mode", "timed", "--schedulers", "none,bfq",
                "--repeat", "1", "--settle", "0", "--save", str(saved), preexec=prefix, timeout=120)
    return r.returncode, json.loads(saved.read_text()), r.stdout, r.stderr


def test_a_timed_replay_that_falls_behind_says_so_and_one_that_keeps_up_is_valid(loopdev, throttled, tmp_path):
    # 32 MiB asked for in 0.3 s of timing; at 16 MiB/s it takes about 2 s: every run ends ~1.7 s behind.
    code, doc, out, err = replay(loopdev, capture(tmp_path / "burst.iolog", loopdev.name, 32, 0.2), throttled)
    assert code == 1, err  # no valid run to judge
    assert problems("experiment.schema.json", doc) == []
    for run in doc["runs"]:
        lag = run["replay"]
        assert lag["basis"] == "span" and lag["capture_s"] == pytest.approx(0.3, abs=0.01)
        assert lag["bound_s"] == LAG_FLOOR_S and 1.2 < lag["lag_s"] < 10
        assert run["metrics"]["replay_lag_s"] == lag["lag_s"]
        assert not run["valid"] and run["invalid_reason"].startswith(f"the timed replay fell {lag['lag_s']:.2f} s "
                                                                     "behind the capture's timing")
        (job,) = run["fio"]["jobs"]
        assert job["read"]["total_ios"] == 32  # every request went, late: the lag is not a short run
    lines = [line for line in err.splitlines() if "INVALID" in line]
    assert len(lines) == 2 and all("replay lag 1." in line or "replay lag 2." in line for line in lines), err
    assert len(doc["judgement"]["invalid"]) == 2
    assert "timed replay: 2 of 2 run(s) fell behind the capture's timing by more than 1.00 s" in out

    # The same device at the same rate, asked for 8 MiB over 2 s: it keeps the timing.
    code, doc, out, err = replay(loopdev, capture(tmp_path / "paced.iolog", loopdev.name, 8, 2.0), throttled)
    assert code == 0, err
    assert problems("experiment.schema.json", doc) == []
    for run in doc["runs"]:
        lag = run["replay"]
        assert run["valid"], run["invalid_reason"]
        assert lag["capture_s"] == pytest.approx(2.1, abs=0.01) and lag["lag_s"] < 0.5
        assert run["metrics"]["replay_lag_s"] == lag["lag_s"]
    assert sum("replay lag " in line and " ms " in line for line in err.splitlines()) == 2, err
    assert "timed replay: every run kept the capture's timing to within " in out
    assert doc["judgement"]["summaries"]["none"]["replay_lag_s"]["n"] == 1
    assert loopdev.current() == loopdev.initial_scheduler
