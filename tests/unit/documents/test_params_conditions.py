"""The parsers of --fill and --steady's flags (core/documents/params.py), shared with the saved files that carry
them: a value in range comes back canonical, anything else is one BadValue, never a traceback; and on the command
line, a refusal is one sentence before anything runs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iosched.core.documents.params import (
    BadValue,
    parse_fill,
    parse_steady,
    parse_steady_ramp,
    parse_steady_timeout,
    parse_steady_window,
)

from conftest import one_sentence_exit_2


def test_fill_takes_a_percentage() -> None:
    assert parse_fill("50%") == parse_fill("50") == parse_fill(50) == 50.0
    assert parse_fill("12.5%") == 12.5 and parse_fill("0") == 0.0 and parse_fill("100%") == 100.0
    for bad in ("150%", "-1", "half", "nan", "inf", True, None, "50%%", " 12.5 % "):  # nothing around a number
        with pytest.raises(BadValue):
            parse_fill(bad)


def test_steady_takes_fios_criteria_with_a_percentage() -> None:
    assert parse_steady("iops_slope:1%") == "iops_slope:1%"
    assert parse_steady("bw:2.50%") == "bw:2.5%"
    for bad in ("iops_slope", "iops_slope:1", "lat_slope:1%", "iops_slope:0%", "iops_slope:200%", "x:1%", 3,
                " bw:2.50% "):
        with pytest.raises(BadValue):
            parse_steady(bad)


def test_the_waits_seconds_are_whole() -> None:
    assert parse_steady_window("10") == parse_steady_window("10s") == 10
    assert parse_steady_timeout("2m") == 120 and parse_steady_ramp(0) == 0
    for parse, bad in ((parse_steady_window, "2"), (parse_steady_window, "1.5"), (parse_steady_timeout, "4"),
                       (parse_steady_ramp, "-1"), (parse_steady_timeout, "25h"), (parse_steady_window, 10.5)):
        with pytest.raises(BadValue):
            parse(bad)


@given(st.one_of(st.text(max_size=20), st.floats(allow_nan=True), st.integers(), st.booleans(), st.none()))
def test_any_value_is_canonical_or_one_bad_value(value: object) -> None:
    for parse in (parse_fill, parse_steady, parse_steady_window, parse_steady_ramp, parse_steady_timeout):
        try:
            got = parse(value)
        except BadValue as e:
            assert str(e) and "\n" not in str(e)
        else:
            assert parse(got) == got  # canonical: parsed again, the same


@pytest.mark.parametrize("args, said", [
    (["--fill", "150%"], "--fill"),
    (["--steady", "lat:1%"], "--steady"),
    (["--steady-window", "5"], "give --steady too"),
    (["--steady", "--steady-window", "30", "--steady-timeout", "20"], "shorter than the window"),
])
def test_the_command_line_refuses_in_one_sentence(args: list[str], said: str) -> None:
    err = one_sentence_exit_2("compare", "loop0", "--schedulers", "none,bfq", "--job", "rnd4k-q1t1-read", *args)
    assert said in err
