"""The pooled verdict over hosts, by seeded simulation: its false-positive rate where the hosts' true effects
differ but average to none, the same for a fixed-effect pool (which ignores that spread), and its power for a
fleet-wide effect.

Each host: 5 runs per arm, 10% run-to-run noise on the log scale, its true log ratio drawn around the fleet's
with a between-host spread of 5%; each host judged by Welch on logs as `compare` does, then pooled
(core/statistics/pooled.py).

Then hosts that each run until a verdict (`--until-verdict --max-runs 12`, 15% noise per run) and stop at their
own boundary, pooled as `report` pools them (core/statistics/fleet_verdict.py: each host at its last planned
look, its plain interval): the pooled interval's coverage, its false positives under no effect, and its power
beside a pool of the hosts' repeated intervals.

    python3 bench/pooled_verdict.py [--fleets 4000]
"""

from __future__ import annotations

import argparse
import math
import random

from iosched.core.base.decode import decode
from iosched.core.base.encode import encode
from iosched.core.documents.document import CompareDoc, RunDoc, SequentialDoc, VariantDoc, WorkloadDoc
from iosched.core.experiment.variants import plan_order
from iosched.core.statistics import fleet_verdict
from iosched.core.statistics.judge import at_last_look, estimates
from iosched.core.statistics.pooled import HostEffect, pool
from iosched.core.statistics.stats import log_ratio_welch, t_ppf
from iosched.core.statistics.verdict import RunningVerdict, sequential_plan


def fleet(rng: random.Random, hosts: int, effect: float, tau: float) -> list[HostEffect]:
    out = []
    for h in range(hosts):
        true = rng.gauss(effect, tau)
        base = [math.exp(rng.gauss(0.0, 0.1)) for _ in range(5)]
        var = [math.exp(rng.gauss(true, 0.1)) for _ in range(5)]
        e = log_ratio_welch(base, var)
        assert not isinstance(e, type(None))
        half = math.log(e.ci_high) - math.log(e.ratio)  # type: ignore[union-attr]
        out.append(HostEffect(str(h), math.log(e.ratio), half / t_ppf(0.975, e.df)))  # type: ignore[union-attr]
    return out


def fixed_significant(effects: list[HostEffect]) -> bool:
    w = [1 / e.se ** 2 for e in effects]
    mu = sum(wi * e.log_ratio for wi, e in zip(w, effects, strict=True)) / sum(w)
    return abs(mu) * math.sqrt(sum(w)) > 1.96


def host_until_verdict(rng: random.Random, plan: dict, true: float) -> CompareDoc:
    labels = ["none", "bfq"]
    rv = RunningVerdict(labels, 0.05, "iops", "compare", plan)
    runs = []
    for i, a in enumerate(plan_order(2, plan["max_per_arm"])):
        run = {"index": i, "variant": labels[a], "metrics": {"iops": 1e4 * math.exp(rng.gauss(0, 0.15) + a * true)}}
        runs.append(RunDoc(index=i, variant=labels[a], start=float(i), end=i + 1.0, valid=True, invalid_reason=None,
                           config={}, metrics=run["metrics"]))
        if rv.should_stop(run):
            break
    return CompareDoc(started=0.0, kernel="", machine="", host="", device=None,
                      variants=[VariantDoc(label=lb, scheduler=lb) for lb in labels], notes=[],
                      workload=WorkloadDoc(job=None, target=None, runtime=None, cmd=None), original={},
                      order=[r.variant for r in runs], runs=runs, repeat=plan["max_per_arm"], drop_caches=False,
                      settle_s=0.0, sequential=decode(SequentialDoc, plan))


def repeated(doc: CompareDoc, metric: str) -> dict:
    """The alternative not taken: each host with its repeated (all-looks) interval."""
    assert doc.sequential is not None
    return estimates(at_last_look(encode(doc), metric), metric, doc.sequential.ci_level)


def until_verdict(fleets: int) -> None:
    plan = sequential_plan(12, 0.05, 2, alternate=False)
    plain = fleet_verdict.host_effects
    for hosts, effect in ((3, 0.0), (3, math.log(0.8)), (6, 0.0), (6, math.log(0.85)), (8, math.log(0.85))):
        rng = random.Random(hosts * 1000 + round(-effect * 100))
        fleets_docs = [[host_until_verdict(rng, plan, rng.gauss(effect, 0.05 if effect == 0 else 0.0))
                        for _h in range(hosts)] for _ in range(fleets)]
        early = sum(len(d.runs) < 24 for f in fleets_docs for d in f) / (fleets * hosts)
        out = []
        for how in (plain, repeated):
            fleet_verdict.host_effects = how  # type: ignore[assignment]
            covered = significant = 0
            for docs in fleets_docs:
                (row,) = fleet_verdict.hosts_pooled([(str(i), d) for i, d in enumerate(docs)], 0.05, "iops").pooled
                covered += row.ci_low <= math.exp(effect) <= row.ci_high
                significant += row.significant
            out.append((covered / fleets, significant / fleets))
        fleet_verdict.host_effects = plain
        (cov, sig), (_rcov, rsig) = out
        what = "false positives" if effect == 0 else f"power for {1 - math.exp(effect):.0%} fewer"
        print(f"{hosts} hosts until a verdict ({early:.0%} of hosts stopped early): coverage {cov:.1%}, "
              f"{what} {sig:.1%} (with repeated intervals: {rsig:.1%}; {fleets} fleets)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fleets", type=int, default=4000)
    ap.add_argument("--sequential-fleets", type=int, default=1000)
    args = ap.parse_args()
    n = args.fleets
    for hosts in (3, 6):
        rng = random.Random(hosts)
        fp = fx = 0
        for _ in range(n):
            effects = fleet(rng, hosts, 0.0, 0.05)
            fp += pool(effects).p_value < 0.05
            fx += fixed_significant(effects)
        rng = random.Random(100 + hosts)
        power = sum(pool(fleet(rng, hosts, math.log(0.85), 0.03)).p_value < 0.05 for _ in range(n // 4)) / (n // 4)
        print(f"{hosts} hosts: false positives {fp / n:.1%} pooled, {fx / n:.1%} fixed-effect; "
              f"power for 15% fewer: {power:.0%} ({n} fleets)")
    until_verdict(args.sequential_fleets)


if __name__ == "__main__":
    main()
