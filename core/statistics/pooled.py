"""One effect over many hosts: a random-effects model over each host's log ratio (variant against baseline).

A scheduler is chosen for a fleet, and hosts differ (firmware, kernel, neighbours): their effects are not one
true value measured with noise but values spread around a mean. So the pooled estimate is a random-effects mean:

- each host's log ratio y_i with its variance v_i = se_i² (Welch, from its own runs);
- the between-host variance tau² by DerSimonian and Laird's moment estimator:
  Q = Σ w_i (y_i - ȳ)², w_i = 1/v_i, tau² = max(0, (Q - (k-1)) / (Σw - Σw²/Σw));
- the mean μ = Σ w*_i y_i / Σ w*_i with w*_i = 1/(v_i + tau²);
- its interval by Hartung and Knapp: se² = max(1, q) / Σ w*, q = Σ w*_i (y_i - μ)² / (k-1), and Student's t with
  k-1 degrees of freedom. With few hosts the usual normal interval is far too narrow; the max(1, q) keeps the
  interval from shrinking below the hosts' own noise when they happen to agree (Röver, Knapp and Friede 2015).
- heterogeneity: I² = max(0, (Q - (k-1)) / Q), the share of the spread beyond the hosts' own noise, and
  exp(tau), the between-host spread as a factor.

Pure: estimates in, a Pooled out; tests/unit/statistics/test_pooled.py holds the formulas to a worked example
and the whole pooled verdict's false-positive rate and coverage to seeded simulation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from iosched.core.statistics.stats import MAX_LOG_RATIO, t_ppf, t_sf2

MIN_SE, MAX_SE = 1e-100, 1e100  # a host's standard error of its log ratio


class NotPooled(ValueError):
    """The hosts' estimates cannot be pooled; ``reason``: a reason code (core/present/sentences.py says it)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class HostEffect:
    host: str
    log_ratio: float
    se: float  # standard error of the log ratio

    @property
    def ratio(self) -> float:
        return math.exp(self.log_ratio)


@dataclass(frozen=True)
class Pooled:
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    df: int
    tau2: float  # between-host variance of the log ratio
    i2: float  # 0..1
    q: float  # Cochran's Q
    hosts: tuple[HostEffect, ...]

    @property
    def spread(self) -> float:
        """The between-host spread as a factor (exp(tau)): 1.05 means hosts differ by about ×/÷1.05."""
        return math.exp(math.sqrt(self.tau2))


def pool(effects: Sequence[HostEffect], level: float = 0.95) -> Pooled:
    """The random-effects mean of two or more hosts' log ratios; ValueError for fewer, NotPooled (a ValueError) for
    estimates no pool can hold."""
    k = len(effects)
    if k < 2:
        raise ValueError("pooling needs two or more hosts")
    # A host's estimate comes from log_ratio_welch (|log ratio| <= MAX_LOG_RATIO, se >= 1e-12): beyond these bounds
    # a weight 1/se² or a sum of them would leave a double, and no host measures that.
    if any(not (MIN_SE <= e.se <= MAX_SE and abs(e.log_ratio) <= MAX_LOG_RATIO) for e in effects):
        raise NotPooled("not-poolable")
    y = [e.log_ratio for e in effects]
    w = [1.0 / (e.se * e.se) for e in effects]
    sw = math.fsum(w)
    fixed = math.fsum(wi * yi for wi, yi in zip(w, y, strict=True)) / sw
    q = math.fsum(wi * (yi - fixed) ** 2 for wi, yi in zip(w, y, strict=True))
    c = sw - math.fsum(wi * wi for wi in w) / sw
    tau2 = max(0.0, (q - (k - 1)) / c) if c > 0 else 0.0
    ws = [1.0 / (e.se * e.se + tau2) for e in effects]
    sws = math.fsum(ws)
    mu = math.fsum(wi * yi for wi, yi in zip(ws, y, strict=True)) / sws
    qhk = math.fsum(wi * (yi - mu) ** 2 for wi, yi in zip(ws, y, strict=True)) / (k - 1)
    se = math.sqrt(max(1.0, qhk) / sws)
    half = t_ppf(0.5 + level / 2.0, k - 1) * se
    if abs(mu) + half > 700.0 or tau2 > 490000.0:  # ratios beyond a float's range: no measurement of a disk
        raise NotPooled("hosts-apart")
    i2 = max(0.0, (q - (k - 1)) / q) if q > 0 else 0.0
    return Pooled(math.exp(mu), math.exp(mu - half), math.exp(mu + half), t_sf2(mu / se, k - 1), k - 1, tau2, i2,
                  q, tuple(effects))


def agreement(p: Pooled) -> tuple[int, list[HostEffect]]:
    """How many hosts go the pooled effect's way (their own estimate on its side of 1), and those that go the other
    way: "bfq is slower on 5 of 6 hosts; host db3 differs: +4%"."""
    mu = math.log(p.ratio)
    differ = [e for e in p.hosts if e.log_ratio * mu < 0]
    return len(p.hosts) - len(differ), differ
