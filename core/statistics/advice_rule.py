"""The rule `iosched advise` decides by, stated before the first run: pure, on the estimates the judges give.

For each goal (throughput, tail latency, interactive use), each candidate is judged against what the device has
now (the baseline) on the goal's primary metric: a ratio with an interval at the level that goes with its
Holm-adjusted p-value (core/statistics/holm_intervals.py: significant exactly when the interval excludes no
change), and its equivalence interval, at 1 - 2 alpha before any correction (90% at alpha 0.05). Effects are taken
on the log scale, turned so that larger is better. Every goal ends in one of three outcomes:

1. **switch**: a candidate eligible for the goal (below) whose Holm interval clears no change (the family-wise test
   at alpha, Holm over the candidates; under the group-sequential boundary, its level) and whose estimate reaches
   the margin (its point at least log(1 + margin) the better way). Among several, the best estimate.
   Eligible (non-inferiority): on every other goal judged in the same advice, the candidate's interval shows it
   within the margin of the best candidate there (the current setting included): its worse-side bound is no worse
   than the best's estimate by more than the margin. The best on a goal passes there; a candidate not judged on a
   goal (not part of that goal's test, or "cannot judge") is not held to it.
2. **keep-equal** (keep what you have, shown equal): no switch, every candidate judged, and every eligible
   candidate's one-sided (1 - alpha) bound on the better side (the better end of its 1 - 2 alpha interval) lies
   below + margin: each is equal to the current setting within the margin, or worse. This is the upper half of
   the two one-sided tests of equivalence (TOST); a keep needs every candidate's test to pass, an
   intersection-union test, so each runs at alpha and no multiplicity correction is needed (Berger 1982). A
   candidate left out by another goal's margin is shown worse there by more than the margin, so it does not stand
   in the way of keeping.
3. **cannot-tell**: neither; with the reasons that applied, as codes (the words are core/present's):
   ``too-wide`` (a candidate's interval reaches past the margin: ``runs_needed`` says the runs a variant that would
   decide at the noise seen), ``two-groups`` (a variant's runs on the goal's metric fall in two groups, or one run
   stands 2x apart from the rest, a dropped variant's runs to its drop included, core/statistics/run_groups.py: their
   mean is no one's experience, so neither switch nor keep is drawn from them; except the winner's own designed
   effect: its runs alone split, and its worse group is no worse than the current setting by more than the margin, as
   bfq's weight raise catches the reader in some runs and leaves it as it was in the others: then the switch stands,
   and the words say how often it fired), ``busy`` (the busy-machine watch saw other load: never keep beside it),
   ``too-few-runs`` (a candidate could not be judged for want of runs, or invalid runs left the interval too wide),
   ``unjudged`` (a candidate could not be judged for another reason), ``replay-behind`` (a replay fell behind its
   capture: never keep) and ``budget`` (the tests stopped at the budget before their last look, and the runs they
   have decide neither way: it stands for too-wide, too few runs and nothing judged, ``runs_needed`` at the noise
   seen, or the pilot's when no test ran). A test stopped at the budget is judged on the runs it has, at its
   boundary's per-look level: its stop takes the place of the looks it did not reach, so the error rate holds.
   A busy machine and a replay fallen behind stop a keep, not a switch: another load widens the runs' spread,
   which the interval carries, but a device kept from its pace cannot show a difference.

The margin gate replaced "at least the smallest effect the experiment could see": with the interval clearing no
change, a switch already happens at most alpha of the time when nothing is better, and the margin alone keeps a
tiny, certain win from changing a setting; the smallest-effect gate also cost power (bench/advise_rule.py prints
both; ``Rule.at_least_mde`` keeps the old gate for that comparison). The smallest detectable effect is still stated.

Clearly worse variants may leave early (``drop_at_look``): at an interim look of the group-sequential schedule
(core/statistics/sequential.py), a variant whose Holm-adjusted p-value on the goal's metric is below the
boundary's per-look level, in the worse direction, is dropped. The boundary is calibrated so that, with no
difference anywhere, any crossing at any look (either direction, any variant) happens with probability alpha:
a drop and a recommendation both need a crossing, so together they keep the overall error rate at alpha, per goal.
A dropped variant was shown worse, so it passes the keep's test by its estimate at the look it left. A candidate may
also leave shown worse than the test's leader (core/statistics/advice_looks.py, where the argument is): it is never
the switch (``GoalEvidence.behind``) and it counts in Holm's family to the end.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from iosched.core.documents.metrics import split_metric
from iosched.core.statistics.holm_intervals import LogComparison, holm_intervals
from iosched.core.statistics.run_groups import Outlier, TwoGroups, split_runs
from iosched.core.statistics.stats import CannotJudge, RatioEstimate, runs_needed, t_ppf

Goal = Literal["throughput", "latency", "interactive"]
GOALS: tuple[Goal, ...] = ("throughput", "latency", "interactive")
Design = Literal["two-sample", "paired"]
# Metrics where more is better; every other (latencies, wall time) is better lower.
HIGHER_BETTER = frozenset({"iops", "mb_s", "fairness_jain", "share_min_max", "share"})


def higher_is_better(metric: str) -> bool:
    return split_metric(metric)[1] in HIGHER_BETTER


Outcome = Literal["switch", "keep-equal", "cannot-tell"]
OUTCOMES: tuple[Outcome, ...] = ("switch", "keep-equal", "cannot-tell")
Reason = Literal["too-wide", "budget", "two-groups", "busy", "too-few-runs", "unjudged", "replay-behind"]
REASONS: tuple[Reason, ...] = ("too-wide", "budget", "two-groups", "busy", "too-few-runs", "unjudged",
                               "replay-behind")
FEW_RUNS = ("few-runs", "few-blocks")  # a judge's "cannot judge" codes for want of runs


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
    level: float | None = None  # the confidence of (ci_low, ci_high)
    se_log: float | None = None  # the log ratio's standard error and its degrees of freedom: the equivalence test's
    df: float | None = None

    @property
    def judged(self) -> bool:
        return (self.cannot_judge is None and self.ratio is not None and self.ci_low is not None and
                self.ci_high is not None and self.ratio > 0 and self.ci_low > 0 and self.ci_high > 0 and
                all(math.isfinite(x) for x in (self.ratio, self.ci_low, self.ci_high)))

    def equal_interval(self, alpha: float) -> tuple[float, float] | None:
        """The equivalence interval as ratios: two-sided at 1 - 2 alpha, no correction (each end a one-sided test at
        alpha); None when not judged or its standard error is not known."""
        if not self.judged or self.se_log is None or self.df is None or not (self.se_log > 0 and self.df > 0):
            return None
        assert self.ratio is not None
        half = t_ppf(1.0 - alpha, self.df) * self.se_log
        d = math.log(self.ratio)
        return math.exp(d - half), math.exp(min(d + half, 709.0))


@dataclass(frozen=True)
class Cost:
    """Another figure of the same test (another role's, or a secondary metric): what a goal's winner costs."""

    metric: str
    estimates: tuple[Estimate, ...]


@dataclass(frozen=True)
class Split:
    """A variant's runs on the goal's metric in two groups (core/statistics/run_groups.py): ``better`` of its ``n``
    valid runs in the group on the better side, each group's range in the metric's units."""

    variant: str
    better: int
    n: int
    better_range: tuple[float, float]
    worse_range: tuple[float, float]
    worse_vs_baseline: float | None = None  # the worse group's geometric mean over the current setting's (a ratio)


@dataclass(frozen=True)
class GoalEvidence:
    """What one goal's test found: every candidate against the current setting on the goal's metric, and what the
    runs showed beside the estimates (a split, a busy machine, invalid runs)."""

    goal: Goal
    metric: str
    baseline: str
    estimates: tuple[Estimate, ...]
    runs_per_variant: int  # the current setting's runs (the planned runs per variant)
    design: Design = "two-sample"
    level: float | None = None  # the per-comparison level the intervals were made at (sequential: the boundary's)
    costs: tuple[Cost, ...] = ()
    splits: tuple[Split, ...] = ()  # variants (the current setting's included) whose runs fall in two groups
    busy: tuple[str, ...] = ()  # what the busy-machine watch named (devices, processes); any: another load
    invalid_runs: int = 0  # runs of the test left out as invalid
    behind_runs: int = 0  # of those, a replay's that fell behind its capture
    stopped: bool = False  # the budget stopped the test before its last look (its estimates: the runs it has)
    noise: float | None = None  # the pilot's per-run noise (log scale): runs needed when no estimate says
    behind: tuple[str, ...] = ()  # candidates that left shown worse than the test's leader: never its switch


@dataclass(frozen=True)
class Rule:
    alpha: float = 0.05
    margin: float = 0.10  # the effect that matters: a switch reaches it, a keep shows none beyond it, and another
    power: float = 0.80  # goal's winner may be shown worse than its best by at most it
    # A switch must also reach the smallest effect the experiment could see (the rule before the margin gate; for
    # bench/advise_rule.py, which measures what that second condition costs in power).
    at_least_mde: bool = False

    def __post_init__(self) -> None:
        if not (0 < self.alpha < 0.5 and 0 <= self.margin < 1 and 0.5 < self.power < 1):
            raise ValueError("alpha in (0, 0.5), margin in [0, 1), power in (0.5, 1)")


@dataclass(frozen=True)
class GoalAdvice:
    goal: Goal
    metric: str
    baseline: str
    recommended: str | None  # the switch's variant; None: keep-equal or cannot-tell
    estimate: Estimate | None  # the recommended variant's, else the best judged candidate's (for the words)
    smallest_effect: float | None  # the minimum detectable effect, as a fraction in the better direction
    excluded: tuple[tuple[str, Exclusion], ...] = ()  # candidates left out by another goal, each with why
    costs: tuple[tuple[str, Estimate], ...] = ()  # the recommended variant's other figures on this test
    unjudged: tuple[tuple[str, str], ...] = field(default=())  # candidates that could not be judged, each with why
    outcome: Outcome = "cannot-tell"
    reasons: tuple[Reason, ...] = ()  # cannot-tell: why, in REASONS' order
    margin: float = 0.10
    estimates: tuple[Estimate, ...] = ()  # every candidate's, in the test's order
    runs_per_variant: int = 0
    runs_needed: int | None = None  # too-wide: runs a variant that would decide at the noise seen (None: unknown)
    splits: tuple[Split, ...] = ()
    busy: tuple[str, ...] = ()
    invalid_runs: int = 0
    behind_runs: int = 0
    stopped: bool = False

    @property
    def keep(self) -> bool:
        return self.recommended is None


@dataclass(frozen=True)
class Advice:
    rule: Rule
    goals: tuple[GoalAdvice, ...]

    @property
    def decided(self) -> bool:
        """Every goal switched or shown equal: `advise` exits 1 otherwise."""
        return all(g.outcome != "cannot-tell" for g in self.goals)


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


def runs_to_decide(sd_log: float | None, margin: float, alpha: float, power: float = 0.8,
                   design: Design = "two-sample") -> int | None:
    """Runs a variant (or pairs) for a candidate no different from the current setting to be shown within the
    margin with ``power``: its one-sided (1 - alpha) bound below log(1 + margin), at noise ``sd_log`` (the two-sided
    test at 2 alpha, whose far tail is negligible). None when the noise is unknown or the runs past reason."""
    if sd_log is None or not (sd_log > 0 and math.isfinite(sd_log)):
        return None
    return runs_needed(sd_log, 1.0 + margin, 2.0 * alpha, power, design)


def _better_bound(e: Estimate, higher: bool, alpha: float) -> float | None:
    """The equivalence interval's end on the better side, on the log scale turned so that larger is better."""
    iv = e.equal_interval(alpha)
    if iv is None:
        return None
    return math.log(iv[1]) if higher else -math.log(iv[0])


def decide_goal(ev: GoalEvidence, others: Sequence[GoalEvidence], rule: Rule) -> GoalAdvice:
    higher = higher_is_better(ev.metric)
    mde = goal_mde(ev, rule)
    bar = math.log1p(rule.margin)
    excluded: list[tuple[str, Exclusion]] = []
    winners: list[tuple[float, Estimate]] = []
    judged = [e for e in ev.estimates if e.judged]
    unjudged = tuple((e.variant, e.cannot_judge or "no-estimate") for e in ev.estimates if not e.judged)
    wide = False
    for e in judged:
        why = next((w for o in others if o.goal != ev.goal and (w := not_within(e.variant, o, rule.margin))), None)
        if why is not None:
            excluded.append((e.variant, why))
            continue
        point, lo, _hi = _oriented(e, higher)
        if lo > 0.0 and point >= bar and (not rule.at_least_mde or (mde is not None and point >= mde)) and \
                e.variant not in ev.behind:
            winners.append((point, e))
        bound = _better_bound(e, higher, rule.alpha)
        wide = wide or bound is None or bound >= bar
    few = any(code.split(":")[0] in FEW_RUNS for _v, code in unjudged)
    winners.sort(key=lambda w: -w[0])
    split = bool(ev.splits) and not (winners and _designed(ev.splits, winners[0][1].variant, higher, bar))
    reasons: list[Reason] = []
    if split:
        reasons.append("two-groups")
    if winners and not split:
        outcome: Outcome = "switch"
    elif not wide and not unjudged and not split and not ev.busy and not ev.behind_runs and judged:
        outcome = "keep-equal"
    else:
        outcome = "cannot-tell"
        if wide and not winners:  # a winner stopped by two groups is not too wide: its runs disagree
            reasons.append("too-wide")
        if ev.busy:
            reasons.append("busy")
        if few or (wide and not winners and ev.invalid_runs):
            reasons.append("too-few-runs")
        if any(code.split(":")[0] not in FEW_RUNS for _v, code in unjudged) or not ev.estimates:
            reasons.append("unjudged")
        if ev.behind_runs:
            reasons.append("replay-behind")
        if ev.stopped:  # what more runs would have settled: the budget's to say
            short = {"too-wide", "too-few-runs"} | ({"unjudged"} if not ev.estimates else set())
            reasons = [r for r in reasons if r not in short]
            reasons.append("budget")
    needed = None
    if outcome == "cannot-tell":  # every candidate's test must pass: each at power ** (1 / m), so all at power
        m = len(judged) or max(1, len(ev.estimates))
        each = rule.power ** (1.0 / m)
        needed = runs_to_decide(pooled_noise(ev.estimates) or ev.noise, rule.margin, rule.alpha, each, ev.design)
    chosen = max(winners, key=lambda w: w[0])[1] if outcome == "switch" else None
    best = chosen or max(judged, key=lambda e: _oriented(e, higher)[0], default=None)
    costs = () if chosen is None else tuple((c.metric, e) for c in ev.costs for e in c.estimates
                                            if e.variant == chosen.variant and e.judged)
    return GoalAdvice(ev.goal, ev.metric, ev.baseline, None if chosen is None else chosen.variant, best,
                      None if mde is None else math.expm1(mde), tuple(excluded), costs, unjudged, outcome,
                      tuple(r for r in REASONS if r in reasons), rule.margin, ev.estimates, ev.runs_per_variant,
                      needed, ev.splits, ev.busy, ev.invalid_runs, ev.behind_runs, ev.stopped)


def decide(evidence: Sequence[GoalEvidence], rule: Rule | None = None) -> Advice:
    """The advice for every goal judged, each by the rule (module docstring), the others' evidence for eligibility."""
    rule = rule or Rule()
    return Advice(rule, tuple(decide_goal(ev, evidence, rule) for ev in evidence))


def _designed(splits: Sequence[Split], winner: str, higher: bool, bar: float) -> bool:
    """Whether the only split is the winner's own designed effect: its better group is the effect (bfq's weight
    raise catching the reader), and its worse group is no worse than the current setting by more than the margin,
    so switching helps in some runs and costs nothing in the others."""
    if len(splits) != 1 or splits[0].variant != winner or splits[0].worse_vs_baseline is None:
        return False
    r = splits[0].worse_vs_baseline
    return (math.log(r) if higher else -math.log(r)) >= -bar


def splits_of(values: Mapping[str, Sequence[float]], metric: str) -> tuple[Split, ...]:
    """Each variant whose valid runs on ``metric`` fall in two groups, or have one run apart (run_groups.py
    ``TwoGroups``, ``Outlier``: a run 2x from all the others is a group of one), the better group first; ``values``'
    first entry is the current setting's."""
    higher = higher_is_better(metric)
    base = next(iter(values.values()), [])
    base_mean = math.exp(sum(math.log(x) for x in base) / len(base)) if base and min(base) > 0 else None
    out = []
    for v, xs in values.items():
        found = split_runs(list(xs))
        if isinstance(found, Outlier):  # one run apart: a group of one beside the rest
            lower, upper = found.groups
        elif isinstance(found, TwoGroups):
            lower, upper = found.lower, found.upper
        else:
            continue
        good, bad = (upper, lower) if higher else (lower, upper)
        worse = [xs[i] for i in bad.indices]
        vs = None if base_mean is None else math.exp(sum(math.log(x) for x in worse) / len(worse)) / base_mean
        out.append(Split(v, good.count, found.n, (good.low, good.high), (bad.low, bad.high), vs))
    return tuple(out)


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


def wins_at_look(estimates: Sequence[Estimate], metric: str, margin: float) -> list[str]:
    """The candidates that already win as the rule's switch asks (the other goals aside): the interval at the look's
    level (the one that goes with its Holm-adjusted p-value) clears no change the better way, and the estimate is at
    least ``margin`` better."""
    higher = higher_is_better(metric)
    bar = math.log1p(margin)
    out = []
    for e in estimates:
        if not e.judged or e.ci_low is None or e.ci_high is None or e.ratio is None:
            continue
        point, lo, _hi = _oriented(e, higher)
        if lo > 0.0 and point >= bar:
            out.append(e.variant)
    return out


def estimates_of(judged: Mapping[str, RatioEstimate | CannotJudge], level: float,
                 family: int = 0) -> tuple[Estimate, ...]:
    """The rule's input from a judge's estimates (each variant against the current setting on one metric, Welch or
    paired, in order): Holm over the judgeable ones at ``level`` (alpha, or the sequential boundary's per-look level),
    each interval at the level that goes with its adjusted p-value (core/statistics/holm_intervals.py). ``family``:
    Holm's count when it is larger than the judgeable ones (candidates that left without being shown different from
    the current setting count as comparisons that found nothing, p = 1)."""
    ok = [(v, e) for v, e in judged.items() if isinstance(e, RatioEstimate)]
    padding = [LogComparison(0.0, 1.0, 1.0)] * max(0, family - len(ok))  # p = 1: last in Holm's order
    intervals = holm_intervals([*(LogComparison.of(e) for _v, e in ok), *padding], level) if ok else []
    by = {v: (e, h) for (v, e), h in zip(ok, intervals[:len(ok)], strict=True)}
    out = []
    for v, e in judged.items():
        if isinstance(e, CannotJudge):
            out.append(Estimate(v, None, None, None, None, None, 0, e.reason))
            continue
        est, h = by[v]
        c = LogComparison.of(est)
        out.append(Estimate(v, est.ratio, h.ci_low, h.ci_high, h.p_adjusted, est.sd_log, est.n[1], None, h.level,
                            c.se, c.df))
    return tuple(out)
