from hypothesis import given, settings
from hypothesis import strategies as st

from iosched.core.base.textcharts import (
    BRAILLE_BASE,
    braille_cells,
    braille_grid,
    cpu_stack_column,
    marker_columns,
    nice_ceiling,
    sample_interval,
    span_text,
    time_axis,
)
from iosched.core.base.units import short_number


def test_nice_ceiling_rounds_up_to_readable_values():
    assert [nice_ceiling(v) for v in (0, 0.7, 1, 259_000, 300_001, 7.9, 0.051)] == \
        [1.0, 0.8, 1.0, 300_000, 400_000, 8.0, 0.06]


def test_short_number():
    assert [short_number(v) for v in (0, 950, 1234, 35_000, 1_500_000, 0.25)] == ["0", "950", "1.2k", "35k", "1.5M",
                                                                               "0.25"]


def test_braille_grid_places_newest_point_at_the_right_edge():
    grid = braille_grid([[0.0, 10.0]], width=2, height=1, ymax=10.0)
    # one cell row of 4 dots: point 0.0 at the bottom-left of cell 1, 10.0 at the top-right, joined vertically
    bits, series = grid[0][1]
    assert series == 0
    assert bits == 0x40 | 0x08 | 0x10 | 0x20 | 0x80
    assert grid[0][0] == (0, -1)
    assert chr(BRAILLE_BASE + bits) == "⣸"


def test_gaps_break_the_line():
    grid = braille_grid([[10.0, None, 10.0]], width=2, height=1, ymax=10.0)
    assert grid[0][0][0] == 0x08  # third-from-last point: top of the right column of cell 0
    assert grid[0][1][0] == 0x08


def test_marker_lands_on_first_sample_at_or_after_it():
    times = [1.0, 2.0, 3.0, 4.0]
    assert marker_columns(times, [2.5], width=2) == {1: 0}  # point at t=3 is column 2 of 4 -> cell 1
    assert marker_columns(times, [9.0], width=2) == {}


def test_cpu_stack_column_fills_bottom_up():
    assert cpu_stack_column({"usr": 50.0, "sys": 25.0}, 4) == [0, 0, 1, -1]


def _reference_cells(series, width, height, ymax):
    """braille_cells written the plain way: every dot of every vertical join set one at a time."""
    dots = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))
    bits = [0] * (width * height)
    owner = [-1] * (width * height)
    top = height * 4 - 1
    for index, values in enumerate(series):
        visible = list(values)[-width * 2:]
        offset = width * 2 - len(visible)
        prev = None
        for i, v in enumerate(visible):
            if v is None or v != v:
                prev = None
                continue
            y = min(top, max(0, round(v / ymax * top)))
            lo, hi = (y, y) if prev is None else (min(y, prev), max(y, prev))
            x = offset + i
            for level in range(lo, hi + 1):
                row, dot = divmod(top - level, 4)
                bits[row * width + x // 2] |= dots[x % 2][dot]
                owner[row * width + x // 2] = index
            prev = y
    return bits, owner


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.one_of(st.none(), st.just(float("nan")), st.floats(-5, 120)), max_size=30), max_size=3),
       st.integers(1, 8), st.integers(1, 5), st.sampled_from([1.0, 7.5, 100.0]))
def test_braille_cells_match_the_dot_by_dot_reference(series, width, height, ymax):
    assert braille_cells(series, width, height, ymax) == _reference_cells(series, width, height, ymax)


def test_the_time_axis_ticks_round_times_before_now():
    # 1 s samples, 74 cells of two points each: 148 s wide; ticks every minute (30 cells), "now" at the right.
    axis = time_axis([float(i) for i in range(300)], 74)
    assert len(axis) == 74 and axis.endswith("now")
    assert axis.index("┴") == 73 - 60 and axis[:73 - 60].endswith("-2m")
    assert axis.rindex("┴") == 73 - 30 and axis[:73 - 30].endswith("-1m")
    # The same chart at 0.25 s: ticks every 10 s (20 cells).
    quick = time_axis([i / 4 for i in range(300)], 74)
    assert quick.rindex("┴") == 73 - 20 and quick[:73 - 20].endswith("-10s")
    # Hours of history at a long interval.
    assert "-1h┴" in time_axis([i * 60.0 for i in range(300)], 74)


def test_the_time_axis_without_room_or_samples():
    assert time_axis([], 40) == " " * 40 and time_axis([5.0], 40) == " " * 40
    narrow = time_axis([float(i) for i in range(50)], 12)  # 24 s wide: no tick fits, the span is said
    assert narrow == "-24s─────now"


def test_the_sample_interval_is_the_median_gap():
    assert sample_interval([0, 1, 2, 3, 10, 11]) == 1  # a pause does not stretch the axis
    assert sample_interval([1.0]) is None and sample_interval([2.0, 2.0]) is None


def test_span_text():
    assert [span_text(s) for s in (45, 60, 90, 600, 3600, 5400, 86400)] == ["45s", "1m", "1.5m", "10m", "1h",
                                                                                 "1.5h", "24h"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(0, 1e6), max_size=60).map(sorted), st.integers(0, 200))
def test_any_times_give_an_axis_as_wide_as_the_plot(times, width):
    assert len(time_axis(times, width)) == width
