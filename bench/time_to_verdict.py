"""Time to a significant verdict for a known difference: batch A/B runs against live alternation.

On a loop device over a sparse, never-written file, random 4k reads are CPU-bound, so bfq's per-IO cost
shows as ~30-40% fewer IOPS than none. Both methods run on the same device, one after the other; after
every run (batch) or turn (alternation) Welch's test is re-run on what has been seen so far, and the
wall time at which p first falls below 0.05 and 0.01 is printed.

Run as root: python3 bench/time_to_verdict.py [--runtime 2] [--repeat 6] [--every 3] [--duration 60]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench.common import extra_loop_devices
from iosched.core.experiment import Event, Workload, parse_variants, run_alternation, run_experiment
from iosched.core.jobs import CATALOG
from iosched.core.stats import welch
from iosched.core.targets import Target


class Tracker:
    def __init__(self, label: str) -> None:
        self.label = label
        self.t0 = time.monotonic()
        self.values: dict[str, list[float]] = {"none": [], "bfq": []}
        self.hits: dict[float, float] = {}

    def __call__(self, e: Event) -> None:
        if e.kind != "run-end" or e.run is None:
            return
        self.values[e.run["variant"]].append(e.run["metrics"]["iops"])
        w = welch(self.values["none"], self.values["bfq"])
        if w is None:
            return
        now = time.monotonic() - self.t0
        for alpha in (0.05, 0.01):
            if w.p_value < alpha and alpha not in self.hits:
                self.hits[alpha] = now
        a, b = self.values["none"], self.values["bfq"]
        diff = (sum(b) / len(b) - sum(a) / len(a)) / (sum(a) / len(a)) * 100
        print(f"  {self.label:<11} {now:6.1f}s  n={len(a)}+{len(b)}  diff {diff:+5.1f}%  p={w.p_value:.4f}",
              flush=True)

    def summary(self) -> str:
        def at(alpha: float) -> str:
            return f"{self.hits[alpha]:.1f} s" if alpha in self.hits else "not reached"

        return f"{self.label:<11} p<0.05 after {at(0.05):>11}, p<0.01 after {at(0.01):>11}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=6)
    ap.add_argument("--every", type=float, default=3.0)
    ap.add_argument("--duration", type=float, default=60.0)
    args = ap.parse_args()
    variants = parse_variants("none,bfq")
    with extra_loop_devices(1, "1G", direct=True) as (path,):
        dev = Path(path).name
        print(f"device {dev}; job randread-q16t2; batch {args.repeat} x {args.runtime:g} s per scheduler, "
              f"settle 0.5 s; alternation every {args.every:g} s for {args.duration:g} s")
        batch = Tracker("batch")
        job = CATALOG["randread-q16t2"].scaled(runtime=args.runtime)
        run_experiment(dev, variants, Workload(job=job, target=Target(dev, path, "device")), args.repeat,
                       settle=0.5, on_event=batch)
        alt = Tracker("alternation")
        job = CATALOG["randread-q16t2"].scaled(runtime=args.duration + 10)
        run_alternation(dev, variants, Workload(job=job, target=Target(dev, path, "device")), args.every,
                        args.duration, on_event=alt)
    print()
    print(batch.summary())
    print(alt.summary())


if __name__ == "__main__":
    main()
