"""The stopping rule of `--until-verdict`: a Pocock-style group-sequential boundary.

The experiment looks at its primary metric at a schedule fixed before the start (batch: every complete
A B B A round from 4 runs per arm on; live alternation: every block of turns from the third), and stops at
the first look whose Holm-corrected p-value falls below one constant per-look level. That level is smaller
than alpha, chosen so that under no difference at all the chance of stopping with "significant" at *any*
look is alpha: found by a seeded simulation of the same look schedule, arm count and test (normal noise on
the log scale), then cached.

The simulation uses Student's pooled t with its fixed degrees of freedom; with equal runs per arm the
statistic equals Welch's and Welch's degrees of freedom are never larger, so the Welch p-values the verdict
uses are never smaller and the real false-positive rate stays at or below alpha.
"""

from __future__ import annotations

import math
import random
from functools import lru_cache
from typing import Literal

from iosched.core.statistics.stats import t_ppf, t_sf2

Design = Literal["two-sample", "paired"]
FIRST_LOOK = 4  # runs per arm: fewer leave t with 1-3 degrees of freedom and spend alpha for little
SIMULATIONS = 20_000
SEED = 20_261_123


def look_schedule(max_per_arm: int, first: int = FIRST_LOOK, step: int = 2) -> tuple[int, ...]:
    """Units per arm at which the boundary is checked (batch: complete A B B A rounds, so drift favours no arm).

    The last look is always ``max_per_arm`` (an odd maximum adds it after the last whole round), so the
    final runs are judged at a planned look and the calibration covers it.
    """
    if max_per_arm < first:
        return (max_per_arm,) if max_per_arm >= 2 else ()
    looks = tuple(range(first, max_per_arm, step))
    return (*looks, max_per_arm)


def _df(design: Design, n: int) -> float:
    return 2.0 * (n - 1) if design == "two-sample" else n - 1.0


def _max_abs_t(design: Design, looks: tuple[int, ...], arms: int, rng: random.Random) -> list[float]:
    """One simulated null experiment: at each look, the largest |t| of the variants against the baseline.

    Written for speed (it runs ``SIMULATIONS`` times before an experiment's first run): the draws are the same, in
    the same order, as the plain loops would take them, so the levels do not depend on how it is written."""
    gauss = rng.gauss
    sqrt = math.sqrt
    m = arms - 1
    n_max = looks[-1]
    out: list[float] = []
    n = 0
    if design == "two-sample":
        s = [0.0] * arms
        ss = [0.0] * arms
        for look in looks:
            while n < look:
                for a in range(arms):
                    x = gauss(0.0, 1.0)
                    s[a] += x
                    ss[a] += x * x
                n += 1
            s0 = s[0]
            var0 = (ss[0] - s0 * s0 / n) / (n - 1)
            best = 0.0
            for v in range(1, arms):
                var_v = (ss[v] - s[v] * s[v] / n) / (n - 1)
                t = abs(s[v] - s0) / n / sqrt((var0 + var_v) / n)
                if t > best:
                    best = t
            out.append(best)
        return out
    sd = [0.0] * m
    sdd = [0.0] * m
    for look in looks:
        while n < look:
            base = gauss(0.0, 1.0)
            for v in range(m):
                d = gauss(0.0, 1.0) - base
                sd[v] += d
                sdd[v] += d * d
            n += 1
        best = 0.0
        for v in range(m):
            var_d = (sdd[v] - sd[v] * sd[v] / n) / (n - 1)
            t = abs(sd[v] / n) / sqrt(var_d / n)
            if t > best:
                best = t
        out.append(best)
    assert n == n_max
    return out


@lru_cache(maxsize=64)
def pocock_level(looks: tuple[int, ...], alpha: float = 0.05, arms: int = 2, design: Design = "two-sample",
                 simulations: int = SIMULATIONS, seed: int = SEED) -> float:
    """The constant per-look level (applied to Holm-adjusted p-values) giving an overall rate of alpha.

    With a single look it is alpha itself.
    """
    if arms < 2 or not looks:
        raise ValueError("a boundary needs at least two arms and one look")
    if len(looks) == 1:
        return alpha
    rng = random.Random(seed)
    m = arms - 1
    lo, hi = alpha / (2.0 * len(looks)), alpha  # rate(lo) <= alpha (Bonferroni over looks); rate(hi) >= alpha

    def crit(level: float) -> list[float]:
        return [t_ppf(1.0 - level / m / 2.0, _df(design, n)) for n in looks]

    # Only an experiment that crosses at ``hi`` can cross at any level the search tries (all below ``hi``, so
    # every critical value above ``hi``'s): the others are counted in the rate's denominator alone.
    widest = crit(hi)
    sims = [ts for ts in (_max_abs_t(design, looks, arms, rng) for _ in range(simulations))
            if any(t > c for t, c in zip(ts, widest, strict=True))]

    def rate(level: float) -> float:
        cs = crit(level)
        return sum(1 for ts in sims if any(t > c for t, c in zip(ts, cs, strict=True))) / simulations

    for _ in range(22):
        mid = math.sqrt(lo * hi)
        if rate(mid) <= alpha:
            lo = mid
        else:
            hi = mid
    return lo


@lru_cache(maxsize=16)
def null_min_p(looks: tuple[int, ...], simulations: int = SIMULATIONS, seed: int = SEED,
               ceiling: float = 0.2) -> tuple[float, ...]:
    """The smallest p-value over the looks of ``simulations`` null two-arm experiments, sorted (values above
    ``ceiling`` are left at 1: the levels read from it are never that large).

    One comparison crosses a constant per-look level L at some look exactly when its smallest p-value is below
    L, so the level giving an overall rate ``a`` is this distribution's ``a`` quantile, for any ``a`` at once.
    """
    rng = random.Random(seed)
    crit = [t_ppf(1.0 - ceiling / 2.0, _df("two-sample", n)) for n in looks]
    out: list[float] = []
    for _ in range(simulations):
        best = 1.0
        for t, c, n in zip(_max_abs_t("two-sample", looks, 2, rng), crit, looks, strict=True):
            if t > c:
                best = min(best, t_sf2(t, _df("two-sample", n)))
        out.append(best)
    out.sort()
    return tuple(out)


def quantile_level(looks: tuple[int, ...], a: float) -> float:
    """The constant per-look level at which one two-arm comparison, looked at on ``looks``, falsely crosses
    with probability ``a`` (at most 0.2); ``a`` itself with a single look."""
    if len(looks) == 1:
        return a
    mins = null_min_p(looks)
    return mins[min(len(mins) - 1, int(a * len(mins)))]
