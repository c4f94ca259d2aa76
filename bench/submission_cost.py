"""Where a scheduler's CPU goes: each run's CPU per IO split into the submitting task (fio's job threads, user + sys,
from fio's own accounting) and the kernel's workers (kblockd's and the loop device's own kworkers, from their
/proc stat over the run's window: core/load/submission.py), per scheduler, at queue depth 1 and at saturation.

    sudo .venv/bin/python bench/submission_cost.py [--schedulers none,mq-deadline,kyber,bfq] [--repeat 3]
                                                   [--runtime 5]

One `iosched compare` matrix on a loop device over a file in /dev/shm (so the device costs little and the CPU per IO
is mostly the block layer's and the scheduler's), written whole first (a read of a sparse file's hole costs nothing
like a read of data): rnd4k-q1t1-read (4 KiB random reads, one at a time) and randread-q16t2 (2 jobs x depth 16: the
CPUs saturated). Prints the command, the load average before it, and one row per job and scheduler: IOPS, the
sampler's CPU per IO (every CPU's busy time, interrupts and other loads included), the task's and the workers'.
docs/make_submission_example.py puts the same into docs/performance.md. The loop device is removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from common import extra_loop_devices  # noqa: E402

JOBS = (("rnd4k-q1t1-read", "QD1"), ("randread-q16t2", "saturation"))
FIGURES = ("iops", "cpu_us_per_io", "cpu_us_per_io_task", "cpu_us_per_io_workers")


def means(doc: dict) -> dict[tuple[str, str], dict[str, float]]:
    """Each (job, scheduler)'s mean of every figure over its valid runs."""
    sums: dict[tuple[str, str], dict[str, list[float]]] = {}
    for r in doc["runs"]:
        if not r["valid"]:
            continue
        cell = sums.setdefault((r["workload"], r["variant"]), {})
        for k in FIGURES:
            if r["metrics"].get(k) is not None:
                cell.setdefault(k, []).append(float(r["metrics"][k]))
    return {key: {k: sum(v) / len(v) for k, v in figs.items()} for key, figs in sums.items()}


def table(doc: dict, schedulers: list[str]) -> list[str]:
    """One row per job and scheduler, columns aligned (the page shows it as the script printed it)."""
    got = means(doc)
    rows = [("load", "scheduler", "IOPS", "CPU µs/IO", "task µs/IO", "workers µs/IO")]
    for job, words in JOBS:
        base = got.get((job, schedulers[0]), {}).get("iops")
        for s in schedulers:
            m = got.get((job, s), {})
            iops = m.get("iops")
            vs = f" ({(iops / base - 1) * 100:+.0f}%)" if iops and base and s != schedulers[0] else ""
            rows.append((f"{words}" if s == schedulers[0] else "", s, f"{iops / 1000:.1f}k{vs}" if iops else "-",
                         *(f"{m[k]:.2f}" if k in m else "-" for k in FIGURES[1:])))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows]


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--schedulers", default="none,mq-deadline,kyber,bfq")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--runtime", type=float, default=5.0)
    return ap.parse_args(argv)


def run(args: argparse.Namespace) -> str:
    """The matrix run on a fresh loop device; its command, conditions and table as text."""
    schedulers = args.schedulers.split(",")
    with extra_loop_devices(1, "1G", under="/dev/shm") as (dev,), tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["dd", "if=/dev/urandom", f"of={dev}", "bs=1M", "count=1024", "oflag=direct"], check=True,
                       capture_output=True)
        name = Path(dev).name
        saved = Path(tmp) / "cost.json"
        cmd = ["iosched", "compare", name, "--schedulers", args.schedulers, "--jobs", ",".join(j for j, _ in JOBS),
               "--runtime", f"{args.runtime:g}", "--size", "1G", "--repeat", str(args.repeat), "--save", str(saved)]
        load = os.getloadavg()[0]
        t0 = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "iosched.cli", *cmd[1:]], capture_output=True, text=True)
        took = time.monotonic() - t0
        if out.returncode != 0:
            raise SystemExit(f"the compare failed: {out.stderr.strip()[-2000:]}")
        doc = json.loads(saved.read_text())
    shown = " ".join(cmd).replace(name, "LOOP").replace(str(saved), "cost.json")
    cpu = (doc.get("conditions") or {}).get("cpu_model") or "an unnamed CPU"
    return "\n".join([
        f"$ sudo {shown}",
        f"(a 1 GiB loop device over /dev/shm, written whole first; {cpu}, kernel {doc['kernel']}, "
        f"{os.cpu_count()} CPUs; load average {load:.2f} before it; took {took / 60:.0f} min)",
        "QD1: rnd4k-q1t1-read, 4 KiB random reads one at a time; saturation: randread-q16t2, 2 jobs x depth 16.",
        "CPU µs/IO: every CPU's busy time per IO (the sampler's); task: fio's threads, user + sys; workers: all the",
        "kernel's kblockd (every disk's) and loop kworkers on the machine. Means of the valid runs.", "",
        *table(doc, schedulers)])


def main() -> int:
    print(run(parse()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
