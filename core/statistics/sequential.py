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

    With a single look it is alpha itself. The levels `advise` and `compare --until-verdict` ask for most are
    ``KNOWN`` (the same simulation's, made once): a second or two less before the first run.
    """
    if arms < 2 or not looks:
        raise ValueError("a boundary needs at least two arms and one look")
    if len(looks) == 1:
        return alpha
    if alpha == 0.05 and design == "two-sample" and simulations == SIMULATIONS and seed == SEED and \
            (known := KNOWN.get((looks, arms))) is not None:
        return known
    return simulated_level(looks, alpha, arms, design, simulations, seed)


def simulated_level(looks: tuple[int, ...], alpha: float, arms: int, design: Design = "two-sample",
                    simulations: int = SIMULATIONS, seed: int = SEED) -> float:
    """``pocock_level`` from its seeded simulation, ``KNOWN`` aside: the bisection over the per-look level."""
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


# ``simulated_level(looks, 0.05, arms)`` for the two-sample batch schedules up to 20 runs a variant (look_schedule) and
# 2 to 8 arms, computed once with the defaults above (tests/unit/statistics/test_sequential_known.py recomputes some):
# a few hundred thousand simulated experiments a level, which a 2-core machine spends 1-2 s on.
KNOWN: dict[tuple[tuple[int, ...], int], float] = {
    ((4, 5), 2): 0.03437535291609359,
    ((4, 6), 2): 0.03194811420157079,
    ((4, 6, 7), 2): 0.025990983563991838,
    ((4, 6, 8), 2): 0.023192127742978096,
    ((4, 6, 8, 9), 2): 0.01986336095167434,
    ((4, 6, 8, 10), 2): 0.01925117307756336,
    ((4, 6, 8, 10, 11), 2): 0.016937352307863012,
    ((4, 6, 8, 10, 12), 2): 0.017000745249750458,
    ((4, 6, 8, 10, 12, 13), 2): 0.015019023087491864,
    ((4, 6, 8, 10, 12, 14), 2): 0.015644630912752616,
    ((4, 6, 8, 10, 12, 14, 15), 2): 0.013664132352209249,
    ((4, 6, 8, 10, 12, 14, 16), 2): 0.013172793543362208,
    ((4, 6, 8, 10, 12, 14, 16, 17), 2): 0.012526005755389678,
    ((4, 6, 8, 10, 12, 14, 16, 18), 2): 0.012319497791069672,
    ((4, 6, 8, 10, 12, 14, 16, 18, 19), 2): 0.011466457872632382,
    ((4, 6, 8, 10, 12, 14, 16, 18, 20), 2): 0.011821878694118125,
    ((4, 5), 3): 0.034838951649015515,
    ((4, 6), 3): 0.03202691070054228,
    ((4, 6, 7), 3): 0.026010832299681905,
    ((4, 6, 8), 3): 0.02322121432582104,
    ((4, 6, 8, 9), 3): 0.019979925461060876,
    ((4, 6, 8, 10), 3): 0.019371298624134305,
    ((4, 6, 8, 10, 11), 3): 0.01698751613002838,
    ((4, 6, 8, 10, 12), 3): 0.01678949904451706,
    ((4, 6, 8, 10, 12, 13), 3): 0.01544063536602149,
    ((4, 6, 8, 10, 12, 14), 3): 0.014486674563790701,
    ((4, 6, 8, 10, 12, 14, 15), 3): 0.013792203600450692,
    ((4, 6, 8, 10, 12, 14, 16), 3): 0.012940497183680157,
    ((4, 6, 8, 10, 12, 14, 16, 17), 3): 0.012883779132621764,
    ((4, 6, 8, 10, 12, 14, 16, 18), 3): 0.01228479784149641,
    ((4, 6, 8, 10, 12, 14, 16, 18, 19), 3): 0.011020953421228013,
    ((4, 6, 8, 10, 12, 14, 16, 18, 20), 3): 0.011623311849838933,
    ((4, 5), 4): 0.03652511778965808,
    ((4, 6), 4): 0.03254878944331865,
    ((4, 6, 7), 4): 0.025924815998213804,
    ((4, 6, 8), 4): 0.025233013612616526,
    ((4, 6, 8, 9), 4): 0.021358584526178396,
    ((4, 6, 8, 10), 4): 0.019550184599560035,
    ((4, 6, 8, 10, 11), 4): 0.017914915375499735,
    ((4, 6, 8, 10, 12), 4): 0.016443771585951755,
    ((4, 6, 8, 10, 12, 13), 4): 0.015423437990637672,
    ((4, 6, 8, 10, 12, 14), 4): 0.014437400021567069,
    ((4, 6, 8, 10, 12, 14, 15), 4): 0.013686633258316382,
    ((4, 6, 8, 10, 12, 14, 16), 4): 0.013084801500078118,
    ((4, 6, 8, 10, 12, 14, 16, 17), 4): 0.012550082698604336,
    ((4, 6, 8, 10, 12, 14, 16, 18), 4): 0.01160206243835834,
    ((4, 6, 8, 10, 12, 14, 16, 18, 19), 4): 0.01135181942030259,
    ((4, 6, 8, 10, 12, 14, 16, 18, 20), 4): 0.011150154737469095,
    ((4, 5), 5): 0.035804120560712215,
    ((4, 6), 5): 0.0321960885314193,
    ((4, 6, 7), 5): 0.025094000564981036,
    ((4, 6, 8), 5): 0.02372774068327952,
    ((4, 6, 8, 9), 5): 0.01933208741213458,
    ((4, 6, 8, 10), 5): 0.019513532729302563,
    ((4, 6, 8, 10, 11), 5): 0.016847334240583794,
    ((4, 6, 8, 10, 12), 5): 0.017021608081386655,
    ((4, 6, 8, 10, 12, 13), 5): 0.015203624895688854,
    ((4, 6, 8, 10, 12, 14), 5): 0.014694520090872657,
    ((4, 6, 8, 10, 12, 14, 15), 5): 0.013714339053715436,
    ((4, 6, 8, 10, 12, 14, 16), 5): 0.013012338776821453,
    ((4, 6, 8, 10, 12, 14, 16, 17), 5): 0.012643518944591254,
    ((4, 6, 8, 10, 12, 14, 16, 18), 5): 0.011734961405165467,
    ((4, 6, 8, 10, 12, 14, 16, 18, 19), 5): 0.011435130811752181,
    ((4, 6, 8, 10, 12, 14, 16, 18, 20), 5): 0.01140738696453998,
    ((4, 5), 6): 0.03557768753981347,
    ((4, 6), 6): 0.03447257573600904,
    ((4, 6, 7), 6): 0.027276509255843427,
    ((4, 6, 8), 6): 0.02517247457564742,
    ((4, 6, 8, 9), 6): 0.02154157066940502,
    ((4, 6, 8, 10), 6): 0.019589148623266696,
    ((4, 6, 8, 10, 11), 6): 0.016563164515857817,
    ((4, 6, 8, 10, 12), 6): 0.0182483348343049,
    ((4, 6, 8, 10, 12, 13), 6): 0.015174738759385058,
    ((4, 6, 8, 10, 12, 14), 6): 0.014476053200457273,
    ((4, 6, 8, 10, 12, 14, 15), 6): 0.014087794504051178,
    ((4, 6, 8, 10, 12, 14, 16), 6): 0.012970356328826036,
    ((4, 6, 8, 10, 12, 14, 16, 17), 6): 0.012481875958492403,
    ((4, 6, 8, 10, 12, 14, 16, 18), 6): 0.012483385978731843,
    ((4, 6, 8, 10, 12, 14, 16, 18, 19), 6): 0.011398098999150286,
    ((4, 6, 8, 10, 12, 14, 16, 18, 20), 6): 0.011136102289954937,
    ((4, 5), 7): 0.03611768811677177,
    ((4, 6), 7): 0.03422790000663452,
    ((4, 6, 7), 7): 0.02581261715179977,
    ((4, 6, 8), 7): 0.025150891011191924,
    ((4, 6, 8, 9), 7): 0.019461090840934715,
    ((4, 6, 8, 10), 7): 0.0188423279148849,
    ((4, 6, 8, 10, 11), 7): 0.016127397073070798,
    ((4, 6, 8, 10, 12), 7): 0.016894179850885992,
    ((4, 6, 8, 10, 12, 13), 7): 0.014448532294419558,
    ((4, 6, 8, 10, 12, 14), 7): 0.014737467192949877,
    ((4, 6, 8, 10, 12, 14, 15), 7): 0.014297863096940207,
    ((4, 6, 8, 10, 12, 14, 16), 7): 0.013779834238821877,
    ((4, 6, 8, 10, 12, 14, 16, 17), 7): 0.012426503071709435,
    ((4, 6, 8, 10, 12, 14, 16, 18), 7): 0.011768559472293372,
    ((4, 6, 8, 10, 12, 14, 16, 18, 19), 7): 0.011919156985848459,
    ((4, 6, 8, 10, 12, 14, 16, 18, 20), 7): 0.011408715557566312,
    ((4, 5), 8): 0.037005953049268125,
    ((4, 6), 8): 0.035330329066168106,
    ((4, 6, 7), 8): 0.025525313267063567,
    ((4, 6, 8), 8): 0.025297447920629008,
    ((4, 6, 8, 9), 8): 0.02111635560323192,
    ((4, 6, 8, 10), 8): 0.020740840096634055,
    ((4, 6, 8, 10, 11), 8): 0.01759060058502859,
    ((4, 6, 8, 10, 12), 8): 0.016754547426443247,
    ((4, 6, 8, 10, 12, 13), 8): 0.015761768571284532,
    ((4, 6, 8, 10, 12, 14), 8): 0.015067711549380145,
    ((4, 6, 8, 10, 12, 14, 15), 8): 0.013751978824122066,
    ((4, 6, 8, 10, 12, 14, 16), 8): 0.01295763148965733,
    ((4, 6, 8, 10, 12, 14, 16, 17), 8): 0.011925946179628156,
    ((4, 6, 8, 10, 12, 14, 16, 18), 8): 0.011922722269004328,
    ((4, 6, 8, 10, 12, 14, 16, 18, 19), 8): 0.011856299521806668,
    ((4, 6, 8, 10, 12, 14, 16, 18, 20), 8): 0.011596853477774505
}
