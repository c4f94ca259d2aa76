"""What block-layer tracing costs: IOPS and CPU with the tracer on vs off, in one run, at a high IO rate.

A loop device over a file in /dev/shm (page cache on tmpfs: no disk in the way) takes 4k random reads from fio
(io_uring, 2 threads, depth 32). Turns alternate off, on, on, off, ... so drift hits both sides alike. For each
turn: fio's IOPS, the machine's busy CPU (/proc/stat, all CPUs, in CPUs) and bpftrace's own CPU. Most of the
tracer's cost is its BPF programs, which run in the IO path and show up as CPU per IO, not as bpftrace's CPU.

    sudo .venv/bin/python bench/tracer_cost.py [--turns 8] [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from iosched.core.kernel.procfs import read_proc_stat
from iosched.core.trace.tracer import Tracer

BUSY = ("user", "nice", "system", "irq", "softirq", "steal")


def busy_and_total() -> tuple[int, int]:
    c = read_proc_stat()["all"]
    busy = sum(getattr(c, k) for k in BUSY)
    return busy, busy + c.idle + c.iowait


def cpu_seconds(pid: int | None) -> float:
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def turn(dev: str, seconds: float, traced: bool) -> dict:
    tracer = None
    if traced:
        tracer = Tracer(interval=1.0, devices=[os.path.basename(dev)])
        tracer.start()
        tracer.wait_ready()
    try:
        b0, t0 = busy_and_total()
        c0 = cpu_seconds(tracer.pid if tracer else None)
        out = subprocess.run(["fio", "--name=bench", f"--filename={dev}", "--rw=randread", "--bs=4k", "--direct=1",
                              "--ioengine=io_uring", "--iodepth=32", "--numjobs=2", "--thread", "--group_reporting",
                              "--time_based", f"--runtime={seconds:g}", "--output-format=json"],
                             check=True, capture_output=True, text=True).stdout
        b1, t1 = busy_and_total()
        c1 = cpu_seconds(tracer.pid if tracer else None)
    finally:
        if tracer is not None:
            tracer.stop()
    job = json.loads(out)["jobs"][0]
    ncpu = os.cpu_count() or 1
    busy_cpus = (b1 - b0) / max(t1 - t0, 1) * ncpu
    iops = job["read"]["iops"]
    return {"traced": traced, "iops": iops, "busy_cpus": busy_cpus, "bpftrace_cpu": (c1 - c0) / seconds,
            "cpu_us_per_io": busy_cpus / iops * 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    with tempfile.NamedTemporaryFile(dir="/dev/shm", prefix="iosched-bench-") as f:
        os.truncate(f.name, 512 << 20)
        dev = subprocess.run(["losetup", "-f", "--show", f.name], check=True, capture_output=True,
                             text=True).stdout.strip()
        try:
            order = [(i % 4) in (1, 2) for i in range(args.turns)]  # off on on off ...
            results = [turn(dev, args.seconds, traced) for traced in order]
        finally:
            subprocess.run(["losetup", "-d", dev], capture_output=True)
    for label, traced in (("off", False), ("on", True)):
        rs = [r for r in results if r["traced"] == traced]
        print(f"tracing {label:>3}: IOPS {statistics.mean(r['iops'] for r in rs):9.0f}"
              f" (sd {statistics.stdev(r['iops'] for r in rs) if len(rs) > 1 else 0:7.0f}),"
              f" busy CPUs {statistics.mean(r['busy_cpus'] for r in rs):.2f},"
              f" CPU per IO {statistics.mean(r['cpu_us_per_io'] for r in rs):.2f} µs,"
              f" bpftrace {statistics.mean(r['bpftrace_cpu'] for r in rs) * 100:.1f}% of a CPU")
    off = statistics.mean(r["iops"] for r in results if not r["traced"])
    on = statistics.mean(r["iops"] for r in results if r["traced"])
    off_c = statistics.mean(r["cpu_us_per_io"] for r in results if not r["traced"])
    on_c = statistics.mean(r["cpu_us_per_io"] for r in results if r["traced"])
    print(f"IOPS lost with tracing: {(1 - on / off) * 100:.1f}%; CPU per IO +{on_c - off_c:.2f} µs "
          f"({(on_c / off_c - 1) * 100:.0f}%)")


if __name__ == "__main__":
    main()
