"""`advise`'s decision rule on simulated tests: how often each outcome (switch, keep shown equal, cannot tell) comes
when no candidate is better, when one is 20% better, and when one candidate's runs fall in two groups.

Seeded simulation through the rule's own code (core/statistics/advice_simulation.py): the current setting and
``--candidates`` candidates, log-normal runs at each noise, looked at on the sequential schedule with clearly worse
candidates dropped at the looks, judged at the last look, each variant's runs checked for two groups, decided by
core/statistics/advice_rule.py. A switch when none is better must stay at or below alpha; a keep when one is 20%
better at or below 5%; bimodal runs (half of one candidate's runs at ``--bimodal`` times the others', around the
current setting's) must never be kept. (A candidate whose own runs split by its designed effect, better in some and
no worse in the others, is a switch: tests/unit/statistics/test_advice_outcomes.py.) The last column decides a
switch also by the old gate (the estimate at least the smallest effect the experiment could see): what that gate
costs in power beside the margin. Then the early drop's savings when the other candidates are 30% worse, and a
candidate 20% better on throughput but 30% worse on latency, left out for throughput when another is 15% better and
no worse.

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
    ap.add_argument("--bimodal", type=float, default=4.0, help="the second group's value over the first's")
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=40)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    names = [f"c{i + 1}" for i in range(args.candidates)]
    null = [SimulatedGoal("throughput", "iops", dict.fromkeys(names, 1.0))]
    better = [SimulatedGoal("throughput", "iops", {**dict.fromkeys(names, 1.0), names[-1]: args.effect})]
    # One candidate's runs in two groups around the current setting's: half at 1 / sqrt(--bimodal), half at sqrt(it).
    bimodal = [SimulatedGoal("throughput", "iops", {**dict.fromkeys(names, 1.0), names[-1]: args.bimodal ** -0.5},
                             {names[-1]: (0.5, args.bimodal)})]
    rule, old_gate = Rule(alpha=args.alpha), Rule(alpha=args.alpha, at_least_mde=True)
    arms = args.candidates + 1
    t0 = time.monotonic()

    def rates(goals: list[SimulatedGoal], noise: float, runs: int, r: Rule = rule) -> dict[str, float]:
        counts = dict.fromkeys(("switch", "keep-equal", "cannot-tell"), 0)
        for _ in range(args.sims):
            counts[simulate_advice(rng, goals, noise, runs, args.alpha, r).advice.goals[0].outcome] += 1
        return {k: v / args.sims for k, v in counts.items()}

    print(f"{args.candidates} candidates beside the current setting, IOPS, alpha {args.alpha:g}, margin "
          f"{rule.margin:.0%}, {args.sims} simulations a cell (seed {args.seed}); each case: switch / keep-equal / "
          "cannot-tell")
    better_words = f"one {args.effect - 1:.0%} better"
    print(f"{'noise':>5}  {'runs/variant':>12}  {'budget':>6}  {'none better':>17}  {better_words:>17}  "
          f"{'bimodal':>17}  {'old gate: switch':>16}")
    for noise in (float(x) for x in args.noise.split(",")):
        for runs in (int(x) for x in args.runs.split(",")):
            cells = [rates(case, noise, runs) for case in (null, better, bimodal)]
            gate = rates(better, noise, runs, old_gate)["switch"]
            shown = "  ".join(f"{c['switch']:>5.1%} {c['keep-equal']:>5.1%} {c['cannot-tell']:>5.1%}" for c in cells)
            print(f"{noise:>5.0%}  {runs:>12}  {runs * arms:>6}  {shown}  {gate:>16.1%}")
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
    shares = ", ".join(f"{k or 'no switch'} {v / (args.sims // 4):.0%}" for k, v in sorted(picks.items(), key=str))
    print(f"throughput when the fastest is 30% worse on p99 latency (noise 5%, 12 runs): {shares}")
    print(f"({time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
