"""Statistics against published t-table values and against scipy on many seeded random inputs."""

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sp

from iosched.core.statistics.stats import (
    CannotJudge,
    holm,
    log_ratio_paired,
    log_ratio_welch,
    runs_needed,
    summarize,
    t_ppf,
    t_sf2,
    t_test_power,
)

# Two-sided critical values t(0.975, df) and t(0.995, df) from the standard t table.
T_TABLE = [(1, 12.706, 63.657), (2, 4.303, 9.925), (4, 2.776, 4.604), (10, 2.228, 3.169), (30, 2.042, 2.750)]


@pytest.mark.parametrize(("df", "t975", "t995"), T_TABLE)
def test_t_quantiles_match_the_table(df, t975, t995):
    assert t_ppf(0.975, df) == pytest.approx(t975, abs=5e-4)
    assert t_ppf(0.995, df) == pytest.approx(t995, abs=5e-4)


def test_tail_probability_and_fractional_df():
    # scipy: 2 * t.sf(2.5, 7) and t.ppf(0.975, 3.7)
    assert t_sf2(2.5, 7) == pytest.approx(0.04099221858575289, rel=1e-9)
    assert t_ppf(0.975, 3.7) == pytest.approx(2.8675207071911895, rel=1e-9)
    assert t_sf2(0.0, 5) == pytest.approx(1.0)


def test_summary_confidence_interval():
    s = summarize([10.0, 12.0, 14.0])
    assert s.mean == 12.0 and s.stdev == pytest.approx(2.0)
    half = 4.302652729749752 * 2.0 / math.sqrt(3)
    assert (s.ci_low, s.ci_high) == pytest.approx((12.0 - half, 12.0 + half))
    one = summarize([5.0])
    assert one.n == 1 and one.stdev == 0.0 and one.ci_low == one.ci_high == 5.0


def test_t_functions_match_scipy_on_random_inputs():
    rng = random.Random(1)
    for _ in range(300):
        df = rng.choice([rng.uniform(1.0, 5.0), rng.uniform(5.0, 400.0)])
        t = rng.uniform(0.05, 12.0)
        assert t_sf2(t, df) == pytest.approx(2 * sp.t.sf(t, df), rel=1e-8, abs=1e-14)
        q = rng.uniform(0.6, 0.9999)
        assert t_ppf(q, df) == pytest.approx(sp.t.ppf(q, df), rel=1e-8)


def _lognormal(rng: random.Random, n: int, mu: float, sd: float) -> list[float]:
    return [math.exp(rng.gauss(mu, sd)) for _ in range(n)]


def test_log_ratio_welch_matches_scipy_on_random_inputs():
    rng = random.Random(2)
    for _ in range(300):
        a = _lognormal(rng, rng.randint(2, 12), rng.uniform(-3, 12), rng.uniform(0.01, 0.8))
        b = _lognormal(rng, rng.randint(2, 12), rng.uniform(-3, 12), rng.uniform(0.01, 0.8))
        level = rng.choice([0.9, 0.95, 0.99])
        e = log_ratio_welch(a, b, level)
        assert not isinstance(e, CannotJudge)
        ref = sp.ttest_ind(np.log(b), np.log(a), equal_var=False)
        ci = ref.confidence_interval(level)
        assert e.p_value == pytest.approx(ref.pvalue, rel=1e-7, abs=1e-13)
        assert e.t == pytest.approx(ref.statistic, rel=1e-9)
        assert e.df == pytest.approx(ref.df, rel=1e-9)
        assert (e.ci_low, e.ci_high) == pytest.approx((math.exp(ci.low), math.exp(ci.high)), rel=1e-8)
        gm = math.exp(np.mean(np.log(b)) - np.mean(np.log(a)))
        assert e.ratio == pytest.approx(gm, rel=1e-10) and e.n == (len(a), len(b))


def test_log_ratio_paired_matches_scipy_on_random_inputs():
    rng = random.Random(3)
    for _ in range(300):
        d = [rng.gauss(rng.uniform(-0.5, 0.5), rng.uniform(0.005, 0.5)) for _ in range(rng.randint(2, 30))]
        e = log_ratio_paired(d)
        assert not isinstance(e, CannotJudge)
        ref = sp.ttest_1samp(d, 0.0)
        ci = ref.confidence_interval(0.95)
        assert e.p_value == pytest.approx(ref.pvalue, rel=1e-7, abs=1e-13)
        assert (e.ci_low, e.ci_high) == pytest.approx((math.exp(ci.low), math.exp(ci.high)), rel=1e-8)
        assert e.sd_log == pytest.approx(np.std(d, ddof=1), rel=1e-9)


def test_cannot_judge_edge_cases_give_reasons_not_p_values():
    """Each a reason code, naming the side it is about (its words: core/present/sentences.py ``reason_words``)."""
    assert log_ratio_welch([1.0], [2.0, 3.0]).reason == "few-runs:baseline"
    assert log_ratio_welch([2.0, 3.0], [1.0]).reason == "few-runs:variant"
    assert log_ratio_welch([1.0, math.nan], [2.0, 3.0]).reason == "not-finite:baseline"
    assert log_ratio_welch([0.0, 0.0], [2.0, 3.0]).reason == "not-positive:baseline"
    assert log_ratio_welch([5.0, 5.0], [6.0, 6.0]).reason == "no-variance"
    assert log_ratio_paired([0.1, 0.1, 0.1]).reason == "no-turn-variance"
    assert log_ratio_paired([0.1]).reason == "few-blocks"


def _holm_reference(p: list[float], alpha: float) -> set[int]:
    """The textbook step-down procedure: reject in order while p_(j) <= alpha / (m - j)."""
    rejected: set[int] = set()
    for j, i in enumerate(sorted(range(len(p)), key=lambda i: p[i])):
        if p[i] >= alpha / (len(p) - j):
            break
        rejected.add(i)
    return rejected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30), st.sampled_from([0.01, 0.05, 0.1, 0.2]))
def test_holm_adjusted_p_values_reject_exactly_what_the_step_down_procedure_rejects(p, alpha):
    adj = holm(p)
    assert {i for i, a in enumerate(adj) if a < alpha} == _holm_reference(p, alpha)
    assert all(x <= a <= 1.0 for x, a in zip(p, adj, strict=True))
    order = sorted(range(len(p)), key=lambda i: p[i])
    assert all(adj[order[j]] <= adj[order[j + 1]] for j in range(len(p) - 1))  # monotone in p


def _power(n: int, sd: float, ratio: float, alpha: float, paired: bool) -> float:
    """Exact power of the two-sided t-test from scipy's noncentral t."""
    df = n - 1 if paired else 2 * n - 2
    ncp = abs(math.log(ratio)) / (sd * math.sqrt(1 / n if paired else 2 / n))
    crit = sp.t.ppf(1 - alpha / 2, df)
    return float(sp.nct.sf(crit, df, ncp) + sp.nct.cdf(-crit, df, ncp))  # nan where scipy's nct fails


def test_power_matches_scipy_noncentral_t_on_random_inputs():
    rng = random.Random(5)
    checked = 0
    for _ in range(200):
        n, sd, ratio = rng.randint(2, 60), rng.uniform(0.01, 0.5), rng.uniform(0.6, 1.5)
        alpha, paired = rng.choice([0.05, 0.025, 0.01]), rng.random() < 0.5
        got = t_test_power(n, sd, ratio, alpha, "paired" if paired else "two-sample")
        ref = _power(n, sd, ratio, alpha, paired)
        checked += not math.isnan(ref)
        assert math.isnan(ref) or got == pytest.approx(ref, abs=1e-6)
    assert checked > 150


def test_runs_needed_is_the_exact_noncentral_t_answer():
    rng = random.Random(4)
    checked = 0
    for _ in range(120):
        sd, ratio = rng.uniform(0.01, 0.4), rng.choice([0.7, 0.9, 1.05, 1.1, 1.3])
        alpha, paired = rng.choice([0.05, 0.025, 0.01]), rng.random() < 0.5
        n = runs_needed(sd, ratio, alpha, design="paired" if paired else "two-sample")
        if n is None:
            continue
        at, below = _power(n, sd, ratio, alpha, paired), _power(n - 1, sd, ratio, alpha, paired) if n > 2 else 0.0
        if math.isnan(at) or math.isnan(below):
            continue
        checked += 1
        assert at >= 0.8 > below, (sd, ratio, alpha, paired, n, at, below)  # the fewest that reach 80%
    assert checked > 60
    assert runs_needed(0.0) is None and runs_needed(math.nan) is None


# --- figures at the edges of their range, and beyond: no statistic raises ---------------------------------------

IN_RANGE = st.one_of(st.just(0.0), st.floats(1e-12, 1e15), st.floats(-1e15, -1e-12),
                     st.sampled_from([1e-12, 1e15, -1e15, 2e-12, 999999999999999.9]))


def _exact_summary(xs: list[float]) -> tuple[float, float]:
    from fractions import Fraction

    f = [Fraction(x) for x in xs]
    mean = sum(f) / len(f)
    var = sum((x - mean) ** 2 for x in f) / (len(f) - 1)
    return float(mean), math.sqrt(var)


@settings(max_examples=500, deadline=None)
@given(st.lists(IN_RANGE, min_size=2, max_size=40))
def test_the_summary_of_figures_anywhere_in_their_range_is_exact_and_scipys_interval(xs):
    s = summarize(xs)
    mean, sd = _exact_summary(xs)
    assert s.mean == pytest.approx(mean, rel=1e-12, abs=1e-300)
    assert s.stdev == pytest.approx(sd, rel=1e-9, abs=1e-300)
    if sd > 0:
        lo, hi = sp.t.interval(0.95, len(xs) - 1, loc=s.mean, scale=s.stdev / math.sqrt(len(xs)))
        assert (s.ci_low, s.ci_high) == pytest.approx((lo, hi), rel=1e-8, abs=1e-6 * s.stdev)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=0, max_size=12),
       st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=0, max_size=12))
def test_any_finite_values_are_summarised_and_judged_or_cannot_be_never_raised(a, b):
    """1e308 beside 1e308 overflowed fsum; 1e-320 beside 1e308 overflowed a square: never again, in range or not."""
    for xs in (a, b, a + b):
        s = summarize(xs)
        assert s.n == len(xs)
    for e in (log_ratio_welch(a, b), log_ratio_paired(a)):
        assert isinstance(e, CannotJudge) or (0 < e.ci_low <= e.ratio <= e.ci_high < math.inf)


def test_the_issues_values():
    assert summarize([1e308, 1e308]).mean == 1e308
    s = summarize([1e308, 1e-320])
    assert s.mean == 5e307 and math.isfinite(s.stdev)
    assert summarize([5e-324, 5e-324, 1e-323]).mean == pytest.approx(6.6e-324, abs=5e-324)
    assert summarize([0.0, -0.0, 0.0]).stdev == 0.0
    assert math.isnan(summarize([1.0, math.nan]).mean)
