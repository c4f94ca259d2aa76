"""Small, dependency-free statistics for A/B runs: summaries, Student t, Welch's test and a verdict in words.

The Student-t distribution comes from the regularized incomplete beta function (continued fraction,
modified Lentz); tests check it against published t-table values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


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


def t_ppf(q: float, df: float) -> float:
    """Quantile of Student's t (q in (0.5, 1)), by bisection on the two-sided tail."""
    if not 0.5 < q < 1.0:
        raise ValueError("q must lie in (0.5, 1)")
    target = 2.0 * (1.0 - q)
    lo, hi = 0.0, 1.0
    while t_sf2(hi, df) > target:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_sf2(mid, df) > target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


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

    def to_json(self) -> dict:
        return {"n": self.n, "mean": self.mean, "stdev": self.stdev, "ci95": [self.ci_low, self.ci_high]}


def summarize(values: Sequence[float], level: float = 0.95) -> Summary:
    n = len(values)
    if n == 0:
        return Summary(0, math.nan, math.nan, math.nan, math.nan)
    mean = math.fsum(values) / n
    if n < 2:
        return Summary(n, mean, 0.0, mean, mean)
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    sd = math.sqrt(var)
    half = t_ppf(0.5 + level / 2.0, n - 1) * sd / math.sqrt(n)
    return Summary(n, mean, sd, mean - half, mean + half)


@dataclass(frozen=True)
class Welch:
    t: float
    df: float
    p_value: float


def welch(a: Sequence[float], b: Sequence[float]) -> Welch | None:
    """Welch's unequal-variance t-test; None when either side has fewer than two values."""
    if len(a) < 2 or len(b) < 2:
        return None
    sa, sb = summarize(a), summarize(b)
    va, vb = sa.stdev ** 2 / sa.n, sb.stdev ** 2 / sb.n
    se2 = va + vb
    if se2 == 0.0:
        # Both sides identical run to run: equal means are the same, different means are certainly different.
        same = sa.mean == sb.mean
        return Welch(0.0 if same else math.copysign(math.inf, sb.mean - sa.mean), math.nan, 1.0 if same else 0.0)
    t = (sb.mean - sa.mean) / math.sqrt(se2)
    df = se2 ** 2 / ((va ** 2 / (sa.n - 1) if va else 0.0) + (vb ** 2 / (sb.n - 1) if vb else 0.0))
    return Welch(t, df, t_sf2(t, df))


@dataclass(frozen=True)
class Comparison:
    """B against A for one metric."""

    metric: str
    a: str
    b: str
    a_mean: float
    b_mean: float
    diff_pct: float | None  # (B - A) / A in percent
    p_value: float | None
    significant: bool
    detectable_pct: float | None  # smallest difference these runs could separate (80% power), in %
    verdict: str

    def to_json(self) -> dict:
        return {
            "metric": self.metric, "a": self.a, "b": self.b, "a_mean": self.a_mean, "b_mean": self.b_mean,
            "diff_pct": self.diff_pct, "p_value": self.p_value, "significant": self.significant,
            "detectable_pct": self.detectable_pct, "verdict": self.verdict,
        }


def _fmt_p(p: float) -> str:
    if p < 0.001:
        return "p<0.001"
    return f"p={p:.3f}" if p < 0.01 else f"p={p:.2f}"


def compare(metric: str, label: str, a_name: str, a: Sequence[float], b_name: str, b: Sequence[float],
            alpha: float = 0.05, more: str = "more", fewer: str = "fewer") -> Comparison:
    """Judge B against A; the verdict names the size of the effect and its uncertainty, never a bare number.

    ``label`` is the metric in words ("IOPS", "CPU µs per IO"); ``more``/``fewer`` the words for its
    direction ("higher"/"lower" suits latencies).
    """
    sa, sb = summarize(a), summarize(b)
    diff = (sb.mean - sa.mean) / sa.mean * 100.0 if sa.n and sa.mean else None
    w = welch(a, b)
    if w is None:
        return Comparison(metric, a_name, b_name, sa.mean, sb.mean, diff, None, False, None,
                          f"{label}: too few runs to judge (need at least 2 per side)")
    significant = w.p_value < alpha
    detectable = None
    if sa.mean and not math.isnan(w.df):
        se = math.sqrt(sa.stdev ** 2 / sa.n + sb.stdev ** 2 / sb.n)
        df = max(w.df, 1.0)
        detectable = (t_ppf(1 - alpha / 2, df) + t_ppf(0.8, df)) * se / abs(sa.mean) * 100.0
    if significant and diff is not None:
        word = more if diff > 0 else fewer
        verdict = f"{b_name}: {abs(diff):.0f}% {word} {label} than {a_name}, {_fmt_p(w.p_value)}"
    else:
        verdict = f"{label}: no significant difference ({_fmt_p(w.p_value)})"
        if detectable is not None and detectable > 100.0:
            verdict += "; run-to-run noise is too large to judge: add repeats or use live alternation"
        elif detectable is not None and detectable > 10.0:
            verdict += (f"; run-to-run noise hides differences under ~{detectable:.0f}%:"
                        " add repeats or use live alternation")
    return Comparison(metric, a_name, b_name, sa.mean, sb.mean, diff, w.p_value, significant, detectable, verdict)
