"""Log2 histogram maths: buckets as bpftrace's hist() makes them, percentiles in the true sample quantile's bucket.

The reference quantile is the inverted-CDF definition (numpy's and scipy's method="inverted_cdf"): the
smallest sample x with at least q of the samples <= x.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iosched.core.trace.histograms import Log2Hist, bucket_bounds, bucket_of


def inverted_cdf(values: list[int], q: float) -> int:
    s = sorted(values)
    return s[max(math.ceil(q * len(s)) - 1, 0)]


def test_buckets_match_bpftrace_hist():
    # bpftrace prints [0,0], [1,1], [2,3], [4,7], ... for integer values.
    assert [bucket_of(v) for v in (0, 1, 2, 3, 4, 7, 8, 1023, 1024)] == [0, 1, 2, 2, 3, 3, 4, 10, 11]
    assert bucket_bounds(0) == (0, 1) and bucket_bounds(1) == (1, 2) and bucket_bounds(11) == (1024, 2048)


@given(st.lists(st.integers(min_value=0, max_value=10**7), min_size=1, max_size=300),
       st.sampled_from([0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0]))
def test_percentile_lies_in_the_bucket_of_the_sample_quantile(values, q):
    h = Log2Hist.from_values(values)
    est = h.percentile(q)
    truth = inverted_cdf(values, q)
    low, high = bucket_bounds(bucket_of(truth))
    assert low <= est <= high


@given(st.lists(st.integers(min_value=0, max_value=10**6), max_size=100),
       st.lists(st.integers(min_value=0, max_value=10**6), max_size=100))
def test_cumulative_difference_gives_the_added_counts(a, b):
    before = Log2Hist.from_values(a)
    after = Log2Hist.from_values(a + b)
    assert after.since(before) == Log2Hist.from_values(b)
    assert before + Log2Hist.from_values(b) == after


def test_a_reset_counter_counts_from_zero():
    assert Log2Hist((1, 2)).since(Log2Hist((5, 5))) == Log2Hist((1, 2))


def test_empty_and_zero():
    assert Log2Hist().percentile(0.5) is None and Log2Hist().mean() is None
    # All requests issued without an insert: time in the scheduler is 0, not half a microsecond.
    assert Log2Hist.from_values([0] * 10).percentile(0.99) == 0.0


def test_rows_and_json():
    h = Log2Hist.from_values([0, 3, 3, 100])
    assert h.rows() == [[0, 1, 1], [2, 4, 2], [64, 128, 1]]
    j = h.to_json()
    assert j["hist"] == h.rows() and j["p50"] == pytest.approx(3.0) and 64 <= j["p99"] <= 128
