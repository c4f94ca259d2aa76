"""A simulated runner for `advise`'s rule: the tests run without a device, for the rule's checks (tests,
bench/advise_rule.py). Each goal's test is its own experiment: the current setting and the candidates, runs
log-normal around each one's true value at a chosen noise, looked at on the group-sequential schedule
(core/statistics/sequential.py) with clearly worse candidates dropped at the looks (``drop_at_look``), then the
survivors judged at the last look (advice_looks.py ``Looks``: the loop `advise` itself runs), each variant's runs
checked for two groups as `advise` checks them, and the rule decides over every goal
(core/statistics/advice_rule.py). A variant may be made bimodal: a share of its runs at another value (bfq's weight
raise catching a reader in some runs).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from iosched.core.statistics.advice_looks import Looks, look_level, schedule
from iosched.core.statistics.advice_rule import Advice, Goal, GoalEvidence, Rule, decide, splits_of
from iosched.core.statistics.stats import log_ratio_welch

BASELINE = "now"


@dataclass(frozen=True)
class SimulatedGoal:
    goal: Goal
    metric: str
    effects: Mapping[str, float]  # each candidate's true value over the current setting's (1.0: the same)
    # variant -> (share, factor): that share of its runs, at random, at ``factor`` times its value
    bimodal: Mapping[str, tuple[float, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class SimulatedAdvice:
    advice: Advice
    runs: int  # every run the tests took, drops counted
    dropped: tuple[tuple[str, str], ...]  # (goal, variant) dropped at a look


def _test(rng: random.Random, sim: SimulatedGoal, noise: float, runs: int, alpha: float,
          sequential: bool, margin: float | None) -> tuple[GoalEvidence, int, list[tuple[str, str]]]:
    labels = list(sim.effects)
    looks = schedule(runs, sequential)
    test = Looks(sim.goal, sim.metric, BASELINE, labels, looks, look_level(looks, alpha, len(labels) + 1),
                 margin=margin)
    values: dict[str, list[float]] = {v: [] for v in [BASELINE, *labels]}
    n = 0
    while (look := test.next_look()) is not None:
        while n < look:
            for v in [BASELINE, *test.active]:
                share, factor = sim.bimodal.get(v, (0.0, 1.0))
                mode = factor if rng.random() < share else 1.0
                values[v].append(1000.0 * sim.effects.get(v, 1.0) * mode * math.exp(rng.gauss(0.0, noise)))
            n += 1
        test.look(look, {v: log_ratio_welch(values[BASELINE], values[v], 0.95) for v in test.active}, values)
    used = sum(len(xs) for xs in values.values())
    ev = replace(test.evidence(), splits=splits_of(values, sim.metric))
    return ev, used, [(sim.goal, d.variant) for d in test.dropped]


def simulate_advice(rng: random.Random, goals: Sequence[SimulatedGoal], noise: float, runs: int,
                    alpha: float = 0.05, rule: Rule | None = None, sequential: bool = True) -> SimulatedAdvice:
    """One advice from simulated tests: ``runs`` per variant at most, log-normal noise ``noise`` per run."""
    rule = rule or Rule(alpha=alpha)
    evidence, used, dropped = [], 0, []
    for sim in goals:
        # The old gate (at least the smallest effect seen) ran every test to its last look, as it was.
        ev, n, d = _test(rng, sim, noise, runs, alpha, sequential, None if rule.at_least_mde else rule.margin)
        evidence.append(ev)
        used += n
        dropped += d
    return SimulatedAdvice(decide(evidence, rule), used, tuple(dropped))
