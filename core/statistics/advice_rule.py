"""The rule `iosched advise` decides by, stated before the first run: pure, on the estimates the judges give.

For each goal (throughput, tail latency, interactive use), each candidate is judged against what the device has
now (the baseline) on the goal's primary metric: a ratio with an interval at the level that goes with its
Holm-adjusted p-value (core/statistics/holm_intervals.py: significant exactly when the interval excludes no
change). Effects are taken on the log scale, turned so that larger is better.

1. Eligible (non-inferiority): on every other goal judged in the same advice, the candidate's interval shows it
   within the margin of the best candidate there (the current setting included): its worse-side bound (the lower
   end where more is better, the upper end of a latency) is no worse than the best's estimate by more than the
   margin. The best on a goal passes there; a candidate not judged on a goal (not part of that goal's test, or
   "cannot judge") is not held to it.
2. Beats the current setting: its interval on the goal clears no change (the family-wise test at alpha, Holm over
   the candidates; under the group-sequential boundary, its level), and its estimate is at least the smallest
   effect the experiment could see: the minimum detectable effect at the test's level (Holm's first step: the
   level over the candidates) and 80% power, from the observed noise (the candidates' pooled per-run standard
   deviation of log values) and the runs per variant, by the t quantiles at the test's degrees of freedom.
3. The advice for the goal is the eligible candidate that beats the current setting with the best estimate; if
   none does, "keep what you have", with that smallest effect named.

Clearly worse variants may leave early (``drop_at_look``): at an interim look of the group-sequential schedule
(core/statistics/sequential.py), a variant whose Holm-adjusted p-value on the goal's metric is below the
boundary's per-look level, in the worse direction, is dropped. The boundary is calibrated so that, with no
difference anywhere, any crossing at any look (either direction, any variant) happens with probability alpha:
a drop and a recommendation both need a crossing, so together they keep the overall error rate at alpha, per goal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from iosched.core.documents.metrics import split_metric
from iosched.core.statistics.holm_intervals import LogComparison, holm_intervals
from iosched.core.statistics.stats import CannotJudge, RatioEstimate, t_ppf

Goal = Literal["throughput", "latency", "interactive"]
GOALS: tuple[Goal, ...] = ("throughput", "latency", "interactive")
Design = Literal["two-sample", "paired"]
# Metrics where more is better; every other (latencies, wall time) is better lower.
HIGHER_BETTER = frozenset({"iops", "mb_s", "fairness_jain", "share_min_max", "share"})


def higher_is_better(metric: str) -> bool:
    return split_metric(metric)[1] in HIGHER_BETTER


@dataclass(frozen=True)
class Estimate:
    """One variant against the current setting on one metric, as a judge gives it."""

    variant: str
    ratio: float | None  # variant / current; None when it cannot be judged
    ci_low: float | None  # the interval that goes with p_adjusted: significant exactly when it excludes 1
    ci_high: float | None
    p_adjusted: float | None
    sd_log: float | None  # per-run noise on the log scale
    n: int  # runs of the variant
    cannot_judge: str | None = None

    @property
    def judged(self) -> bool:
        return (self.cannot_judge is None and self.ratio is not None and self.ci_low is not None and
                self.ci_high is not None and self.ratio > 0 and self.ci_low > 0 and self.ci_high > 0 and
                all(math.isfinite(x) for x in (self.ratio, self.ci_low, self.ci_high)))


@dataclass(frozen=True)
class Cost:
    """Another figure of the same test (another role's, or a secondary metric): what a goal's winner costs."""

    metric: str
    estimates: tuple[Estimate, ...]


@dataclass(frozen=True)
class GoalEvidence:
    """What one goal's test found: every candidate against the current setting on the goal's metric."""

    goal: Goal
    metric: str
    baseline: str  # the current setting's label
    estimates: tuple[Estimate, ...]
    runs_per_variant: int  # the current setting's runs (the planned runs per variant)
    design: Design = "two-sample"
    level: float | None = None  # the per-comparison level the intervals were made at (sequential: the boundary's)
    costs: tuple[Cost, ...] = ()


@dataclass(frozen=True)
class Rule:
    alpha: float = 0.05
    margin: float = 0.10  # how much worse than the best on another goal a candidate may be shown to be
    power: float = 0.80
    # A win must also reach the smallest effect the experiment could see (step 2); False: the interval alone (for
    # bench/advise_rule.py, which measures what that second condition costs in power and buys in false changes).
    at_least_mde: bool = True

    def __post_init__(self) -> None:
        if not (0 < self.alpha < 0.5 and 0 <= self.margin < 1 and 0.5 < self.power < 1):
            raise ValueError("alpha in (0, 0.5), margin in [0, 1), power in (0.5, 1)")


@dataclass(frozen=True)
class GoalAdvice:
    goal: Goal
    metric: str
    baseline: str
    recommended: str | None  # None: keep what you have
    estimate: Estimate | None  # the recommended variant's, else the best judged candidate's (for the words)
    smallest_effect: float | None  # the minimum detectable effect, as a fraction in the better direction
    excluded: tuple[tuple[str, Exclusion], ...] = ()  # candidates left out by another goal, each with why
    costs: tuple[tuple[str, Estimate], ...] = ()  # the recommended variant's other figures on this test
    unjudged: tuple[tuple[str, str], ...] = field(default=())  # candidates that could not be judged, each with why

    @property
    def keep(self) -> bool:
        return self.recommended is None


@dataclass(frozen=True)
class Advice:
    rule: Rule
    goals: tuple[GoalAdvice, ...]


@dataclass(frozen=True)
class Exclusion:
    """Why a candidate is left out of a goal it would win: on ``goal`` (its figure ``metric``) its interval does not
    show it within ``margin`` of the best there; ``worst``: its interval's worse end against the best, as a ratio."""

    goal: Goal
    metric: str
    margin: float
    worst: float


# --- the maths ----------------------------------------------------------------------------------------------


def _oriented(e: Estimate, higher: bool) -> tuple[float, float, float]:
    """The estimate and its interval on the log scale, turned so that larger is better: (point, low, high)."""
    assert e.ratio is not None and e.ci_low is not None and e.ci_high is not None
    point, lo, hi = math.log(e.ratio), math.log(e.ci_low), math.log(e.ci_high)
    return (point, lo, hi) if higher else (-point, -hi, -lo)


def smallest_effect(sd_log: float | None, runs: int, level: float, power: float = 0.8,
                    design: Design = "two-sample") -> float | None:
    """The minimum detectable effect on the log scale: the log ratio a two-sided t-test at ``level`` with ``runs``
    per arm (or pairs) finds with ``power`` at noise ``sd_log``; None when the noise or the runs cannot say."""
    if sd_log is None or not (sd_log > 0 and math.isfinite(sd_log)) or runs < 2 or not 0 < level < 1:
        return None
    df = 2.0 * (runs - 1) if design == "two-sample" else runs - 1.0
    k = 2.0 if design == "two-sample" else 1.0
    return (t_ppf(1.0 - level / 2.0, df) + t_ppf(power, df)) * sd_log * math.sqrt(k / runs)


def pooled_noise(estimates: Sequence[Estimate]) -> float | None:
    """The candidates' per-run noise pooled (root mean square of their log standard deviations)."""
    sds = [e.sd_log for e in estimates if e.judged and e.sd_log is not None and e.sd_log > 0 and
           math.isfinite(e.sd_log)]
    if not sds:
        return None
    return math.sqrt(sum(s * s for s in sds) / len(sds))


def goal_mde(ev: GoalEvidence, rule: Rule) -> float | None:
    """The smallest effect (log scale) the goal's test could see, at Holm's first step over its candidates."""
    m = max(1, sum(1 for e in ev.estimates if e.judged))
    level = (ev.level if ev.level is not None else rule.alpha) / m
    return smallest_effect(pooled_noise(ev.estimates), ev.runs_per_variant, level, rule.power, ev.design)


def _best(ev: GoalEvidence) -> float:
    """The best oriented estimate on a goal, the current setting's (no change, 0) included."""
    higher = higher_is_better(ev.metric)
    return max([0.0, *(_oriented(e, higher)[0] for e in ev.estimates if e.judged)])


def not_within(variant: str, ev: GoalEvidence, margin: float) -> Exclusion | None:
    """Why ``variant``'s interval on ``ev``'s goal does not show it within ``margin`` of the best there (its worse-side
    bound below best x (1 - margin), turned so that larger is better); None when it does, when it is the best
    there, or when it was not judged there."""
    e = next((x for x in ev.estimates if x.variant == variant), None)
    if e is None or not e.judged:
        return None
    higher = higher_is_better(ev.metric)
    point, lo, _hi = _oriented(e, higher)
    best = _best(ev)
    if point >= best or lo >= best + math.log(1.0 - margin):
        return None
    worst = math.exp(lo - best) if higher else math.exp(best - lo)
    return Exclusion(ev.goal, ev.metric, margin, worst)


def decide_goal(ev: GoalEvidence, others: Sequence[GoalEvidence], rule: Rule) -> GoalAdvice:
    higher = higher_is_better(ev.metric)
    mde = goal_mde(ev, rule)
    excluded: list[tuple[str, Exclusion]] = []
    winners: list[tuple[float, Estimate]] = []
    judged = [e for e in ev.estimates if e.judged]
    unjudged = tuple((e.variant, e.cannot_judge or "no-estimate") for e in ev.estimates if not e.judged)
    for e in judged:
        why = next((w for o in others if o.goal != ev.goal and (w := not_within(e.variant, o, rule.margin))), None)
        if why is not None:
            excluded.append((e.variant, why))
            continue
        point, lo, _hi = _oriented(e, higher)
        if lo > 0.0 and (not rule.at_least_mde or (mde is not None and point >= mde)):
            winners.append((point, e))
    mde_fraction = None if mde is None else math.expm1(mde)
    if not winners:
        best = max(judged, key=lambda e: _oriented(e, higher)[0], default=None)
        return GoalAdvice(ev.goal, ev.metric, ev.baseline, None, best, mde_fraction, tuple(excluded), (), unjudged)
    _point, chosen = max(winners, key=lambda w: w[0])
    costs = tuple((c.metric, e) for c in ev.costs for e in c.estimates if e.variant == chosen.variant and e.judged)
    return GoalAdvice(ev.goal, ev.metric, ev.baseline, chosen.variant, chosen, mde_fraction, tuple(excluded), costs,
                      unjudged)


def decide(evidence: Sequence[GoalEvidence], rule: Rule | None = None) -> Advice:
    """The advice for every goal judged, each by the rule (module docstring), the others' evidence for step 1."""
    rule = rule or Rule()
    return Advice(rule, tuple(decide_goal(ev, evidence, rule) for ev in evidence))


def drop_at_look(estimates: Sequence[Estimate], metric: str, boundary_level: float) -> list[str]:
    """The variants to drop at an interim look: Holm-adjusted p-value (over the comparisons still running) below
    the boundary's per-look level, and worse than the current setting on ``metric``."""
    higher = higher_is_better(metric)
    out = []
    for e in estimates:
        if not e.judged or e.p_adjusted is None or not e.p_adjusted < boundary_level:
            continue
        assert e.ratio is not None
        if (e.ratio < 1.0) == higher:
            out.append(e.variant)
    return out


def estimates_of(judged: Mapping[str, RatioEstimate | CannotJudge], level: float) -> tuple[Estimate, ...]:
    """The rule's input from a judge's estimates (each variant against the current setting on one metric, Welch or
    paired, in order): Holm over the judgeable ones at ``level`` (alpha, or the sequential boundary's per-look level),
    each interval at the level that goes with its adjusted p-value (core/statistics/holm_intervals.py)."""
    ok = [(v, e) for v, e in judged.items() if isinstance(e, RatioEstimate)]
    intervals = holm_intervals([LogComparison.of(e) for _v, e in ok], level) if ok else []
    by = {v: (e, h) for (v, e), h in zip(ok, intervals, strict=True)}
    out = []
    for v, e in judged.items():
        if isinstance(e, CannotJudge):
            out.append(Estimate(v, None, None, None, None, None, 0, e.reason))
            continue
        est, h = by[v]
        out.append(Estimate(v, est.ratio, h.ci_low, h.ci_high, h.p_adjusted, est.sd_log, est.n[1]))
    return tuple(out)
