"""Runs that disagree: the detector's false-alarm rate on unimodal runs and its detection rate on two groups.

Seeded simulation through core/statistics/run_groups.py ``split_runs``. False alarms: n = 3..20 log-normal runs
of one variant at several run-to-run CVs, the share that the detector calls an outlier or two groups. Detection:
runs in two groups (sizes and separations like the bfq runs of the issue: 2 of 3 at 0.19-0.24 ms with one at
2.4 ms; 2 of 6 at 0.06-0.1 ms with 4 at 4.7-5 ms), each group log-normal at a CV, the share called disagreeing.

``--table`` instead recomputes the module's critical values (numpy, a test dependency: many large simulations)
and prints them as the module holds them.

    .venv/bin/python bench/run_groups.py [--sims 20000] [--detect-cv 0.1 0.2 0.3] [--table]
"""

from __future__ import annotations

import argparse
import math
import random
import time

from iosched.core.statistics import run_groups as rg

CVS = (0.05, 0.10, 0.20, 0.30, 0.50)
SEPARATIONS = (2.0, 3.0, 5.0, 10.0, 50.0)
FAR = (60, 80, 100, 150, 200, 300, 500, 1000)


def sd_log(cv: float) -> float:
    """The log-scale spread of log-normal runs whose coefficient of variation is ``cv``."""
    return math.sqrt(math.log1p(cv * cv))


def fires(values: list[float]) -> bool:
    return isinstance(rg.split_runs(values), rg.Outlier | rg.TwoGroups)


def false_alarms(rng: random.Random, n: int, cv: float, sims: int) -> float:
    s = sd_log(cv)
    return sum(fires([math.exp(rng.gauss(0.0, s)) for _ in range(n)]) for _ in range(sims)) / sims


def detections(rng: random.Random, n: int, few: int, apart: float, cv: float, sims: int) -> float:
    """``few`` of ``n`` runs ``apart`` times below the others (group centres), each group at ``cv``."""
    s, shift = sd_log(cv), math.log(apart)
    hits = 0
    for _ in range(sims):
        hits += fires([math.exp(rng.gauss(-shift if i < few else 0.0, s)) for i in range(n)])
    return hits / sims


def table(sims: int) -> None:
    """The critical values: T's null quantile per n (numpy), printed as the module's constants."""
    import numpy as np

    rng = np.random.default_rng(39)

    def largest_t(x: np.ndarray, floor: float | None) -> np.ndarray:
        n = x.shape[1]
        x = np.sort(x, axis=1)
        x = x - x.mean(axis=1, keepdims=True)
        c1, c2 = np.cumsum(x, axis=1)[:, :-1], np.cumsum(x * x, axis=1)[:, :-1]
        k = np.arange(1, n)
        t1, t2 = c1[:, -1:] + x[:, -1:], c2[:, -1:] + x[:, -1:] ** 2
        within = np.maximum(c2 - c1 * c1 / k, 0) + np.maximum((t2 - c2) - (t1 - c1) ** 2 / (n - k), 0)
        gap = np.diff(x, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(within > 0, gap / np.sqrt(within / (n - 2)), np.inf)
        if floor is not None:
            t = np.where(gap >= floor, t, 0.0)
        out: np.ndarray = t.max(axis=1)
        return out

    def quantile(n: int, count: int, scale: float, floor: float | None, level: float) -> float:
        chunk = max(1, 4_000_000 // n)
        parts = [largest_t(rng.normal(0.0, scale, (min(chunk, count - i), n)), floor)
                 for i in range(0, count, chunk)]
        return float(np.quantile(np.concatenate(parts), level))

    t0 = time.monotonic()
    # n = 3: the floor at CALIBRATION_CV, 4.5% (a margin for this simulation's own error below 5%).
    first = quantile(3, 10 * sims, sd_log(rg.CALIBRATION_CV), math.log(rg.MIN_RATIO), 0.955)
    rows = [(3, first)] + [(n, quantile(n, sims, 1.0, None, 1.0 - rg.ALPHA)) for n in range(4, 51)]
    far = [(n, quantile(n, sims // 4, 1.0, None, 1.0 - rg.ALPHA)) for n in FAR]
    print(f"# {sims} simulations per n ({10 * sims} at n = 3, {sims // 4} beyond 50), "
          f"{time.monotonic() - t0:.0f} s")
    print("_CRITICAL: dict[int, float] = {")
    for i in range(0, len(rows), 6):
        print("    " + " ".join(f"{n}: {v:.4g}," for n, v in rows[i:i + 6]))
    print("}")
    print("_CRITICAL_FAR: tuple[tuple[int, float], ...] = (")
    print("    " + " ".join(f"({n}, {v:.4g})," for n, v in far))
    print(")")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=20000, help="simulations per cell (--table: per n, x20)")
    ap.add_argument("--detect-cv", type=float, nargs="+", default=[0.2], help="noise within each group")
    ap.add_argument("--table", action="store_true", help="recompute the critical values instead (numpy)")
    args = ap.parse_args()
    if args.table:
        table(20 * args.sims)
        return
    rng = random.Random(39)
    t0 = time.monotonic()
    print(f"false alarms: unimodal log-normal runs called an outlier or two groups ({args.sims} per cell)")
    print("   n  " + "".join(f"  CV {cv:>3.0%}" for cv in CVS))
    worst = 0.0
    for n in range(3, 21):
        rates = [false_alarms(rng, n, cv, args.sims) for cv in CVS]
        worst = max(worst, *(r for r, cv in zip(rates, CVS) if cv <= 0.3))
        print(f"  {n:2d}  " + "".join(f"  {r:7.1%}" for r in rates))
    print(f"  highest at CV 5-30%: {worst:.1%}")
    few_sims = max(1, args.sims // 4)
    for cv in args.detect_cv:
        print(f"\ndetection at CV {cv:.0%} within each group: the smaller group below the other by the ratio of "
              f"their centres ({few_sims} per cell)")
        print("  groups " + "".join(f"  {a:>5g}x" for a in SEPARATIONS))
        for n, few in ((3, 1), (4, 2), (5, 2), (6, 2), (6, 3), (10, 3), (16, 5), (20, 7), (20, 1)):
            rates = [detections(rng, n, few, a, cv, few_sims) for a in SEPARATIONS]
            print(f"  {few:2d} | {n - few:<2d}" + "".join(f"  {r:6.1%}" for r in rates))
    print(f"({time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
