"""Small, dependency-free statistics for A/B runs: summaries, Student t, Welch's test, effects as ratios
estimated on the log scale with confidence intervals, Holm's correction and planning figures.

The Student-t distribution comes from the regularized incomplete beta function (continued fraction,
modified Lentz); tests check it against published t-table values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction for the incomplete beta function (converges fast for x < (a+1)/(a+b+2))."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(ln_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_sf2(t: float, df: float) -> float:
    """Two-sided tail probability P(|T| >= |t|) for Student's t with ``df`` degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return betainc(df / 2.0, 0.5, df / (df + t * t))


def _t_pdf(t: float, df: float) -> float:
    ln = math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0) - 0.5 * math.log(df * math.pi)
    return math.exp(ln - (df + 1.0) / 2.0 * math.log1p(t * t / df))


@lru_cache(maxsize=4096)
def t_ppf(q: float, df: float) -> float:
    """Quantile of Student's t (q in (0.5, 1)): Newton steps on the two-sided tail, kept inside a bracket."""
    if not 0.5 < q < 1.0:
        raise ValueError("q must lie in (0.5, 1)")
    target = 2.0 * (1.0 - q)
    lo, hi = 0.0, 1.0
    while t_sf2(hi, df) > target:
        lo, hi = hi, hi * 2.0
    x = (lo + hi) / 2.0
    for _ in range(100):
        f = t_sf2(x, df) - target  # decreasing in x
        if f > 0:
            lo = x
        else:
            hi = x
        step = f / (2.0 * _t_pdf(x, df))
        nxt = x + step
        if not lo < nxt < hi:
            nxt = (lo + hi) / 2.0
        if abs(nxt - x) < 1e-13 * max(1.0, x) or hi - lo < 1e-13 * max(1.0, hi):
            return nxt
        x = nxt
    return x


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    stdev: float  # sample standard deviation (n - 1); 0 for n < 2
    ci_low: float  # 95% (or the asked level) confidence interval of the mean; equal to mean for n < 2
    ci_high: float

    @property
    def cv(self) -> float:
        """Coefficient of variation: run-to-run noise as a fraction of the mean."""
        return self.stdev / abs(self.mean) if self.mean else 0.0


def geometric_mean(values: Sequence[float]) -> float | None:
    """The geometric mean, the figure a ratio of log means is of; None when a value is not positive and finite."""
    if not values or any(not (math.isfinite(v) and v > 0.0) for v in values):
        return None
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


def summarize(values: Sequence[float], level: float = 0.95) -> Summary:
    """Mean, standard deviation and the mean's interval, for any finite values (NaN for anything else).

    Worked out on the values scaled by a power of two to below 2 in size, which is exact: a sum or a square of
    values near a double's limits (1e308, or 1e-320 beside them) neither overflows nor sinks into subnormals.
    """
    n = len(values)
    if n == 0 or not all(math.isfinite(v) for v in values):
        return Summary(n, math.nan, math.nan, math.nan, math.nan)
    top = max(abs(v) for v in values)
    if top == 0.0:
        return Summary(n, 0.0, 0.0, 0.0, 0.0)
    scale = math.ldexp(1.0, math.frexp(top)[1] - 1)  # at most 2**1023: itself a double
    xs = [v / scale for v in values]
    m = math.fsum(xs) / n
    if n < 2:
        return Summary(n, m * scale, 0.0, m * scale, m * scale)
    ds = [x - m for x in xs]
    # The corrected two-pass sum: its second term takes back the mean's own rounding (values near 1e15 that differ
    # by 1e3 would otherwise lose a part in 1e9 of their spread).
    sd = math.sqrt(max(0.0, math.fsum(d * d for d in ds) - math.fsum(ds) ** 2 / n) / (n - 1))
    half = t_ppf(0.5 + level / 2.0, n - 1) * sd / math.sqrt(n)
    return Summary(n, m * scale, sd * scale, (m - half) * scale, (m + half) * scale)


# --- effects as ratios ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CannotJudge:
    """No honest p-value exists for these values: ``reason`` says why, as a reason code (core/present/sentences.py
    ``reason_words`` says it in words): "few-runs:variant", "no-variance", "too-wide" …; a side's code names it as
    "baseline" or "variant", which the words name by its label."""

    reason: str


@dataclass(frozen=True)
class RatioEstimate:
    """Variant against baseline as a ratio of geometric means, estimated on the log scale."""

    ratio: float  # variant / baseline
    ci_low: float  # confidence interval of the ratio at ``level``
    ci_high: float
    level: float
    p_value: float  # two-sided, for "ratio = 1"
    t: float
    df: float
    sd_log: float  # run-to-run noise on the log scale (per run, or per paired difference): for planning
    n: tuple[int, int]  # runs (baseline, variant), or (pairs, pairs) for a paired estimate
    means: tuple[float, float] | None = None  # the geometric means the ratio is of (baseline, variant); paired: None


Side = Literal["baseline", "variant"]


def log_values(values: Sequence[float], side: Side) -> list[float] | CannotJudge:
    """Natural logs of ``values``, or why they cannot be judged as ratios (too few, NaN, zero or negative)."""
    if len(values) < 2:
        return CannotJudge("few-runs:" + side)
    if any(not math.isfinite(v) for v in values):
        return CannotJudge("not-finite:" + side)
    if any(v <= 0.0 for v in values):
        return CannotJudge("not-positive:" + side)
    return [math.log(v) for v in values]


def _mean_var(xs: Sequence[float]) -> tuple[float, float]:
    """Of logs (at most 745 in size, whatever the double): no sum here can overflow."""
    m = math.fsum(xs) / len(xs)
    return m, math.fsum((x - m) * (x - m) for x in xs) / (len(xs) - 1)


# exp() of a larger log ratio overflows a double: values that far apart (only a hand-made file has them) give
# an interval no number can hold.
MAX_LOG_RATIO = 700.0
TOO_WIDE = "too-wide"  # the values lie too far apart for a ratio and its interval to be a number
MAX_LOG_DIFF = 1491.0  # log(max double) - log(min subnormal): the widest difference of two doubles' logs


def log_ratio_welch(baseline: Sequence[float], variant: Sequence[float], level: float = 0.95
                    ) -> RatioEstimate | CannotJudge:
    """Welch's t-test and CI on log values: the effect of ``variant`` over ``baseline`` as a ratio.

    Noise in throughput and latency is multiplicative, so logs make the two arms' spreads comparable and the
    interval of the ratio asymmetric as it should be.
    """
    la, lb = log_values(baseline, "baseline"), log_values(variant, "variant")
    if isinstance(la, CannotJudge):
        return la
    if isinstance(lb, CannotJudge):
        return lb
    ma, va = _mean_var(la)
    mb, vb = _mean_var(lb)
    sa, sb = va / len(la), vb / len(lb)
    se2 = sa + sb
    if se2 <= 0.0 or se2 < 1e-24 * max(1.0, ma * ma, mb * mb):
        return CannotJudge("no-variance")
    df = se2 ** 2 / (sa ** 2 / (len(la) - 1) + sb ** 2 / (len(lb) - 1))
    se = math.sqrt(se2)
    d = mb - ma
    half = t_ppf(0.5 + level / 2.0, df) * se
    if abs(d) + half > MAX_LOG_RATIO:
        return CannotJudge(TOO_WIDE)
    pooled = math.sqrt(((len(la) - 1) * va + (len(lb) - 1) * vb) / (len(la) + len(lb) - 2))
    return RatioEstimate(math.exp(d), math.exp(d - half), math.exp(d + half), level, t_sf2(d / se, df), d / se,
                         df, pooled, (len(la), len(lb)), (math.exp(ma), math.exp(mb)))


def log_ratio_paired(log_diffs: Sequence[float], level: float = 0.95) -> RatioEstimate | CannotJudge:
    """One-sample t-test and CI on paired log differences (variant minus baseline within one block of turns)."""
    if len(log_diffs) < 2:
        return CannotJudge("few-blocks")
    if any(not math.isfinite(x) for x in log_diffs):
        return CannotJudge("turn-not-positive")
    if any(abs(x) > MAX_LOG_DIFF for x in log_diffs):  # no difference of two doubles' logs: sums would overflow
        return CannotJudge(TOO_WIDE)
    m, v = _mean_var(log_diffs)
    if v <= 0.0 or v < 1e-24 * max(1.0, m * m):
        return CannotJudge("no-turn-variance")
    df = len(log_diffs) - 1.0
    se = math.sqrt(v / len(log_diffs))
    half = t_ppf(0.5 + level / 2.0, df) * se
    if abs(m) + half > MAX_LOG_RATIO:
        return CannotJudge(TOO_WIDE)
    n = len(log_diffs)
    return RatioEstimate(math.exp(m), math.exp(m - half), math.exp(m + half), level, t_sf2(m / se, df), m / se, df,
                         math.sqrt(v), (n, n))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input order: reject where adjusted p < alpha.

    Controls the chance of any false "significant" across the family at alpha, whatever the dependence.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    out = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        out[i] = running
    return out


def _norm_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def t_test_power(n: int, sd_log: float, ratio: float, alpha: float = 0.05,
                 design: Literal["two-sample", "paired"] = "two-sample") -> float:
    """Power of the two-sided t-test at ``alpha`` to detect ``ratio`` with ``n`` runs per arm (or pairs).

    The noncentral t by integration over the chi distribution of the noise estimate (Simpson's rule on
    u = sqrt(chi-square), which has no singularity at 0): P(|Z + ncp| > c u / sqrt(df)).
    """
    df = 2.0 * (n - 1) if design == "two-sample" else n - 1.0
    ncp = abs(math.log(ratio)) / (sd_log * math.sqrt((2.0 if design == "two-sample" else 1.0) / n))
    c = t_ppf(1.0 - alpha / 2.0, df)
    ln_norm = (df / 2.0 - 1.0) * math.log(2.0) + math.lgamma(df / 2.0)
    # The chi density is negligible beyond 12 of its (at most unit) spreads from sqrt(df); the step keeps both
    # u and c u / sqrt(df) moving by at most 0.1 (df = 1 needs hundreds of steps, large df about 240).
    bottom, top = max(0.0, math.sqrt(df) - 12.0), math.sqrt(df) + 12.0
    steps = math.ceil((top - bottom) / min(0.1, 0.1 * math.sqrt(df) / c))
    steps += steps % 2
    h = (top - bottom) / steps
    total = 0.0
    for i in range(steps + 1):
        u = bottom + i * h
        if u == 0.0:
            dens = 1.0 / math.exp(ln_norm) if df == 1.0 else 0.0
        else:
            dens = math.exp((df - 1.0) * math.log(u) - u * u / 2.0 - ln_norm)
        k = c * u / math.sqrt(df)
        f = (_norm_cdf(ncp - k) + _norm_cdf(-ncp - k)) * dens
        total += f * (1 if i in (0, steps) else 4 if i % 2 else 2)
    return min(1.0, total * h / 3.0)


def runs_needed(sd_log: float, ratio: float = 1.10, alpha: float = 0.05, power: float = 0.8,
                design: Literal["two-sample", "paired"] = "two-sample", limit: int = 10_000) -> int | None:
    """Fewest runs per arm (or pairs) for a two-sided t-test at ``alpha`` to detect ``ratio`` with ``power``.

    A planning figure for a stated difference at a stated noise, not post-hoc power at the observed
    difference. None when more than ``limit`` would be needed or the noise is unknown.
    """
    if not (sd_log > 0 and math.isfinite(sd_log)) or ratio <= 0 or ratio == 1.0:
        return None

    def enough(n: int) -> bool:
        return t_test_power(n, sd_log, ratio, alpha, design) >= power

    k = 2.0 if design == "two-sample" else 1.0
    z = t_ppf(1.0 - alpha / 2.0, 1e6) + t_ppf(power, 1e6)
    n = max(2, math.ceil(k * (z * sd_log / math.log(ratio)) ** 2))  # the normal answer: close, never above
    if n > limit:
        return None
    while not enough(n):
        n += 1
        if n > limit:
            return None
    while n > 2 and enough(n - 1):
        n -= 1
    hi = n
    return max(hi, 2)


def detectable_ratio(n: int, sd_log: float, alpha: float = 0.05, power: float = 0.8,
                     design: Literal["two-sample", "paired"] = "two-sample", largest: float = 1000.0) -> float | None:
    """The smallest ratio above 1 (its inverse below 1 alike, on the log scale) that a two-sided t-test at
    ``alpha`` with ``n`` runs per arm (or pairs) finds with ``power`` at the noise ``sd_log``: what "no difference"
    could have missed. None when the noise is unknown, n < 2, or not even ``largest`` would be found."""
    if n < 2 or not (sd_log > 0 and math.isfinite(sd_log)):
        return None
    lo, hi = 0.0, math.log(largest)
    if t_test_power(n, sd_log, math.exp(hi), alpha, design) < power:
        return None
    for _ in range(60):  # power rises with the ratio: bisection on its log
        mid = (lo + hi) / 2.0
        if t_test_power(n, sd_log, math.exp(mid), alpha, design) >= power:
            hi = mid
        else:
            lo = mid
        if hi - lo < 1e-4:
            break
    return math.exp(hi)
