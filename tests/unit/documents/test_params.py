"""core/documents/params.py: the parsers of what a user gives (a flag, or the same value in a saved file). Any text
is a value in its stated range or one BadInput; nothing else, whatever the text."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from saved_support import SAVED

from iosched.core.base.errors import BadInput
from iosched.core.base.figures import FIGURE_MAX, FIGURE_MIN
from iosched.core.documents import params
from iosched.core.documents.params import (
    MAX_CANDIDATES,
    SCHEDULER_NAME,
    SETTING_NAME,
    SETTING_VALUE,
    BadValue,
    parse_alpha,
    parse_budget_s,
    parse_candidates,
    parse_seconds,
    parse_size,
    parse_variants,
)
from iosched.core.documents.saved import read_experiment
from iosched.core.experiment.matrix import decode_matrix
from iosched.core.present.report import text_report
from iosched.core.statistics.fleet_verdict import hosts_pooled
from iosched.core.statistics.matrix_judge import judge_matrix
from iosched.core.statistics.verdict import judge

# What a person types, and what a script or a paste brings: other scripts' digits, spaces, underscores, units twice.
typed = st.one_of(
    st.text(st.sampled_from("0123456789.eE+-_ smhkKMGTib５٣\u00a0\t\nxinfa"), max_size=12),
    st.text(max_size=30),
    st.from_regex(r"\A[0-9]{1,6}(\.[0-9]{0,3})?[smh]?\Z"),
)
DURATION = re.compile(r"([0-9]+(\.[0-9]*)?|\.[0-9]+)[smhSMH]?", re.ASCII)


@pytest.mark.parametrize(("parse", "lo", "hi"), [(parse_seconds, 0.5, 86400.0), (parse_budget_s, 1.0, 7 * 86400.0)])
@given(text=typed)
def test_a_duration_is_digits_and_one_unit_within_its_range_or_one_refusal(parse, lo, hi, text):
    try:
        seconds = parse(text)
    except BadValue as e:
        assert "duration" in str(e)
        return
    assert DURATION.fullmatch(text), text  # accepted: ASCII digits, a point, one unit, nothing around them
    assert lo <= seconds <= hi
    unit = {"s": 1, "m": 60, "h": 3600}.get(text[-1:].lower(), 1)
    assert math.isclose(seconds, float(text.rstrip("smhSMH")) * unit)


@pytest.mark.parametrize("text", ["10mm", " 5m", "5m ", "５m", "1_000s", "1e3", "inf", "nan", "-5", "5 m", "0x10",
                                  "5min", "١٠", "10sm", ""])
def test_what_a_duration_never_is(text):
    for parse in (parse_seconds, parse_budget_s):
        with pytest.raises(BadValue, match="is not a duration"):
            parse(text)


@given(text=typed)
def test_a_size_and_a_number_from_text_are_ascii_or_one_refusal(text):
    for parse in (parse_size, params.number(0, 1e9), params.number(1, 1000, integer=True), parse_alpha):
        try:
            value = parse(text)
        except BadValue:
            continue
        assert text.isascii() and text == text.strip() and "_" not in text, text
        assert math.isfinite(value)


# Every parser of a single value, and a value it takes: each is tried with that value's digits in other scripts and
# with spaces around it (a flag's text and a saved file's are one value, typed in ASCII).
ONE_VALUE = {
    "parse_alpha": "0.05", "parse_budget_s": "30m", "parse_capture_size": "30M", "parse_fill": "30%",
    "parse_repeat": "30", "parse_seconds": "30s", "parse_settle": "30", "parse_size": "30G",
    "parse_steady": "iops_slope:3%", "parse_steady_ramp": "30", "parse_steady_timeout": "30m", "parse_margin": "10%",
    "parse_steady_window": "30s",
}
LISTS = {"parse_variants", "parse_candidates", "parse_metric"}  # words, not numbers: tested below and above
OTHER_DIGITS = {"0": "０٠۰०", "3": "３٣۳३", "5": "５٥۵५"}


def test_every_parser_of_a_value_is_named_here():
    parsers = {n for n in dir(params) if n.startswith("parse_") and callable(getattr(params, n))}
    assert parsers == set(ONE_VALUE) | LISTS


@pytest.mark.parametrize("name", sorted(ONE_VALUE))
@given(data=st.data())
def test_no_parser_takes_other_scripts_digits_or_spaces_around_a_value(name, data):
    parse, good = getattr(params, name), ONE_VALUE[name]
    parse(good)  # the value as typed is taken
    digit = data.draw(st.sampled_from([c for c in good if c in OTHER_DIGITS]))
    other = data.draw(st.sampled_from(OTHER_DIGITS[digit]))
    at = data.draw(st.sampled_from([i for i, c in enumerate(good) if c == digit]))
    space = data.draw(st.sampled_from([" ", "\t", "\u00a0", "\u3000", "\n"]))
    for text in (good[:at] + other + good[at + 1:], space + good, good + space):
        with pytest.raises(BadValue):
            parse(text)


@pytest.mark.parametrize("name", sorted(ONE_VALUE))
@given(text=typed)
def test_a_value_any_parser_takes_is_ascii_with_nothing_around_it(name, text):
    try:
        got = getattr(params, name)(text)
    except BadValue as e:
        assert str(e) and "\n" not in str(e)
        return
    assert text.isascii() and text == text.strip() and "_" not in text, text
    assert math.isfinite(got) if isinstance(got, float) else True


@pytest.mark.parametrize("text", ["10sm", "10ms", "10mm", "10ss", " 10", "10 ", "１０", "10_0"])
def test_what_a_wait_in_whole_seconds_never_is(text):
    for parse in (params.parse_steady_window, params.parse_steady_ramp, params.parse_steady_timeout):
        with pytest.raises(BadValue, match="is not a whole number of seconds"):
            parse(text)


@given(alpha=typed)
def test_alpha_is_stated_and_checked(alpha):
    try:
        value = parse_alpha(alpha)
    except BadValue as e:
        assert "0.001" in str(e) and "0.5" in str(e)
        return
    assert 0.001 <= value < 0.5


def _saved(kind: str) -> dict:
    return json.loads((SAVED / f"{kind}.json").read_text())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(alpha=st.floats(0.001, 0.5, exclude_max=True),
       figures=st.lists(st.one_of(st.floats(FIGURE_MIN, FIGURE_MAX), st.sampled_from([FIGURE_MIN, FIGURE_MAX, 1.0])),
                        min_size=4, max_size=4))
@example(alpha=0.49999999999999994, figures=[1.0, 2.0, 1.5, 3.0])  # 1 - alpha is 0.5 in floating point
def test_every_alpha_in_its_range_judges_whatever_the_runs_hold(alpha, figures):
    """A stated range is one every judge takes: no overflow, no refusal after the runs (an alpha of 1e-10 ran every
    run and then raised OverflowError), for runs as far apart as a figure may be."""
    raw = _saved("experiment")
    for run, x in zip(raw["runs"], figures, strict=True):
        run["metrics"] = dict.fromkeys(run["metrics"], x)  # every figure, the primary and the secondary ones
    doc = read_experiment(raw, "x.json")
    for kind in ("experiment", "alternation", "sequential", "command"):
        judge(read_experiment(_saved(kind), f"{kind}.json"), alpha)
    judged = judge(doc, alpha)
    assert judged.comparisons and text_report(doc, judged, details=True)
    for kind in ("matrix", "sweep"):
        judge_matrix(decode_matrix(_saved(kind), f"{kind}.json"), alpha)
    other = replace(doc, host="other", started=doc.started + 1)
    hosts_pooled([("a", doc), ("b", other)], alpha, None)


# --- variants and candidates ----------------------------------------------------------------------------------

variant_text = st.one_of(
    st.text(max_size=60),
    st.lists(st.text(st.sampled_from("abfqnoe-:=,._/;1 ０"), max_size=12), max_size=20).map(",".join),
    st.lists(st.from_regex(r"\A[a-z][a-z-]{0,8}(:[a-z_]{1,10}=-?[0-9]{1,6}){0,2}\Z"), min_size=1, max_size=20)
    .map(",".join),
)


@given(text=variant_text)
def test_candidates_are_sysfs_words_and_bounded_or_one_refusal(text):
    try:
        found = parse_candidates(text)
    except BadInput:
        return
    assert 1 <= len(found) <= MAX_CANDIDATES
    for v in found:
        assert SCHEDULER_NAME.fullmatch(v.scheduler), v
        assert all(SETTING_NAME.fullmatch(k) and SETTING_VALUE.fullmatch(x) for k, x in v.settings), v
    again = parse_candidates(",".join(v.label.split("#")[0] for v in found))
    assert again == found  # what was read reads back the same


@pytest.mark.parametrize("text", ["bfq:../../../etc/x=1", "bfq:slice_idle=1e400", "kyber:read_lat_nsec=1;touch /x",
                                  "bfq:slice_idle=1_000", "bfq:slice_idle=１", "bfq:slice_idle= 1", "BFQ",
                                  "bfq/../x", "mq-deadline:read_expire=100:=1", "a" * 16, "bfq:x=" + "9" * 20])
def test_what_a_candidate_never_is(text):
    with pytest.raises(BadInput):
        parse_candidates(text)
    with pytest.raises(BadInput):
        parse_variants(f"none,{text}")


def test_candidates_and_variants_are_bounded():
    parse_candidates(",".join(["bfq"] * MAX_CANDIDATES))
    with pytest.raises(BadInput, match=f"at most {MAX_CANDIDATES}"):
        parse_candidates(",".join(["bfq"] * (MAX_CANDIDATES + 1)))
    with pytest.raises(BadInput, match="at most 16"):
        parse_variants(",".join(["bfq:slice_idle=0"] * 200))


@pytest.mark.parametrize(("text", "where"), [("none,,bfq", "item 2 of 3"), (",bfq", "the first item"),
                                             ("none,bfq,", "the last item"), ("none, ,bfq", "item 2 of 3")])
def test_an_empty_variant_is_named_in_one_sentence(text, where):
    with pytest.raises(BadInput) as e:
        parse_variants(text)
    assert str(e.value) == (f"--schedulers {text!r}: {where} is empty (a comma too many); give the variants between "
                            "single commas, e.g. none,bfq")
