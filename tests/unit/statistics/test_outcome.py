"""A comparison's outcome (core/statistics/outcome.py): differs, equal within the margin, or cannot tell with its
reason codes; the equivalence interval made again at 1 - 2 alpha, checked against scipy's t."""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from iosched.core.statistics.outcome import decide, interval_at


def test_a_significant_difference_differs_whatever_the_margin():
    assert decide(True, True, (1.2, 1.4), 0.10, []) == ("differs", [])
    assert decide(True, True, (1.2, 1.4), 0.01, ["two-groups"]) == ("differs", [])


def test_equal_needs_the_whole_interval_inside_the_margin_and_nothing_standing():
    assert decide(False, True, (0.95, 1.05), 0.10, []) == ("equal", [])
    assert decide(False, True, (0.95, 1.12), 0.10, []) == ("cannot-tell", ["too-wide"])
    assert decide(False, True, (1 / 1.1 - 1e-9, 1.0), 0.10, []) == ("cannot-tell", ["too-wide"])
    # Inside the margin, but its runs fell in two groups: not shown equal, and not called too wide either.
    assert decide(False, True, (0.97, 1.03), 0.10, ["two-groups"]) == ("cannot-tell", ["two-groups"])


def test_what_could_not_be_judged_cannot_tell_and_says_why_only():
    assert decide(False, False, None, 0.10, ["too-few-runs"]) == ("cannot-tell", ["too-few-runs"])


@pytest.mark.parametrize(("level", "df", "alpha"), [(0.95, 4.0, 0.05), (0.99, 10.0, 0.05), (0.95, 30.0, 0.01)])
def test_the_interval_made_again_at_one_minus_two_alpha_agrees_with_scipy(level, df, alpha):
    d, se = math.log(1.07), 0.04
    half = sps.t.ppf(0.5 + level / 2, df) * se
    low, high = interval_at(1.07, math.exp(d - half), math.exp(d + half), level, df, alpha)
    q = sps.t.ppf(1 - alpha, df) * se
    assert low == pytest.approx(math.exp(d - q), rel=1e-9) and high == pytest.approx(math.exp(d + q), rel=1e-9)
