"""A rank-based cross-check of the log-scale t-test: Mann-Whitney U and the Hodges-Lehmann shift as a ratio.

The t-test on log values judges means of logs; when a variant's runs fall in two groups that mean is no one's
experience, and a test on ranks says whether one variant's runs tend to lie above the other's at all.

- Mann-Whitney U of the variant: the pairs (baseline run, variant run) where the variant's value is higher,
  ties counting one half. Two-sided p-value: exact (the null distribution of U by the Gaussian binomial
  coefficients) when no value is tied and there are at most ``EXACT_MAX_RUNS`` runs in all; otherwise the normal
  approximation with the tie correction of the variance and a continuity correction of one half (as
  scipy.stats.mannwhitneyu computes both).
- Hodges-Lehmann shift: the median of every pairwise difference of log values (variant minus baseline), as a
  ratio; its interval is the distribution-free one from U's distribution (Lehmann; Hollander & Wolfe): the
  k-th smallest and k-th largest pairwise difference, k - 1 the largest count with P(U <= k - 1) < alpha/2.
  Without ties and with the exact distribution, the interval excludes no change exactly when p < alpha. At few
  runs no interval exists at the level asked (3 runs against 3: even U = 0 has P = 0.05): the bounds are None.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Literal

from iosched.core.statistics.stats import CannotJudge, RatioEstimate, log_values

EXACT_MAX_RUNS = 40  # the exact distribution's cost grows as (runs)^3; the normal one is close well before


@lru_cache(maxsize=256)
def _u_counts(n1: int, n2: int) -> tuple[int, ...]:
    """How many of the C(n1+n2, n1) orderings give U = 0, 1, ..., n1*n2: the Gaussian binomial coefficient's
    coefficients, the product over i <= k of (1 - q^(n-k+i)) / (1 - q^i), each step exact in integers."""
    k, n = min(n1, n2), n1 + n2
    poly = [1] + [0] * (n1 * n2)
    for i in range(1, k + 1):
        shift = n - k + i
        for j in range(len(poly) - 1, shift - 1, -1):  # times (1 - q^shift)
            poly[j] -= poly[j - shift]
        for j in range(i, len(poly)):  # divided by (1 - q^i): exact, the result is a polynomial
            poly[j] += poly[j - i]
    return tuple(poly)


@lru_cache(maxsize=256)
def _exact_cdf(n1: int, n2: int) -> tuple[float, ...]:
    """P(U <= u) under the null without ties, for u = 0, 1, ..., n1*n2 (summed in integers, divided once)."""
    total, running, out = math.comb(n1 + n2, n1), 0, []
    for c in _u_counts(n1, n2):
        running += c
        out.append(running / total)
    return tuple(out)


@dataclass(frozen=True)
class RankShift:
    """The variant against the baseline by ranks: Mann-Whitney U and the Hodges-Lehmann ratio."""

    u: float  # pairs where the variant's run is higher, ties one half (scipy's U of the variant's sample)
    p_value: float  # two-sided
    exact: bool  # the exact null distribution (else the normal approximation)
    min_p: float  # the smallest p-value these run counts (and ties) allow: at 3 against 3, 0.1
    ratio: float  # Hodges-Lehmann: exp(median of log(variant run) - log(baseline run) over all pairs)
    ci_low: float | None  # its interval at ``level``; None when the run counts allow none
    ci_high: float | None
    level: float
    n: tuple[int, int]  # runs (baseline, variant)


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Mid-ranks (1-based) of ``values`` and the sizes of their groups of ties."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for t in range(i, j + 1):
            ranks[order[t]] = (i + j) / 2.0 + 1.0
        ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def rank_shift(baseline: Sequence[float], variant: Sequence[float], level: float = 0.95) -> RankShift | CannotJudge:
    """Mann-Whitney U and the Hodges-Lehmann shift of ``variant`` over ``baseline`` (see the module's rule)."""
    la, lb = log_values(baseline, "baseline"), log_values(variant, "variant")
    if isinstance(la, CannotJudge):
        return la
    if isinstance(lb, CannotJudge):
        return lb
    n1, n2 = len(la), len(lb)
    pairs = n1 * n2
    ranks, ties = _ranks([*baseline, *variant])  # not the logs: log() can round two neighbouring values together
    u = math.fsum(ranks[n1:]) - n2 * (n2 + 1) / 2.0
    alpha = 1.0 - level
    exact = all(t == 1 for t in ties) and n1 + n2 <= EXACT_MAX_RUNS
    if exact:
        cdf = _exact_cdf(n1, n2)
        p = min(1.0, 2.0 * cdf[round(min(u, pairs - u))])  # P(U >= far side) = P(U <= near side): symmetric
        min_p = min(1.0, 2.0 * cdf[0])
        k_low = -1  # the largest count with P(U <= count) < alpha / 2
        while cdf[k_low + 1] < alpha / 2.0:
            k_low += 1
    else:
        n = n1 + n2
        var = pairs / 12.0 * ((n + 1) - sum(t ** 3 - t for t in ties) / (n * (n - 1)))
        if var <= 0.0:
            return CannotJudge("same-values")
        sd = math.sqrt(var)
        p = min(1.0, math.erfc((abs(u - pairs / 2.0) - 0.5) / sd / math.sqrt(2.0)))
        min_p = min(1.0, math.erfc((pairs / 2.0 - 0.5) / sd / math.sqrt(2.0)))
        z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
        k_low = math.ceil(pairs / 2.0 - 0.5 - z * sd) - 1
    diffs = sorted(y - x for x in la for y in lb)
    mid = len(diffs) // 2
    centre = diffs[mid] if len(diffs) % 2 else (diffs[mid - 1] + diffs[mid]) / 2.0
    if k_low < 0:
        low: float | None = None
        high: float | None = None
    else:
        low, high = math.exp(diffs[k_low]), math.exp(diffs[pairs - 1 - k_low])
    return RankShift(u, p, exact, min_p, math.exp(centre), low, high, level, (n1, n2))


# --- when the two tests disagree ------------------------------------------------------------------------------

DisagreementKind = Literal["t-test only", "rank test only", "opposite directions"]


@dataclass(frozen=True)
class Disagreement:
    """How the log-scale t-test and the rank test part ways on one comparison."""

    how: tuple[DisagreementKind, ...]
    t_p: float
    rank_p: float


def disagreement(t_test: RatioEstimate, rank: RankShift, alpha: float = 0.05) -> Disagreement | None:
    """None when the two tests tell the same story; otherwise how they differ:

    - "t-test only" / "rank test only": one is significant at ``alpha`` (p < alpha), the other not. A rank test
      that could not reach ``alpha`` at these run counts (``min_p`` >= alpha: 3 runs against 3) is silent, not
      in disagreement, and the t-test alone being significant then says nothing.
    - "opposite directions": the t-test's ratio and the Hodges-Lehmann ratio lie on opposite sides of 1.
    """
    t_sig, rank_sig = t_test.p_value < alpha, rank.p_value < alpha
    how: list[DisagreementKind] = []
    if t_sig and not rank_sig and rank.min_p < alpha:
        how.append("t-test only")
    if rank_sig and not t_sig:
        how.append("rank test only")
    if (t_test.ratio - 1.0) * (rank.ratio - 1.0) < 0.0:
        how.append("opposite directions")
    return Disagreement(tuple(how), t_test.p_value, rank.p_value) if how else None
