"""Power of the verdict for a 30% effect, by seeded simulation through the same pure functions.

Two variants, IOPS log-normal with the given run-to-run CV, the variant 30% lower (ratio 0.7). For
fixed-n batch experiments: the share of experiments whose verdict calls the difference significant, and
the exact planning figure (noncentral t) beside it. For `--until-verdict` (at most 12 runs per variant):
the share that stop with a verdict and the mean runs per variant spent. Live alternation: per block of
turns, at a turn-to-turn CV.

Run: python3 -m bench.verdict_power [--sims 2000]
"""

from __future__ import annotations

import argparse
import math
import random

from bench.sim_docs import compare, run
from iosched.core.documents.document import AlternationDoc, CompareDoc
from iosched.core.experiment.variants import alternation_order, plan_order
from iosched.core.statistics.stats import t_test_power
from iosched.core.statistics.verdict import RunningVerdict, judge, sequential_plan

RATIO = 0.7


def batch_doc(rng: random.Random, n: int, cv: float) -> CompareDoc | AlternationDoc:
    runs = [run(i, "ab"[a], {"iops": 1000 * math.exp(rng.gauss(0, cv)) * (RATIO if a else 1)})
            for i, a in enumerate(plan_order(2, n))]
    return compare(["a", "b"], runs, n)


def fixed(rng: random.Random, n: int, cv: float, sims: int) -> float:
    return sum(judge(batch_doc(rng, n, cv), planning=False).comparisons[0].significant
               for _ in range(sims)) / sims


def sequential(rng: random.Random, cv: float, sims: int, alternate: bool, most: int) -> tuple[float, float]:
    plan = sequential_plan(most, 0.05, 2, alternate)
    stopped, spent = 0, 0.0
    order = alternation_order(2, 2 * most) if alternate else plan_order(2, most)
    for _ in range(sims):
        rv = RunningVerdict(["a", "b"], 0.05, "iops", "alternate" if alternate else "compare", plan)
        n_runs = len(order)
        for i, a in enumerate(order):
            x = 1000 * math.exp(rng.gauss(0, cv)) * (RATIO if a else 1)
            if rv.should_stop(run(i, "ab"[a], {"iops": x})):
                n_runs = i + 1
                break
        stopped += rv.decided
        spent += n_runs / 2
    return stopped / sims, spent / sims


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sims", type=int, default=2000)
    args = ap.parse_args()
    rng = random.Random(30)
    print(f"power to call a 30% difference (ratio {RATIO}) significant at alpha 0.05, {args.sims} simulations")
    for cv in (0.10, 0.20):
        sd = math.sqrt(math.log(1 + cv * cv))
        print(f"\nrun-to-run CV {cv:.0%}:")
        for n in (2, 3, 4, 6, 10):
            print(f"  fixed-n, {n:>2} runs per variant: {fixed(rng, n, cv, args.sims):6.1%} "
                  f"(planning figure, equal variances: {t_test_power(n, sd, RATIO):6.1%})")
        p, spent = sequential(rng, cv, args.sims, False, 12)
        print(f"  --until-verdict, at most 12 runs per variant: {p:6.1%}, {spent:.1f} runs per variant on average")
        p, spent = sequential(rng, cv, args.sims, True, 6)
        print(f"  live alternation --until-verdict, at most 6 blocks, turn CV {cv:.0%}: {p:6.1%}, "
              f"{spent / 2:.1f} blocks on average")


if __name__ == "__main__":
    main()
