"""Parsers of outside input under random and mutated input: a result or a typed error, never a traceback."""

from __future__ import annotations

import contextlib
import copy

from hypothesis import given, settings
from hypothesis import strategies as st
from test_fio import job_json

from iosched.core.kernel.procfs import DiskCounters, parse_diskstats, parse_proc_stat
from iosched.core.load.fio import FioFailed, parse_result

_token = st.one_of(st.integers(0, 2**64 - 1).map(str), st.sampled_from(["-5", "+5", "1_000", "٣", "x", "", "1e3"]),
                   st.text(max_size=6))
_line = st.lists(_token, min_size=0, max_size=22).map(" ".join)


@settings(max_examples=500, deadline=None)
@given(st.lists(_line, max_size=8).map("\n".join))
def test_random_diskstats_text_gives_plain_counters(text):
    for name, c in parse_diskstats(text).items():
        assert isinstance(c, DiskCounters) and name
        assert all(isinstance(v, int) and v >= 0 for v in c)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**63), min_size=19, max_size=19), st.sampled_from([14, 18, 20]))
def test_well_formed_diskstats_lines_parse_back(values, width):
    line = " ".join(map(str, [values[0], values[1], "sdq", *values[2:width - 1]]))
    (c,) = parse_diskstats(line).values()
    assert list(c)[:width - 1] == values[:width - 1] and not any(list(c)[width - 1:])


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(_line.map(lambda s: "cpu" + s), _line.map(lambda s: "cpu0 " + s), _line), max_size=8)
       .map("\n".join))
def test_random_proc_stat_text_gives_plain_counters(text):
    for key, c in parse_proc_stat(text).items():
        assert key and all(isinstance(v, int) and v >= 0 for v in c)


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
                     lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids, max_size=3),
                     max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(_json)
def test_random_fio_json_is_a_result_or_fio_failed(obj):
    with contextlib.suppress(FioFailed):
        parse_result(obj)


def _paths(obj, prefix=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield (*prefix, k)
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield (*prefix, i)
            yield from _paths(v, (*prefix, i))


_BASE = job_json(1000, 500)
_PATHS = list(_paths(_BASE))


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_PATHS), st.one_of(st.just("drop"), _json)), min_size=1, max_size=4))
def test_mutated_fio_json_is_a_result_or_fio_failed(mutations):
    obj = copy.deepcopy(_BASE)
    for path, value in mutations:
        parent = obj
        try:
            for key in path[:-1]:
                parent = parent[key]
            if value == "drop":
                del parent[path[-1]]
            else:
                parent[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    try:
        r = parse_result(obj)
    except FioFailed:
        return
    assert r.total_ios > 0 and r.iops >= 0 and r.mb_s >= 0 and r.runtime_s >= 0
