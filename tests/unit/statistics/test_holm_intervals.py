"""Holm-consistent intervals: on generated families, a comparison is significant exactly when its corrected
interval excludes no change, and the intervals' levels follow the stated rule."""

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iosched.core.statistics.holm_intervals import HolmInterval, LogComparison, holm_intervals
from iosched.core.statistics.stats import RatioEstimate, holm, log_ratio_welch, t_ppf

ALPHAS = st.sampled_from([0.01, 0.05, 0.1])


@st.composite
def families(draw):
    """m comparisons, some with |t| on or within rounding of a Holm step's critical value."""
    m = draw(st.integers(1, 12))
    alpha = draw(ALPHAS)
    out = []
    for _ in range(m):
        se = draw(st.floats(1e-4, 3.0))
        df = draw(st.one_of(st.floats(1.0, 300.0), st.sampled_from([1.0, 2.0, 4.0, 1e6])))
        if draw(st.booleans()):
            d = draw(st.floats(-8.0, 8.0))
        else:  # at the edge of some step's level
            level = alpha / draw(st.integers(1, m))
            d = t_ppf(1.0 - level / 2.0, df) * se * draw(st.sampled_from([1.0, 1 - 1e-15, 1 + 1e-15, 1 - 1e-9]))
            d *= draw(st.sampled_from([1.0, -1.0]))
        out.append(LogComparison(d, se, df))
    return alpha, out


@given(families())
def test_significant_exactly_when_the_corrected_interval_excludes_no_change(family):
    alpha, comparisons = family
    result = holm_intervals(comparisons, alpha)
    assert len(result) == len(comparisons)
    assert [r.p_adjusted for r in result] == holm([c.p_value for c in comparisons])
    m = len(comparisons)
    rejected = sum(r.significant for r in result)
    for c, r in zip(comparisons, result, strict=True):
        assert r.significant == (r.p_adjusted < alpha)
        assert r.significant == r.excludes_no_change()
        assert r.significant == (r.ci_low > 1.0 or r.ci_high < 1.0) or r.ci_low == 1.0 or r.ci_high == 1.0
        assert r.log_low <= c.log_ratio <= r.log_high
        if r.significant:
            assert r.level == pytest.approx(1.0 - alpha / (m - r.step + 1))
        else:
            assert r.level == pytest.approx(1.0 - alpha / (m - rejected))
        assert r.level >= 1.0 - alpha - 1e-12
    assert sorted(r.step for r in result) == list(range(1, m + 1))


def test_the_issues_sentence_no_longer_contradicts_itself():
    # "-42% (95% CI ...), adjusted p = ...": one of ten comparisons, significant only before correcting
    d, se, df = math.log(0.58), 0.2, 12.0
    family = [LogComparison(d, se, df)] + [LogComparison(0.01 * i, 0.2, 12.0) for i in range(1, 10)]
    first = holm_intervals(family)[0]
    raw = t_ppf(0.975, df) * se
    assert d + raw < 0.0  # the unadjusted interval excludes no change
    assert not first.significant and not first.excludes_no_change()
    assert first.level == pytest.approx(1 - 0.05 / 10) and first.ci_low < 0.58 < 1.0 <= first.ci_high


def test_nothing_rejected_gives_bonferroni_and_everything_rejected_ends_unadjusted():
    none = holm_intervals([LogComparison(0.01, 0.1, 10.0), LogComparison(-0.02, 0.1, 10.0)])
    assert all(r.level == pytest.approx(0.975) for r in none)
    every = holm_intervals([LogComparison(1.0, 0.1, 10.0), LogComparison(-0.5, 0.1, 10.0), LogComparison(2.0, 0.1, 10)])
    assert [r.step for r in every] == [2, 3, 1]
    assert [r.level for r in every] == pytest.approx([1 - 0.05 / 2, 1 - 0.05, 1 - 0.05 / 3])
    assert all(r.significant and r.excludes_no_change() for r in every)


def test_one_comparison_keeps_its_own_interval():
    rng = random.Random(9)
    for _ in range(100):
        a = [math.exp(rng.gauss(0.0, 0.3)) for _ in range(rng.randint(2, 8))]
        b = [math.exp(rng.gauss(rng.uniform(-0.5, 0.5), 0.3)) for _ in range(rng.randint(2, 8))]
        e = log_ratio_welch(a, b)
        assert isinstance(e, RatioEstimate)
        c = LogComparison.of(e)
        assert c.p_value == pytest.approx(e.p_value, rel=1e-6, abs=1e-12)
        (r,) = holm_intervals([c])
        assert isinstance(r, HolmInterval) and r.p_adjusted == c.p_value
        assert (r.ci_low, r.ci_high) == pytest.approx((e.ci_low, e.ci_high), rel=1e-9)
        assert r.ratio == pytest.approx(e.ratio) and r.significant == (e.p_value < 0.05)


@pytest.mark.parametrize(("d", "se", "df"), [(math.nan, 0.1, 3.0), (0.1, 0.0, 3.0), (0.1, -1.0, 3.0),
                                             (0.1, math.inf, 3.0), (0.1, 0.1, 0.0)])
def test_a_comparison_without_a_finite_estimate_is_refused(d, se, df):
    with pytest.raises(ValueError):
        LogComparison(d, se, df)


def test_an_empty_family_has_no_intervals():
    assert holm_intervals([]) == []
