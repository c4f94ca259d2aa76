"""How a figure is shortened (core/base/units.py): the same number always reads the same way in every pane."""

import math

from hypothesis import given
from hypothesis import strategies as st

from iosched.core.base.units import count, human_size, short_number, si


def test_sizes_in_binary_units() -> None:
    assert [human_size(n) for n in (0, 512, 1023, 1024, 1536, 256 * 2**30, 4 * 2**50, 3 * 2**60)] == [
        "0B", "512B", "1023B", "1.0K", "1.5K", "256.0G", "4.0P", "3072.0P"]


def test_short_numbers_for_axes_and_status_lines() -> None:
    assert [short_number(v) for v in (0, 7, 950, 2.5, 12.25, 1234, 35_000, 1_500_000, 2e9)] == [
        "0", "7", "950", "2.50", "12.2", "1.2k", "35k", "1.5M", "2.0G"]


def test_counts_exact_below_ten_thousand() -> None:
    assert [count(n) for n in (0, 9999, 10_000, 81_049)] == ["0", "9999", "10.0k", "81.0k"]


def test_result_tables_keep_one_decimal_and_say_dash_for_none() -> None:
    assert [si(x) for x in (None, math.nan, 0.5, 3.14159, 99.94, 512.0, 35_249.0, -1500.0, 2.5e9)] == [
        "-", "-", "0.50", "3.1", "99.9", "512", "35.2k", "-1.5k", "2.5G"]


@given(st.floats(min_value=0, max_value=1e12, allow_nan=False))
def test_every_figure_shortens_to_a_few_characters(x: float) -> None:
    """Up to a terabyte (or a trillion) a second, beyond anything a device does."""
    for text in (short_number(x), si(x), human_size(x)):
        assert 1 <= len(text) <= 9 and " " not in text
