"""`advise`'s decision rule on simulated tests: how often it recommends a change when no candidate is better (must
stay at or below alpha) and how often it finds a candidate 20% better, within a budget of runs.

Seeded simulation through the rule's own code (core/statistics/advice_simulation.py): the current setting and
``--candidates`` candidates, log-normal runs at each noise, looked at on the sequential schedule with clearly worse
candidates dropped at the looks, judged at the last look, decided by core/statistics/advice_rule.py. The budget is
the runs of the whole test (variants x runs per variant); "runs used" counts what the drops saved. The last two
columns decide by the interval alone, without the rule's second condition (the estimate at least the smallest effect
the experiment could see): what that condition costs in power and buys in false changes. Then the early drop's
savings when the other candidates are 30% worse, and step 1: a candidate 20% better on throughput but 30% worse on
latency is left out for throughput when another is 15% better and no worse.

    .venv/bin/python bench/advise_rule.py [--sims 2000] [--candidates 3] [--noise 0.05,0.1,0.2] [--runs 6,12,24]
"""

from __future__ import annotations

import argparse
import random
import time

from iosched.core.statistics.advice_rule import Rule
from iosched.core.statistics.advice_simulation import SimulatedGoal, simulate_advice


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=2000)
    ap.add_argument("--candidates", type=int, default=3)
    ap.add_argument("--noise", default="0.05,0.1,0.2", help="run-to-run noise, log scale")
    ap.add_argument("--runs", default="6,12,24", help="runs per variant at most")
    ap.add_argument("--effect", type=float, default=1.2)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=40)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    names = [f"c{i + 1}" for i in range(args.candidates)]
    null = [SimulatedGoal("throughput", "iops", dict.fromkeys(names, 1.0))]
    better = [SimulatedGoal("throughput", "iops", {**dict.fromkeys(names, 1.0), names[-1]: args.effect})]
    rule, interval_only = Rule(alpha=args.alpha), Rule(alpha=args.alpha, at_least_mde=False)
    arms = args.candidates + 1
    t0 = time.monotonic()
    print(f"{args.candidates} candidates beside the current setting, IOPS, alpha {args.alpha:g}, "
          f"{args.sims} simulations a cell (seed {args.seed})")
    print(f"{'noise':>5}  {'runs/variant':>12}  {'budget':>6}  {'change, none better':>19}  "
          f"{'finds ' + format(args.effect - 1, '.0%') + ' better':>17}  {'runs used':>9}  "
          f"{'interval alone: change':>22}  {'finds':>6}")
    for noise in (float(x) for x in args.noise.split(",")):
        for runs in (int(x) for x in args.runs.split(",")):
            wrong = sum(not simulate_advice(rng, null, noise, runs, args.alpha, rule).advice.goals[0].keep
                        for _ in range(args.sims))
            found = used = 0
            for _ in range(args.sims):
                sim = simulate_advice(rng, better, noise, runs, args.alpha, rule)
                found += sim.advice.goals[0].recommended == names[-1]
                used += sim.runs
            wrong_alone = sum(not simulate_advice(rng, null, noise, runs, args.alpha, interval_only).advice
                              .goals[0].keep for _ in range(args.sims))
            alone = sum(simulate_advice(rng, better, noise, runs, args.alpha, interval_only).advice.goals[0]
                        .recommended == names[-1] for _ in range(args.sims))
            print(f"{noise:>5.0%}  {runs:>12}  {runs * arms:>6}  {wrong / args.sims:>19.1%}  "
                  f"{found / args.sims:>17.1%}  {used / args.sims:>9.1f}  {wrong_alone / args.sims:>22.1%}  "
                  f"{alone / args.sims:>6.1%}")
    # The early drop: candidates 30% worse leave at a look; what they save, and whether the better one is found.
    worse = [SimulatedGoal("throughput", "iops", {**dict.fromkeys(names[:-1], 0.7), names[-1]: args.effect})]
    runs, sims = 24, args.sims // 4
    used = found = 0
    for _ in range(sims):
        sim = simulate_advice(rng, worse, 0.1, runs, args.alpha, rule)
        used += sim.runs
        found += sim.advice.goals[0].recommended == names[-1]
    print(f"the others 30% worse (noise 10%, {runs} runs a variant, budget {runs * arms}): {used / sims:.1f} runs "
          f"used, the {args.effect - 1:.0%} better one found in {found / sims:.1%}")
    # Step 1: the best on throughput is shown worse on latency by more than the margin.
    trade = [SimulatedGoal("throughput", "iops", {"fast": 1.2, "balanced": 1.15}),
             SimulatedGoal("latency", "clat_p99_us", {"fast": 1.3, "balanced": 1.0})]
    picks: dict[str | None, int] = {}
    for _ in range(args.sims // 4):
        sim = simulate_advice(rng, trade, 0.05, 12, args.alpha, rule)
        pick = sim.advice.goals[0].recommended
        picks[pick] = picks.get(pick, 0) + 1
    shares = ", ".join(f"{k or 'keep'} {v / (args.sims // 4):.0%}" for k, v in sorted(picks.items(), key=str))
    print(f"throughput when the fastest is 30% worse on p99 latency (noise 5%, 12 runs): {shares}")
    print(f"({time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
