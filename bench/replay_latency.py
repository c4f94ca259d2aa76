"""A timed replay's latency: fio's figure, the block layer's and the device's own await, at three queue depths.

A capture of 1,000 4 KiB random reads a second over a few seconds, the depth it recorded running up to DEPTH, is
replayed at its timing (`--replay-mode timed`: fio at iodepth DEPTH) on a loop device over a file in /dev/shm. fio
reaps completions only when its queue fills, so its latency grows with the depth while the device's does not; the
block layer's figure (what a timed replay is judged on, core/load/replay_latency.py) stays with the device's r_await.
Each row is the median over the runs; share is the part of fio's mean that was fio's own waiting.

Run as root: python3 -m bench.replay_latency [--depths 1,10,32] [--seconds 3] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench.common import extra_loop_devices
from iosched.core.documents.params import Variant
from iosched.core.experiment import service
from iosched.core.experiment.compare import ComparePlan
from iosched.core.experiment.local_plan import TargetRequest
from iosched.core.kernel.devices import read_device
from iosched.core.load.iolog import CaptureWriter, write_meta
from iosched.core.load.replay import prepare_replay

RATE = 1000


def capture(path: Path, device: str, depth: int, seconds: float) -> Path:
    doc = read_device(device)
    assert doc is not None
    rnd = random.Random(depth)
    count = int(RATE * seconds)
    with open(path, "w") as out:
        w = CaptureWriter(out, f"/dev/{device}", 0)
        for i in range(count):
            w.add(100_000_000 + i * 1_000_000_000 // RATE, 0, rnd.randrange(doc.size_bytes // 4096) * 8, 4096,
                  1 + i % depth)
        end_us = w.finish(int((0.2 + seconds) * 1e9))
    write_meta(w.meta(iolog=path.name, device=doc, kernel=os.uname().release, started="2026-11-27T00:00:00+00:00",
                      duration_s=end_us / 1e6, ended="duration", timestamps="begin", lost=0, untracked=0), path)
    return path


def fio_p50_us(fio: dict[str, Any] | None) -> float | None:
    """fio's own p50 completion latency of the run, from its JSON (left out of the run's metrics when unusable)."""
    for job in (fio or {}).get("jobs", []):
        pct = job.get("read", {}).get("clat_ns", {}).get("percentile", {})
        if "50.000000" in pct:
            return float(pct["50.000000"]) / 1000
    return None


def median(xs: list[float | None]) -> float:
    got = [x for x in xs if x is not None]
    return statistics.median(got) if got else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--depths", default="1,10,32")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {RATE} reads/s, "
          f"{a.seconds:g} s a run, {a.runs} runs a depth, scheduler none")
    print("| depth | fio mean | fio p50 | block-layer p50 | block-layer mean | device r_await | fio's own share | "
          "fio's figures |")
    print("|---|---|---|---|---|---|---|---|")
    with extra_loop_devices(1, "1G", direct=True, under="/dev/shm") as (path,), \
            tempfile.TemporaryDirectory() as tmp:
        dev = Path(path).name
        disk = read_device(dev)
        assert disk is not None
        for depth in (int(d) for d in a.depths.split(",")):
            log = capture(Path(tmp, f"d{depth}.iolog"), dev, depth, a.seconds)
            job = prepare_replay(log, "timed", dev, disk.size_bytes)
            try:
                plan = ComparePlan(dev, [Variant("none", "none")], job=job, repeat=a.runs, settle=0.5,
                                   target=TargetRequest(raw=True))
                doc = service.run(plan).doc
            finally:
                job.release()
            recs = [r.latency for r in doc.runs if r.latency is not None]
            kept = sum(r.fio_kept for r in recs)
            fio = "kept" if kept == len(recs) else "left out" if not kept else f"kept in {kept} of {len(recs)}"
            print(f"| {depth} | {median([r.fio_mean_us for r in recs]) / 1000:.2f} ms "
                  f"| {median([fio_p50_us(r.fio) for r in doc.runs]) / 1000:.2f} ms "
                  f"| {median([r.metrics.get('total_p50_us') for r in doc.runs]) / 1000:.3f} ms "
                  f"| {median([r.block_mean_us for r in recs]) / 1000:.3f} ms "
                  f"| {median([r.await_us for r in recs]) / 1000:.3f} ms "
                  f"| {median([r.engine_share for r in recs]) * 100:.0f}% "
                  f"| {fio} |")


if __name__ == "__main__":
    main()
