"""The pooled verdict over hosts, by seeded simulation: its false-positive rate where the hosts' true effects
differ but average to none, the same for a fixed-effect pool (which ignores that spread), and its power for a
fleet-wide effect.

Each host: 5 runs per arm, 10% run-to-run noise on the log scale, its true log ratio drawn around the fleet's
with a between-host spread of 5%; each host judged by Welch on logs as `compare` does, then pooled
(core/experiment/pooled.py).

    python3 bench/pooled_verdict.py [--fleets 4000]
"""

from __future__ import annotations

import argparse
import math
import random

from iosched.core.experiment.pooled import HostEffect, pool
from iosched.core.experiment.stats import log_ratio_welch, t_ppf


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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fleets", type=int, default=4000)
    n = ap.parse_args().fleets
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


if __name__ == "__main__":
    main()
