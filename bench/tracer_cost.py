"""What block-layer tracing costs: IOPS and CPU per IO with each tracer and without, in one run, at a high IO rate.

A loop device over a file in /dev/shm (page cache on tmpfs: no disk in the way) takes 4k random reads from fio
(io_uring, 2 threads, depth 32): both CPUs of a small VM saturate in the IO path, so every ns a tracer adds per IO
shows as fewer IOPS. Modes, in rounds whose order turns (so drift hits every mode alike):

- off: no tracing;
- libbpf: iosched's CO-RE tracer, as iosched runs it (the kernel times its programs, for its cost per IO);
- libbpf-nostats: the same loader with the kernel's program timing off (what that timing costs);
- bpftrace: iosched's bpftrace fallback;
- biolatency: libbpf-tools' ``biolatency -Q -D 1`` (Debian's libbpf-tools), the field's reference.

For each turn: fio's IOPS, the machine's busy CPU (/proc/stat, all CPUs) per IO, and for the CO-RE tracer the
cost it measures itself (µs per IO, from the kernel's run time of its programs).

    sudo .venv/bin/python bench/tracer_cost.py [--rounds 4] [--seconds 5] [--modes off,libbpf,...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: F401  (a kill unwinds through the finally blocks: the loop device is detached)

from iosched.core.kernel.procfs import read_proc_stat
from iosched.core.load.fio import dies_with_us
from iosched.core.trace.parse import TraceSample
from iosched.core.trace.program import check_program, loader_argv
from iosched.core.trace.tracer import Tracer

BUSY = ("user", "nice", "system", "irq", "softirq", "steal")
MODES = ("off", "libbpf", "libbpf-nostats", "bpftrace", "biolatency")


def busy_and_total() -> tuple[int, int]:
    c = read_proc_stat()["all"]
    busy = sum(getattr(c, k) for k in BUSY)
    return busy, busy + c.idle + c.iowait


def kernel_dev(dev: str) -> int:
    major, minor = Path(f"/sys/block/{os.path.basename(dev)}/dev").read_text().split(":")
    return (int(major) << 20) | int(minor)


class Running:
    """One tracer mode, started and stopped around a turn; ``costs``: what the CO-RE tracer measured."""

    def __init__(self, mode: str, dev: str) -> None:
        self.mode, self.dev = mode, dev
        self.tracer: Tracer | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.costs: list[float] = []

    def __enter__(self) -> Running:
        if self.mode in ("libbpf", "bpftrace"):
            self.tracer = Tracer(interval=1.0, devices=[os.path.basename(self.dev)], use=self.mode,
                                 on_event=self._event)
            self.tracer.start()
            self.tracer.wait_ready()
        elif self.mode == "libbpf-nostats":
            argv = [*loader_argv(check_program(), 1.0, [kernel_dev(self.dev)]), "--no-stats"]
            self.proc = subprocess.Popen(dies_with_us(argv), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            assert self.proc.stdout is not None and self.proc.stdout.readline()  # the ready record
        elif self.mode == "biolatency":
            self.proc = subprocess.Popen(dies_with_us([biolatency(), "-Q", "-D", "1"]), stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
            time.sleep(2.0)  # it prints nothing when attached: give it time to load
        return self

    def _event(self, ev: object) -> None:
        if isinstance(ev, TraceSample) and ev.cost_us_per_io is not None and os.path.basename(self.dev) in ev.devices:
            self.costs.append(ev.cost_us_per_io)

    def __exit__(self, *exc: object) -> None:
        if self.tracer is not None:
            self.tracer.stop()
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def biolatency() -> str:
    path = shutil.which("biolatency")
    if path is None:
        raise SystemExit("biolatency is missing: apt-get install -y libbpf-tools")
    return path


def turn(dev: str, seconds: float, mode: str) -> dict:
    with Running(mode, dev) as running:
        b0, t0 = busy_and_total()
        out = subprocess.run(["fio", "--name=bench", f"--filename={dev}", "--rw=randread", "--bs=4k", "--direct=1",
                              "--ioengine=io_uring", "--iodepth=32", "--numjobs=2", "--thread", "--group_reporting",
                              "--time_based", f"--runtime={seconds:g}", "--output-format=json"],
                             check=True, capture_output=True, text=True).stdout
        b1, t1 = busy_and_total()
    job = json.loads(out)["jobs"][0]
    ncpu = os.cpu_count() or 1
    busy_cpus = (b1 - b0) / max(t1 - t0, 1) * ncpu
    iops = job["read"]["iops"]
    # The first and last intervals are partly idle: the middle ones are the tracer's cost under load.
    costs = running.costs[1:-1] or running.costs
    return {"mode": mode, "iops": iops, "busy_cpus": busy_cpus, "cpu_us_per_io": busy_cpus / iops * 1e6,
            "measured_us_per_io": statistics.median(costs) if costs else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--modes", default=",".join(MODES))
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    if unknown := [m for m in modes if m not in MODES]:
        raise SystemExit(f"unknown modes: {', '.join(unknown)} (known: {', '.join(MODES)})")
    if "libbpf" in modes or "libbpf-nostats" in modes:
        check_program()
    results: list[dict] = []
    with tempfile.NamedTemporaryFile(dir="/dev/shm", prefix="iosched-bench-") as f:
        os.truncate(f.name, 512 << 20)
        dev = subprocess.run(["losetup", "-f", "--show", f.name], check=True, capture_output=True,
                             text=True).stdout.strip()
        try:
            subprocess.run(["fio", "--name=fill", f"--filename={dev}", "--rw=write", "--bs=1M", "--direct=1",
                            "--output-format=terse"], check=True, capture_output=True)
            for r in range(args.rounds):
                order = modes[r % len(modes):] + modes[: r % len(modes)]  # each mode leads a round in turn
                if r % 2:
                    order.reverse()
                for mode in order:
                    results.append(turn(dev, args.seconds, mode))
                    print(f"round {r + 1} {mode:<15} {results[-1]['iops']:9.0f} IOPS", file=sys.stderr, flush=True)
        finally:
            subprocess.run(["losetup", "-d", dev], capture_output=True)
    base = [r for r in results if r["mode"] == "off"]
    off_iops = statistics.mean(r["iops"] for r in base) if base else None
    off_cpu = statistics.mean(r["cpu_us_per_io"] for r in base) if base else None
    print("| | IOPS (sd) | vs off | CPU per IO | added per IO | measured by the tracer |")
    print("|---|---|---|---|---|---|")
    for mode in modes:
        rs = [r for r in results if r["mode"] == mode]
        iops = statistics.mean(r["iops"] for r in rs)
        sd = statistics.stdev(r["iops"] for r in rs) if len(rs) > 1 else 0.0
        cpu = statistics.mean(r["cpu_us_per_io"] for r in rs)
        vs = "—" if off_iops is None or mode == "off" else f"{(iops / off_iops - 1) * 100:+.1f}%"
        added = "—" if off_cpu is None or mode == "off" else f"{cpu - off_cpu:+.2f} µs"
        measured = [r["measured_us_per_io"] for r in rs if r["measured_us_per_io"] is not None]
        own = f"{statistics.mean(measured):.2f} µs" if measured else "—"
        print(f"| {mode} | {iops:,.0f} ({sd:,.0f}) | {vs} | {cpu:.2f} µs | {added} | {own} |")


if __name__ == "__main__":
    main()
