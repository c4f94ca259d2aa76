"""`iosched watch --json` against the oracles, run over the same seconds under a real fio load."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from iosched.core.live.sampler import Sampler

from conftest import need_real

INTERVALS = 4


def fio_cmd(dev: str, rw: str, runtime: int, extra: tuple[str, ...] = ()) -> list[str]:
    return ["fio", "--name=load", f"--filename={dev}", "--direct=1", f"--rw={rw}", "--bs=4k", "--iodepth=16",
            "--ioengine=libaio", "--time_based", f"--runtime={runtime}", "--thread", "--output-format=json",
            *extra]


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def close(ours: float, theirs: float, rel: float, abs_: float = 0.0) -> bool:
    return abs(ours - theirs) <= max(abs_, rel * abs(theirs))


@pytest.mark.parametrize("rw,extra", [("randread", ()), ("randrw", ("--rwmixread=70",))],
                         ids=["randread-qd16", "mixed-70-30"])
def test_watch_agrees_with_iostat_mpstat_and_fio(tmpfs_loop, rw, extra):
    loopdev = tmpfs_loop  # fio writes at random: see tmpfs_loop
    need_real("fio", "iostat", "mpstat")
    dev = loopdev.name
    sampler = Sampler()
    before = sampler.take()
    fio = subprocess.Popen(fio_cmd(loopdev.path, rw, INTERVALS + 4, extra), stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)  # let the load settle before the measured window
        ours = subprocess.Popen([sys.executable, "-m", "iosched.cli", "watch", "--json", "-i", "1", "-c",
                                 str(INTERVALS + 1), dev], stdout=subprocess.PIPE, text=True)
        # Align the windows: start the oracles right after our first interval ends, so that our intervals
        # 2..n and theirs cover the same seconds (Python's start-up would otherwise shift ours by ~0.3 s).
        first = ours.stdout.readline()
        iostat = subprocess.Popen(["iostat", "-x", "-o", "JSON", dev, "1", str(INTERVALS + 1)],
                                  stdout=subprocess.PIPE, text=True)
        mpstat = subprocess.Popen(["mpstat", "-o", "JSON", "1", str(INTERVALS)], stdout=subprocess.PIPE,
                                  text=True)
        rest = ours.communicate(timeout=30)[0]
        assert first
        our_lines = [json.loads(line) for line in rest.splitlines()]
        io_stats = json.loads(iostat.communicate(timeout=30)[0])["sysstat"]["hosts"][0]["statistics"][1:]
        mp_stats = json.loads(mpstat.communicate(timeout=30)[0])["sysstat"]["hosts"][0]["statistics"]
        fio_out = fio.communicate(timeout=60)[0]
    finally:
        if fio.poll() is None:
            fio.kill()
            fio.wait()
    after = sampler.take()

    assert len(our_lines) == INTERVALS and len(io_stats) == INTERVALS
    ours_disk = [line["disks"][dev] for line in our_lines]
    theirs_disk = [next(d for d in s["disk"] if d["disk_device"] == dev) for s in io_stats]
    assert mean([d["r/s"] for d in ours_disk]) > 1000, "the load did not reach the device"
    for key in ("r/s", "w/s", "rkB/s", "wkB/s"):
        a, b = mean([d[key] for d in ours_disk]), mean([d[key] for d in theirs_disk])
        assert close(a, b, 0.02, 0.5), f"{key}: iosched {a:.2f} vs iostat {b:.2f}"
    for key in ("r_await", "w_await"):
        a, b = mean([d[key] for d in ours_disk]), mean([d[key] for d in theirs_disk])
        assert close(a, b, 0.05, 0.05), f"{key}: iosched {a:.3f} vs iostat {b:.3f}"

    ours_cpu = [line["cpu"]["all"] for line in our_lines]
    theirs_cpu = [next(c for c in s["cpu-load"] if c["cpu"] == "all") for s in mp_stats]
    for key in ("usr", "nice", "sys", "iowait", "irq", "soft", "steal", "idle"):
        a, b = mean([c[key] for c in ours_cpu]), mean([c[key] for c in theirs_cpu])
        assert abs(a - b) <= 1.5, f"cpu {key}: iosched {a:.2f} vs mpstat {b:.2f}"

    job = json.loads(fio_out[fio_out.index("{"):])["jobs"][0]
    d_before, d_after = before.disks[dev], after.disks[dev]
    for fio_key, field in (("read", "reads"), ("write", "writes")):
        fio_ios = job[fio_key]["total_ios"]
        disk_ios = getattr(d_after, field) - getattr(d_before, field)
        assert close(disk_ios, fio_ios, 0.02, 2), f"{fio_key}: diskstats {disk_ios} vs fio {fio_ios}"
