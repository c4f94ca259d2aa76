"""Statistics against published t-table values and reference results (computed once with scipy.stats)."""

import math

import pytest

from iosched.core.stats import compare, summarize, t_ppf, t_sf2, welch

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


def test_welch_matches_scipy():
    # scipy.stats.ttest_ind(a, b, equal_var=False): t = 28.0675549709, p = 2.52935962045e-05 (t is b - a here)
    w = welch([220100, 218500, 223900], [141000, 139200, 146800])
    assert w.t == pytest.approx(-28.067554970917122, rel=1e-9)
    assert w.df == pytest.approx(3.576042271553401, rel=1e-9)
    assert w.p_value == pytest.approx(2.5293596204500408e-05, rel=1e-6)
    w = welch([100, 104, 97, 101], [99, 106, 95])
    assert w.p_value == pytest.approx(0.8967135712730233, rel=1e-9)


def test_summary_confidence_interval():
    s = summarize([10.0, 12.0, 14.0])
    assert s.mean == 12.0 and s.stdev == pytest.approx(2.0)
    half = 4.302652729749752 * 2.0 / math.sqrt(3)
    assert (s.ci_low, s.ci_high) == pytest.approx((12.0 - half, 12.0 + half))
    one = summarize([5.0])
    assert one.n == 1 and one.stdev == 0.0 and one.ci_low == one.ci_high == 5.0


def test_too_few_runs_and_zero_variance():
    assert welch([1.0], [2.0, 3.0]) is None
    assert welch([5.0, 5.0], [5.0, 5.0]).p_value == 1.0
    assert welch([5.0, 5.0], [6.0, 6.0]).p_value == 0.0
    c = compare("iops", "IOPS", "none", [1.0], "bfq", [2.0, 3.0])
    assert not c.significant and "too few runs" in c.verdict


def test_verdicts_in_words():
    c = compare("iops", "IOPS", "none", [220100, 218500, 223900], "bfq", [141000, 139200, 146800])
    assert c.significant and c.verdict == "bfq: 36% fewer IOPS than none, p<0.001"
    same = compare("iops", "IOPS", "a", [100, 104, 97, 101], "b", [99, 106, 95])
    assert not same.significant
    assert same.verdict.startswith("IOPS: no significant difference (p=0.90)")
    noisy = compare("iops", "IOPS", "a", [100, 140, 80], "b", [120, 90, 150])
    assert not noisy.significant and "add repeats or use live alternation" in noisy.verdict
    lat = compare("p99", "p99 latency", "a", [10, 11, 10.5], "b", [20, 21, 20.5], more="higher", fewer="lower")
    assert lat.verdict.startswith("b: 95% higher p99 latency than a, p")
