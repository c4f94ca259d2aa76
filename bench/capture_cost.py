"""What `iosched capture` costs, at a high IO rate: IOPS and the machine's CPU per IO with a capture running and
without, the capture's own CPU per request (the loader and iosched's reader, as `capture` states it), and
whether it kept every request (requests captured against fio's IOs, records lost).

A loop device over a file in /dev/shm takes 4k random reads from fio (io_uring, 2 threads, depth 32): the CPUs
saturate in the IO path, so what the capture takes shows as fewer IOPS. Turns alternate off / capture.

    sudo .venv/bin/python bench/capture_cost.py [--rounds 3] [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # first: a kill unwinds through the finally blocks (the loop device is detached)
from tracer_cost import busy_and_total


def fio(dev: str, seconds: float) -> dict:
    out = subprocess.run(["fio", "--name=bench", f"--filename={dev}", "--rw=randread", "--bs=4k", "--direct=1",
                          "--ioengine=io_uring", "--iodepth=32", "--numjobs=2", "--group_reporting", "--time_based",
                          f"--runtime={seconds}", "--output-format=json"], check=True, capture_output=True, text=True)
    job = json.loads(out.stdout)["jobs"][0]
    return {"iops": job["read"]["iops"], "ios": job["read"]["total_ios"]}


def turn(dev: str, seconds: float, capture: bool, where: Path) -> dict:
    proc = None
    if capture:
        out = where / f"c{time.monotonic_ns()}.iolog"
        proc = subprocess.Popen([sys.executable, "-m", "iosched.cli", "capture", os.path.basename(dev), "-o",
                                 str(out), "--duration", "600", "--json"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None and "capturing" in proc.stderr.readline()  # attached
    b0, t0 = busy_and_total()
    try:
        res = fio(dev, seconds)
    finally:
        b1, t1 = busy_and_total()
        if proc is not None:
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
    cpus = os.cpu_count() or 1
    res["busy_us_per_io"] = (b1 - b0) / (t1 - t0) * cpus * seconds * 1e6 / res["ios"]
    if proc is not None:
        stdout, _ = proc.communicate(timeout=120)
        cap = json.loads(stdout)
        res.update(captured=cap["requests"], lost=cap["lost"], capture_us_per_io=cap["cpu_us_per_io"],
                   file_mb=out.stat().st_size / 1e6)
        out.unlink()
        Path(str(out) + ".meta.json").unlink()
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    results: dict[str, list[dict]] = {"off": [], "capture": []}
    with common.extra_loop_devices(1, "1G", direct=True, under="/dev/shm") as (dev,), \
            tempfile.TemporaryDirectory(prefix="iosched-bench-", dir="/dev/shm") as tmp:
        subprocess.run(["dd", "if=/dev/zero", f"of={dev}", "bs=1M", "count=1024", "oflag=direct"], check=True,
                       capture_output=True)
        for r in range(args.rounds):
            for mode in (("off", "capture") if r % 2 == 0 else ("capture", "off")):
                res = turn(dev, args.seconds, mode == "capture", Path(tmp))
                results[mode].append(res)
                print(mode, json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in res.items()}),
                      flush=True)
    off, cap = results["off"], results["capture"]
    iops_off = statistics.median(r["iops"] for r in off)
    iops_cap = statistics.median(r["iops"] for r in cap)
    kept = min(r["captured"] / r["ios"] for r in cap)
    print(f"\nIOPS without capture {iops_off:,.0f}, with {iops_cap:,.0f} ({iops_cap / iops_off - 1:+.1%})")
    print(f"machine CPU per IO: {statistics.median(r['busy_us_per_io'] for r in off):.1f} µs without, "
          f"{statistics.median(r['busy_us_per_io'] for r in cap):.1f} µs with")
    print(f"capture's own CPU per request (loader + reader): "
          f"{statistics.median(r['capture_us_per_io'] for r in cap):.1f} µs")
    print(f"requests captured / fio's IOs: at least {kept:.4f}; records lost: {sum(r['lost'] for r in cap)}; "
          f"iolog {statistics.median(r['file_mb'] / r['captured'] * 1e6 for r in cap):.0f} bytes per request")
    return 0


if __name__ == "__main__":
    sys.exit(main())
