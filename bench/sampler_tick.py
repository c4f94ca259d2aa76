#!/usr/bin/env python3
"""Cost of one sampler tick (all disks + CPUs + rates) and of `iosched watch` next to iostat.

Figures, not assertions. Needs root (it attaches extra loop devices, always detached afterwards).
Usage: python3 bench/sampler_tick.py [--ticks 10000] [--watch-seconds 60]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
from common import extra_loop_devices, measure_process, summary_us

from iosched.core.live.sampler import Sampler, compute_rates


def time_ticks(ticks: int, cold: bool) -> list[float]:
    """Seconds per tick. ``cold`` empties the line cache each tick: every device changed (worst case)."""
    sampler = Sampler()
    prev = sampler.take()
    out = []
    for _ in range(ticks):
        if cold:
            sampler._line_cache = {}
        t0 = time.perf_counter()
        cur = sampler.take()
        compute_rates(prev, cur)
        out.append(time.perf_counter() - t0)
        prev = cur
    return out


def time_psutil(ticks: int) -> list[float]:
    out = []
    for _ in range(ticks):
        t0 = time.perf_counter()
        psutil.disk_io_counters(perdisk=True)
        out.append(time.perf_counter() - t0)
    return out


def time_raw_read(ticks: int) -> list[float]:
    out = []
    for _ in range(ticks):
        t0 = time.perf_counter()
        with open("/proc/diskstats", "rb") as f:
            f.read()
        out.append(time.perf_counter() - t0)
    return out


def report(label: str, ticks: int) -> None:
    n = len(Path("/proc/diskstats").read_text().splitlines())
    print(f"\n{label}: {n} lines in /proc/diskstats, {os.cpu_count()} CPUs, {ticks} ticks")
    print(f"  raw read of /proc/diskstats    {summary_us(time_raw_read(ticks))}")
    print(f"  iosched tick, idle devices     {summary_us(time_ticks(ticks, cold=False))}")
    print(f"  iosched tick, every line new   {summary_us(time_ticks(ticks, cold=True))}")
    print(f"  psutil.disk_io_counters        {summary_us(time_psutil(ticks))}")


def watch_vs_iostat(seconds: float) -> None:
    print(f"\nCPU of one core over {seconds:.0f} s at a 1 s interval:")
    for label, cmd in (("iosched watch -i 1", [sys.executable, "-m", "iosched.cli", "watch", "-i", "1"]),
                       ("iostat -x 1", ["iostat", "-x", "1"])):
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                cwd=Path(__file__).resolve().parent.parent)
        time.sleep(1.5)  # past start-up
        cpu, rss = measure_process(proc.pid, seconds)
        proc.terminate()
        proc.wait()
        print(f"  {label:<20} {cpu:5.2f}% of a core   RSS {rss:5.1f} MB")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ticks", type=int, default=10000)
    p.add_argument("--watch-seconds", type=float, default=60)
    args = p.parse_args()
    report("this machine", args.ticks)
    for extra in (40, 64):
        with extra_loop_devices(extra):
            report(f"with {extra} extra loop devices", args.ticks)
    watch_vs_iostat(args.watch_seconds)


if __name__ == "__main__":
    main()
