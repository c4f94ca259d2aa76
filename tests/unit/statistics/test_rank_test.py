"""The rank cross-check against scipy.stats.mannwhitneyu on many seeded inputs; the Hodges-Lehmann interval by
inverting the test it comes from; when the t-test and the rank test disagree."""

import math
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as sp

from iosched.core.statistics.rank_test import (
    EXACT_MAX_RUNS,
    Disagreement,
    RankShift,
    disagreement,
    rank_shift,
)
from iosched.core.statistics.stats import CannotJudge, RatioEstimate, log_ratio_welch


def _lognormal(rng: random.Random, n: int, mu: float, sd: float) -> list[float]:
    return [math.exp(rng.gauss(mu, sd)) for _ in range(n)]


def _shift(a, b, level=0.95) -> RankShift:
    r = rank_shift(a, b, level)
    assert isinstance(r, RankShift)
    return r


def _hl(a, b) -> float:
    return float(np.exp(np.median(np.subtract.outer(np.log(b), np.log(a)))))


def test_exact_p_values_and_u_match_scipy_without_ties():
    rng = random.Random(4)
    for _ in range(300):
        a = _lognormal(rng, rng.randint(2, 14), 0.0, 0.5)
        b = _lognormal(rng, rng.randint(2, 14), rng.uniform(-1.0, 1.0), 0.5)
        r = _shift(a, b)
        ref = sp.mannwhitneyu(b, a, alternative="two-sided", method="exact")
        assert r.exact and r.u == ref.statistic
        assert r.p_value == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-15)
        assert r.ratio == pytest.approx(_hl(a, b), rel=1e-12)
        assert r.n == (len(a), len(b))


def test_tied_or_many_runs_use_the_normal_approximation_as_scipy_does():
    rng = random.Random(5)
    for i in range(300):
        if i % 2:  # ties: values on a coarse grid (fio's latency bins do this)
            a = [round(v, 1) for v in _lognormal(rng, rng.randint(2, 15), 0.0, 0.4)]
            b = [round(v, 1) for v in _lognormal(rng, rng.randint(2, 15), rng.uniform(-0.5, 0.5), 0.4)]
            if len(set(a + b)) == 1:
                continue
        else:
            a = _lognormal(rng, rng.randint(EXACT_MAX_RUNS // 2 + 1, 40), 0.0, 0.4)
            b = _lognormal(rng, rng.randint(EXACT_MAX_RUNS // 2, 40), rng.uniform(-0.3, 0.3), 0.4)
        r = _shift(a, b)
        if len(set(a + b)) == len(a + b) and len(a + b) <= EXACT_MAX_RUNS:
            assert r.exact
            continue
        ref = sp.mannwhitneyu(b, a, alternative="two-sided", method="asymptotic", use_continuity=True)
        assert not r.exact and r.u == ref.statistic
        assert r.p_value == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-15)
        assert r.ratio == pytest.approx(_hl(a, b), rel=1e-12)


RUNS = st.lists(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0]) | st.floats(1e-3, 1e3), min_size=2, max_size=25)


@given(RUNS, RUNS)
def test_any_runs_give_scipys_p_value_and_an_ordered_interval(a, b):
    r = rank_shift(a, b)
    if isinstance(r, CannotJudge):
        assert len(set(a + b)) == 1
        return
    method = "exact" if r.exact else "asymptotic"
    ref = sp.mannwhitneyu(b, a, alternative="two-sided", method=method)
    assert r.u == ref.statistic and r.p_value == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-15)
    assert 0.0 < r.min_p <= r.p_value <= 1.0
    if r.ci_low is not None and r.ci_high is not None:
        assert r.ci_low <= r.ratio <= r.ci_high


def test_the_interval_inverts_the_exact_test():
    # A shift d lies outside the interval exactly when the test of (variant / e^d) against the baseline rejects.
    rng = random.Random(6)
    for _ in range(150):
        a = _lognormal(rng, rng.randint(4, 9), 0.0, 0.3)
        b = _lognormal(rng, rng.randint(4, 9), rng.uniform(-0.6, 0.6), 0.3)
        level = rng.choice([0.8, 0.9, 0.95])
        r = _shift(a, b, level)
        assert r.ci_low is not None and r.ci_high is not None
        assert r.ci_low <= r.ratio <= r.ci_high
        assert (r.ci_low > 1.0 or r.ci_high < 1.0) == (r.p_value < 1.0 - level)
        for _ in range(10):
            d = rng.uniform(math.log(r.ci_low) - 0.3, math.log(r.ci_high) + 0.3)
            moved = _shift(a, [v / math.exp(d) for v in b], level)
            inside = r.ci_low < math.exp(d) < r.ci_high
            assert (moved.p_value >= 1.0 - level) == inside


def test_the_interval_covers_at_its_level():
    rng = random.Random(7)
    covered = sum(r.ci_low <= 1.5 <= r.ci_high for r in
                  (_shift(_lognormal(rng, 7, 0.0, 0.3), _lognormal(rng, 7, math.log(1.5), 0.3)) for _ in range(600)))
    assert covered / 600 >= 0.93


def test_few_runs_have_no_interval_and_say_how_far_p_can_fall():
    r = _shift([2.3, 3.5, 4.6], [0.19, 0.24, 2.4])  # the none against bfq
    assert r.u == 1.0 and r.p_value == pytest.approx(0.2) and r.min_p == pytest.approx(0.1)
    assert r.ci_low is None and r.ci_high is None
    r4 = _shift([1.0, 1.1, 1.2, 1.3], [2.0, 2.1, 2.2, 2.3])
    assert r4.p_value == pytest.approx(2 / 70) and r4.min_p == pytest.approx(2 / 70)
    assert r4.ci_low == pytest.approx(2.0 / 1.3) and r4.ci_high == pytest.approx(2.3 / 1.0)


@pytest.mark.parametrize(("a", "b"), [([1.0], [2.0, 3.0]), ([1.0, 0.0], [2.0, 3.0]), ([1.0, 2.0], [math.nan, 3.0]),
                                      ([2.0, 2.0], [2.0, 2.0])])
def test_what_ranks_cannot_judge_says_why(a, b):
    assert isinstance(rank_shift(a, b), CannotJudge)


def _t(ratio: float, p: float) -> RatioEstimate:
    return RatioEstimate(ratio, ratio * 0.8, ratio * 1.2, 0.95, p, 2.0, 8.0, 0.1, (5, 5))


def _r(ratio: float, p: float, min_p: float = 0.008) -> RankShift:
    return RankShift(10.0, p, True, min_p, ratio, ratio * 0.8, ratio * 1.2, 0.95, (5, 5))


def test_when_the_t_test_and_the_rank_test_disagree():
    assert disagreement(_t(0.5, 0.01), _r(0.55, 0.02)) is None
    assert disagreement(_t(1.1, 0.4), _r(1.05, 0.6)) is None
    assert disagreement(_t(0.5, 0.01), _r(0.6, 0.2)) == Disagreement(("t-test only",), 0.01, 0.2)
    assert disagreement(_t(0.7, 0.2), _r(0.1, 0.01)) == Disagreement(("rank test only",), 0.2, 0.01)
    assert disagreement(_t(0.9, 0.3), _r(1.2, 0.02)).how == ("rank test only", "opposite directions")
    assert disagreement(_t(1.05, 0.7), _r(0.97, 0.9)).how == ("opposite directions",)
    # 3 runs against 3: the rank test cannot reach 5%, so its silence is no disagreement
    assert disagreement(_t(0.5, 0.01), _r(0.5, 0.1, min_p=0.1)) is None


def test_a_few_runs_far_off_make_the_tests_part_ways():
    # 10 of the variant's 12 runs 20% below every baseline run, 2 at 20x: the log mean says higher and not
    # significant (the two far runs swamp the noise); the ranks say lower, and clearly.
    base = [1.0 + 0.01 * i for i in range(-6, 6)]
    variant = [0.8 + 0.01 * i for i in range(-5, 5)] + [20.0, 24.0]
    t = log_ratio_welch(base, variant)
    r = _shift(base, variant)
    assert isinstance(t, RatioEstimate) and t.ratio > 1.0 and t.p_value > 0.3
    assert r.ratio == pytest.approx(0.81, abs=0.01) and r.ci_high < 1.0 and r.p_value < 0.01
    assert disagreement(t, r) == Disagreement(("rank test only", "opposite directions"), t.p_value, r.p_value)
