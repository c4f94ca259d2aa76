#!/usr/bin/env python3
"""Memory of the rate history at a full window: idle devices, busy ones, and the CPU series.

The history keeps 1200 points per series whatever the interval. Measured with tracemalloc (Python objects
only, deterministic): idle devices repeat one record, busy ones store a row per point.
Usage: python3 bench/history_memory.py [--devices 40] [--points 1200]
"""

from __future__ import annotations

import argparse
import random
import tracemalloc

from iosched.core.live.rates import CpuRates, DiskRates
from iosched.core.live.sampler import History, Rates


def fill(devices: int, points: int, busy: int, cpus: int) -> float:
    rng = random.Random(1)
    idle = DiskRates(*([0.0] * 22), in_flight=0)
    tracemalloc.start()
    h = History(points)
    for t in range(points + 10):
        disks = {f"d{i}": DiskRates(*(rng.random() for _ in range(22)), in_flight=rng.randint(0, 32)) if i < busy
                 else idle for i in range(devices)}
        cpu = {name: CpuRates(*(rng.random() for _ in range(10))) for name in ["all", *map(str, range(cpus))]}
        h.append(Rates(time=float(t), interval=1.0, disks=disks, cpus=cpu))
    used = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return used / 1e6


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--devices", type=int, default=40)
    p.add_argument("--points", type=int, default=1200)
    args = p.parse_args()
    print(f"{args.devices} devices, {args.points} points per series (a full window), 2 CPUs")
    for busy in (0, 1, args.devices):
        print(f"  {busy:3d} busy: {fill(args.devices, args.points, busy, 2):6.1f} MB")
    print(f"  {args.devices:3d} busy, 64 CPUs: {fill(args.devices, args.points, args.devices, 64):6.1f} MB")


if __name__ == "__main__":
    main()
