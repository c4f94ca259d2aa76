"""Runs that disagree: whether one variant's runs fall in two groups, or one run stands apart, on the log scale.

A mean of two modes is no one's experience (bfq's interactive raise catches a reader in some runs and not in
others), so before a variant's runs are averaged this says whether they agree. The rule, on the sorted log
values x(1) <= ... <= x(n) of n >= 3 runs:

- every split between neighbours x(k) and x(k+1) has a gap g = x(k+1) - x(k) and a spread within the two
  groups it makes, s = sqrt((SS_left + SS_right) / (n - 2)) (the pooled standard deviation of the two sides);
  its statistic is T = g / s (infinite when both sides are flat);
- a split counts only when its nearest runs are at least ``MIN_RATIO`` (2x) apart: noise a person would not call
  two groups (1.00-1.02 ms against 1.10 ms) never fires, however tight the runs are;
- the runs disagree when the largest T among the splits that count exceeds ``critical_value(n)``.

The critical values come from a seeded simulation of unimodal runs (bench/run_groups.py ``--table``), so the
false-alarm rate is stated, not hoped for. Log values of log-normal runs are normal, and T does not change when
they are shifted or scaled, so for n >= 4 the threshold is T's 95% quantile among normal samples: at most 5%
of unimodal log-normal runs fire whatever their noise (fewer, since the 2x floor also has to be met: at 30%
noise almost none). At n = 3 no rule can both hold 5% at every noise level and catch two runs 10x from the
third (the issue's bfq runs at 0.19, 0.24 and 2.4 ms: 16% of unimodal triples look at least that lopsided),
so there the threshold holds 4.5% at 30% run-to-run noise (a CV of 0.3), with the floor doing part of the
work; noisier unimodal triples fire more often (bench/run_groups.py prints how often).

The answer is a typed value: ``Agree``, ``Outlier`` (one run apart from the rest) or ``TwoGroups`` (each side
at least two runs), the last two with each side's run indices, count and range in the units given, for a
sentence such as "2 of 6 at 0.06-0.10 ms, 4 at 4.7-5.0 ms"; the words are the caller's. With 3 runs every
split leaves one run alone, so what is found there is an ``Outlier``; its ``groups`` give both sides alike.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from iosched.core.statistics.stats import CannotJudge

MIN_RATIO = 2.0  # the nearest runs of the two sides at least this many times apart
ALPHA = 0.05  # the false-alarm rate the critical values hold (n = 3: 4.5% at CV 0.3, see above)
CALIBRATION_CV = 0.3  # the run-to-run noise at which n = 3's threshold is calibrated

# critical_value(n) for n = 3..50: T's null quantile, from bench/run_groups.py --table (seeded; 400,000 normal
# samples per n, 4,000,000 at n = 3 with the floor at CALIBRATION_CV; tests/unit/statistics/test_run_groups.py
# re-simulates a few against the rule).
_CRITICAL: dict[int, float] = {
    3: 5.5, 4: 11.76, 5: 7.167, 6: 5.416, 7: 4.469, 8: 3.876,
    9: 3.448, 10: 3.155, 11: 2.906, 12: 2.711, 13: 2.573, 14: 2.439,
    15: 2.336, 16: 2.246, 17: 2.172, 18: 2.094, 19: 2.038, 20: 1.99,
    21: 1.949, 22: 1.906, 23: 1.871, 24: 1.839, 25: 1.81, 26: 1.783,
    27: 1.755, 28: 1.733, 29: 1.713, 30: 1.699, 31: 1.678, 32: 1.661,
    33: 1.646, 34: 1.627, 35: 1.615, 36: 1.608, 37: 1.592, 38: 1.578,
    39: 1.573, 40: 1.558, 41: 1.548, 42: 1.54, 43: 1.533, 44: 1.522,
    45: 1.517, 46: 1.504, 47: 1.497, 48: 1.49, 49: 1.485, 50: 1.478,
}
# Beyond 50 runs (100,000 samples each), the threshold of the largest tabulated n at or below: T's quantile
# falls as n grows, so the nearest smaller n's is the stricter one.
_CRITICAL_FAR: tuple[tuple[int, float], ...] = (
    (60, 1.421), (80, 1.35), (100, 1.305), (150, 1.221), (200, 1.183), (300, 1.127), (500, 1.074), (1000, 1.015),
)


def critical_value(n: int) -> float:
    """The T above which n runs are said to disagree (n >= 3)."""
    if n < 3:
        raise ValueError("a split needs at least 3 runs")
    if n in _CRITICAL:
        return _CRITICAL[n]
    best = _CRITICAL[max(_CRITICAL)]
    for size, value in _CRITICAL_FAR:
        if size <= n:
            best = value
    return best


@dataclass(frozen=True)
class RunGroup:
    """Runs on one side of the split: their positions in the values given, and their range in its units."""

    indices: tuple[int, ...]  # ascending
    low: float
    high: float

    @property
    def count(self) -> int:
        return len(self.indices)


@dataclass(frozen=True)
class Agree:
    """No split stands out: the runs can be summarised by one figure."""

    n: int
    statistic: float  # the largest T among the splits that count (0 when none does)
    critical: float


@dataclass(frozen=True)
class Outlier:
    """One run apart from all the others (at least MIN_RATIO from the nearest)."""

    n: int
    index: int  # its position in the values given
    value: float
    rest: RunGroup
    apart: float  # how many times the nearest of the rest it is away (>= MIN_RATIO)
    statistic: float
    critical: float

    @property
    def groups(self) -> tuple[RunGroup, RunGroup]:
        """Both sides, the lower values first (the outlier as a group of one)."""
        alone = RunGroup((self.index,), self.value, self.value)
        return (alone, self.rest) if self.value < self.rest.low else (self.rest, alone)


@dataclass(frozen=True)
class TwoGroups:
    """The runs fall in two groups of at least two runs each, ``apart`` times apart at their nearest runs."""

    n: int
    lower: RunGroup
    upper: RunGroup
    apart: float  # upper.low / lower.high (>= MIN_RATIO)
    statistic: float
    critical: float

    @property
    def groups(self) -> tuple[RunGroup, RunGroup]:
        return self.lower, self.upper


RunSplit = Agree | Outlier | TwoGroups


@dataclass(frozen=True)
class _Split:
    k: int  # size of the lower side
    statistic: float


def _splits(logs: Sequence[float]) -> list[_Split]:
    """T of every split of the sorted logs, by prefix sums (centred first, so large logs lose no precision)."""
    n = len(logs)
    centre = math.fsum(logs) / n
    xs = [x - centre for x in logs]
    total = math.fsum(xs)
    total2 = math.fsum(x * x for x in xs)
    out: list[_Split] = []
    s1 = s2 = 0.0
    for k in range(1, n):
        s1 += xs[k - 1]
        s2 += xs[k - 1] * xs[k - 1]
        r1, r2 = total - s1, total2 - s2
        # A flat side leaves a few ulps of its sum of squares behind: below 1e-12 of it, it is flat.
        left, right = s2 - s1 * s1 / k, r2 - r1 * r1 / (n - k)
        within = (left if left > 1e-12 * s2 else 0.0) + (right if right > 1e-12 * r2 else 0.0)
        gap = logs[k] - logs[k - 1]
        stat = gap / math.sqrt(within / (n - 2)) if within > 0.0 else math.inf if gap > 0.0 else 0.0
        out.append(_Split(k, stat))
    return out


def largest_gap_statistic(values: Sequence[float], min_ratio: float = MIN_RATIO) -> tuple[int, float]:
    """The largest T among the splits whose nearest runs are ``min_ratio`` apart (``min_ratio`` 1: every split),
    as (size of the lower side, T); (0, 0.0) when no split counts. ``values`` positive, at least 3."""
    order = sorted(values)
    logs = [math.log(v) for v in order]
    best = _Split(0, 0.0)
    for s in _splits(logs):
        if order[s.k] >= min_ratio * order[s.k - 1] and s.statistic > best.statistic:
            best = s
    return best.k, best.statistic


def split_runs(values: Sequence[float]) -> RunSplit | CannotJudge:
    """Whether one variant's runs agree, fall in two groups, or have one run apart (see the module's rule).

    ``values`` in run order, in any unit; the groups name positions in it. Fewer than 3 runs, or a value that
    is not a finite positive number, cannot be checked.
    """
    n = len(values)
    if n < 3:
        return CannotJudge("few-runs-to-split")
    if any(not (math.isfinite(v) and v > 0.0) for v in values):
        return CannotJudge("run-not-positive")
    k, stat = largest_gap_statistic(values)
    critical = critical_value(n)
    if k == 0 or not stat > critical:
        return Agree(n, stat, critical)
    order = sorted(range(n), key=lambda i: values[i])
    low_side, high_side = sorted(order[:k]), sorted(order[k:])
    low_top, high_bottom = values[order[k - 1]], values[order[k]]
    apart = high_bottom / low_top
    lower = RunGroup(tuple(low_side), values[order[0]], low_top)
    upper = RunGroup(tuple(high_side), high_bottom, values[order[-1]])
    if k == 1:
        return Outlier(n, order[0], values[order[0]], upper, apart, stat, critical)
    if k == n - 1:
        return Outlier(n, order[-1], values[order[-1]], lower, apart, stat, critical)
    return TwoGroups(n, lower, upper, apart, stat, critical)
