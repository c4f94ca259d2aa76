"""Fill level and steady state as stated factors, on real loop devices with real fio.

- `--fill 50%` trims the device and writes half of it: the loop device's backing file (tmpfs, which frees a trimmed
  block's page) ends holding data for 50% ± 2% of its size, after being written whole first, and the result records
  the level, said before the first run with its time;
- a run waits for steady state with fio's own detection: a flat load (a job fio paces at a fixed rate) reaches it
  and the wait ends early; a drifting one (the same job under a read-IOPS limit lowered every second, in a cgroup the
  test makes) times out, and the result says so, the run kept and marked;
- each run's CPU per IO comes split into the submitting task's and the kernel workers'.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from iosched.core.base.errors import IoschedError
from iosched.core.kernel.cgroupfs import io_hierarchy

from conftest import Loop, need, need_real, run_cli

MiB = 1 << 20


@pytest.fixture
def shm_loop(make_loop: Callable[..., Loop]) -> Iterator[Loop]:
    """A 256 MiB loop device over a sparse file in tmpfs: its allocated blocks are the device's data (a discard
    punches a hole, and tmpfs frees the page at once)."""
    directory = Path(tempfile.mkdtemp(prefix="iosched-test-", dir="/dev/shm"))
    try:
        yield make_loop("256M", directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def allocated_percent(loop: Loop) -> float:
    st = loop.file.stat()
    return st.st_blocks * 512 / st.st_size * 100


@pytest.mark.plumbing
def test_fill_50_fills_to_within_two_percent_and_records_it(shm_loop: Loop) -> None:
    need_real("fio", "setpriv", "blkdiscard", "dd")
    subprocess.run(["dd", "if=/dev/urandom", f"of={shm_loop.path}", "bs=1M", "count=256", "oflag=direct"],
                   check=True, capture_output=True, timeout=120)
    assert allocated_percent(shm_loop) > 99  # written whole: the fill's trim must take that back
    out = run_cli("compare", shm_loop.name, "--schedulers", "none,mq-deadline", "--job", "rnd4k-q1t1-read",
                  "--runtime", "1", "--size", "64M", "--repeat", "1", "--settle", "0", "--fill", "50%", "--json",
                  timeout=180)
    assert out.returncode == 0, out.stderr
    assert abs(allocated_percent(shm_loop) - 50) <= 2, allocated_percent(shm_loop)
    doc = json.loads(out.stdout)
    fill = doc["conditions"]["fill"]
    assert fill["asked"] == 50 and abs(fill["level"] - 50) <= 2 and fill["trimmed"] and fill["how"] == "written"
    assert (fill["range_bytes"], fill["range_level"]) == (64 * MiB, 100)  # the job's 64 MiB lie in the written half
    assert doc["conditions"]["device"] == shm_loop.name and doc["conditions"]["steady"] is None
    said = out.stderr.splitlines()
    planned = next(i for i, line in enumerate(said) if line.startswith(f"iosched: fill {shm_loop.name} to 50%"))
    assert "trim it whole" in said[planned] and "about" in said[planned]  # its time, before anything is written
    assert f"{shm_loop.name} (256.0M) filled to 50.0% (trimmed first" in said[planned + 1]
    assert said[planned + 1].endswith("; the runs' range, the first 64.0M, was 100% written before the runs")
    for run in doc["runs"]:  # where the CPU per IO went
        assert run["metrics"]["cpu_us_per_io_task"] > 0 and run["metrics"]["cpu_us_per_io_workers"] >= 0
        assert "steady" not in run


@pytest.mark.plumbing
def test_advise_plans_the_fill_in_its_time(shm_loop: Loop) -> None:
    need_real("fio")
    out = run_cli("advise", shm_loop.name, "--goal", "throughput", "--runtime", "1", "--fill", "50%", "--dry-run",
                  "--json", timeout=60)
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)["plan"]
    assert plan["fill"].startswith(f"fill {shm_loop.name} to 50% before the first run: trim it whole, then write "
                                   "128.0M of incompressible data: about")
    assert plan["target"] == f"raw /dev/{shm_loop.name}, written over (blank and unused)"
    assert "offers" not in plan  # a loop device is no SSD: no "re-run at ≥ 50% full"
    assert shm_loop.file.stat().st_blocks == 0  # a plan changes nothing


# --- steady state -------------------------------------------------------------------------------------------------

PACED = """[paced]
rw=randread
bs=4k
iodepth=1
ioengine=libaio
direct=1
size=64M
rate_iops=400
"""


@contextlib.contextmanager
def read_limit(loop: Loop) -> Iterator[tuple[Callable[[int], None], Path]]:
    """A cgroup of the test's own with a read-IOPS limit on ``loop`` (blk-throttle: v2's io.max, v1's blkio), and
    the file a process joins it by; removed afterwards."""
    try:
        h = io_hierarchy()
    except IoschedError as e:
        need(False, f"needs the io or blkio cgroup controller: {e}")
    knob_name = "io.max" if h.version == 2 else "blkio.throttle.read_iops_device"
    group = h.mount / f"iosched-test-steady-{os.getpid()}"
    group.mkdir()
    knob = group / knob_name
    if not knob.exists():  # only with blk-throttle built in (v2 lists io.max in a child cgroup only)
        group.rmdir()
        need(False, f"needs blk-throttle ({knob_name})")
    maj_min = Path(f"/sys/block/{loop.name}/dev").read_text().strip()

    def limit(iops: int) -> None:
        knob.write_text(f"{maj_min} riops={iops}\n" if h.version == 2 else f"{maj_min} {iops}\n")

    try:
        yield limit, group / "cgroup.procs"
    finally:
        deadline = time.monotonic() + 10
        while group.exists():
            try:
                group.rmdir()
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


def compare_waiting(loop: Loop, tmp: Path, timeout_s: int, procs: Path | None = None) -> tuple[str, dict]:
    """A compare of the paced job, each run waiting for an IOPS slope within 2%/s over 4 s: its text and saved
    document."""
    job = tmp / "paced.fio"
    job.write_text(PACED)
    saved = tmp / "steady.json"
    join = ["/bin/sh", "-c", 'echo $$ > "$1" && shift && exec "$@"', "join", str(procs)] if procs else None
    out = run_cli("compare", loop.name, "--schedulers", "none,mq-deadline", "--job", str(job), "--runtime", "1",
                  "--repeat", "1", "--settle", "0", "--steady", "iops_slope:2%", "--steady-window", "4",
                  "--steady-ramp", "1", "--steady-timeout", str(timeout_s), "--save", str(saved),
                  timeout=4 * timeout_s + 120, preexec=join)
    assert out.returncode == 0, out.stderr
    return out.stdout, json.loads(saved.read_text())


def test_a_flat_run_reaches_steady_state_and_its_wait_ends(tmpfs_loop: Loop, tmp_path: Path) -> None:
    need_real("fio", "setpriv")
    text, doc = compare_waiting(tmpfs_loop, tmp_path, timeout_s=40)
    assert doc["conditions"]["steady"] == {"criterion": "iops_slope:2%", "window_s": 4, "ramp_s": 1, "timeout_s": 40}
    for run in doc["runs"]:
        assert run["steady"]["reached"] and run["steady"]["waited_s"] < 40, run["steady"]
        assert abs(run["steady"]["mean"] - 400) < 40  # the pace fio kept
    assert "steady state: each run waited for IOPS slope within 2%/s of the mean over 4 s, after 1 s of ramp " \
           "(at most 40 s): reached before 2 of 2 runs" in text


def test_a_drifting_run_times_out_and_it_is_said(tmpfs_loop: Loop, tmp_path: Path) -> None:
    need_real("fio", "setpriv")
    with read_limit(tmpfs_loop) as (limit, procs):
        stop = threading.Event()

        def drift() -> None:  # the limit falls 10% of its start a second, then starts again: never flat for 4 s
            step = 0
            while not stop.is_set():
                limit(360 - 30 * (step % 10))
                step += 1
                stop.wait(1.0)

        limit(360)
        t = threading.Thread(target=drift, daemon=True)
        t.start()
        try:
            text, doc = compare_waiting(tmpfs_loop, tmp_path, timeout_s=8, procs=procs)
        finally:
            stop.set()
            t.join()
    for run in doc["runs"]:
        steady = run["steady"]
        assert not steady["reached"] and steady["waited_s"] >= 7, steady
        assert run["valid"] and run["metrics"]["iops"] > 0  # kept, marked: the reader judges it
    assert "reached before 0 of 2 runs; the others are kept, marked:" in text
    assert "run 1 (none): steady state not reached in 8 s: IOPS slope " in text and "(bound 2%)" in text
