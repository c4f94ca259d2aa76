"""Intervals that carry Holm's correction, so a comparison is called significant exactly when its interval
excludes no change.

An unadjusted 95% interval beside a Holm-adjusted p-value says two different things ("no significant
difference: -42% (95% CI -53% to -30%)"). The rule here, for m comparisons of which Holm rejects r at alpha
(each a t-based log ratio: estimate, standard error, degrees of freedom):

- a comparison Holm does not reject gets its two-sided interval at confidence 1 - alpha/(m - r): Bonferroni
  over the hypotheses Holm leaves open, the compatible bound of Strassburger & Bretz (2008). Its p-value is at
  least alpha/(m - r) (Holm stopped at the first such), so the interval holds no change;
- a comparison Holm rejects gets its interval at the level of the Holm step that rejected it: the j-th smallest
  p-value is tested at alpha/(m - j + 1), so its interval at 1 - alpha/(m - j + 1) excludes no change. The
  first step is Bonferroni's; the last, when all are rejected, is the unadjusted 1 - alpha.

So "significant" and "the interval excludes no change" are one statement. When Holm rejects nothing the
intervals are Bonferroni's and hold simultaneously at 1 - alpha; for rejected comparisons Strassburger & Bretz
show that intervals both simultaneous and compatible with Holm can say no more than the direction, so these
are each at the level Holm tested them at rather than simultaneous ones (``level`` says which).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from iosched.core.statistics.stats import RatioEstimate, holm, t_ppf, t_sf2


@dataclass(frozen=True)
class LogComparison:
    """One comparison's t-based estimate on the log scale."""

    log_ratio: float
    se: float  # its standard error (> 0)
    df: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.log_ratio) and self.se > 0.0 and math.isfinite(self.se) and self.df > 0.0):
            raise ValueError("a comparison needs a finite log ratio, a positive standard error and df")

    @property
    def p_value(self) -> float:
        """Two-sided, for no change (the same as the RatioEstimate this came from)."""
        return t_sf2(self.log_ratio / self.se, self.df)

    @classmethod
    def of(cls, estimate: RatioEstimate) -> LogComparison:
        """From a Welch or paired estimate: its standard error read back from its interval."""
        half = (math.log(estimate.ci_high) - math.log(estimate.ci_low)) / 2.0
        return cls(math.log(estimate.ratio), half / t_ppf(0.5 + estimate.level / 2.0, estimate.df), estimate.df)


def _ratio(log_ratio: float) -> float:
    """exp(), infinite past a double's range (a wide interval at a strict level on few runs reaches it)."""
    return math.exp(log_ratio) if log_ratio < 709.0 else math.inf


@dataclass(frozen=True)
class HolmInterval:
    """One comparison after Holm's correction: its adjusted p-value and its interval carrying the same."""

    log_ratio: float
    p_value: float  # raw, two-sided
    p_adjusted: float  # Holm
    significant: bool  # p_adjusted < alpha, and so the interval excludes no change
    level: float  # the interval's confidence
    log_low: float  # the interval, on the log scale (no change is 0)
    log_high: float
    step: int  # 1-based rank of its raw p-value: Holm tests it at alpha / (m - step + 1)

    @property
    def ratio(self) -> float:
        return _ratio(self.log_ratio)

    @property
    def ci_low(self) -> float:
        """The interval as ratios (no change is 1)."""
        return _ratio(self.log_low)

    @property
    def ci_high(self) -> float:
        return _ratio(self.log_high)

    def excludes_no_change(self) -> bool:
        return self.log_low > 0.0 or self.log_high < 0.0


def holm_intervals(comparisons: Sequence[LogComparison], alpha: float = 0.05) -> list[HolmInterval]:
    """Holm-adjusted p-values and Holm-consistent intervals (see the module's rule), in the input order."""
    m = len(comparisons)
    p = [c.p_value for c in comparisons]
    adjusted = holm(p)
    order = sorted(range(m), key=lambda i: p[i])  # holm()'s order: ties keep the input order
    step = {i: rank + 1 for rank, i in enumerate(order)}
    rejected = sum(1 for a in adjusted if a < alpha)
    out = []
    for i, c in enumerate(comparisons):
        significant = adjusted[i] < alpha
        tested_at = alpha / (m - step[i] + 1) if significant else alpha / (m - rejected)
        half = t_ppf(1.0 - tested_at / 2.0, c.df) * c.se
        d = c.log_ratio
        # At |t| within rounding of the critical value the p-value decides; the interval's end then lies on
        # no change (not significant) or just past it (significant), so the two statements stay one.
        if significant and not abs(d) > half:
            half = abs(d) * (1.0 - 1e-12)
        elif not significant and abs(d) > half:
            half = abs(d)
        out.append(HolmInterval(d, p[i], adjusted[i], significant, 1.0 - tested_at, d - half, d + half, step[i]))
    return out
