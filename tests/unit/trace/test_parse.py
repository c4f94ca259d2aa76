"""bpftrace's JSON output -> typed samples: a recorded run (bpftrace 0.17, bfq on a loop device under fio),
the same run cut short and mixed with garbage, and random input."""

from __future__ import annotations

import contextlib
import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosched.core.trace.histograms import Log2Hist
from iosched.core.trace.parse import (
    FrameBuilder,
    HistRecord,
    InfoRecord,
    MapRecord,
    TickRecord,
    TraceOutputError,
    interval_sample,
    op_of,
    parse_line,
)

RECORDED = Path(__file__).resolve().parents[2] / "data" / "bpftrace-0.17-block-bfq.jsonl"
LOOP = 7340072  # dev_t of loop40 as the kernel prints it: 7 << 20 | 40
NAMES = {LOOP: "loop40"}


def frames_of(lines):
    b = FrameBuilder()
    frames = [f for f in (b.feed(line) for line in lines) if f is not None]
    return b, frames


def samples_of(lines):
    b, frames = frames_of(lines)
    return b, [s for s in (interval_sample(p, c, NAMES) for p, c in itertools.pairwise(frames)) if s is not None]


def recorded_lines() -> list[str]:
    return RECORDED.read_text().splitlines()


def test_recorded_run_parses_into_samples():
    b, samples = samples_of(recorded_lines())
    assert b.bad_lines == 0
    assert len(samples) == 5
    assert samples[0].devices == {}  # from the BEGIN tick to the first interval: no IO yet
    first = samples[1]
    assert first.interval == pytest.approx(0.500, abs=0.001)
    d = first.devices["loop40"]
    # Counters are kept per CPU (keys "dev,cpu,rwbs"): both CPUs are added up.
    assert d.ops["read"].ios == 32 + 161 and d.ops["write"].ios == 35 + 158
    assert d.ios == 386 and d.bytes == 386 * 4096
    # Under bfq every request was inserted: time in the scheduler is non-zero.
    assert d.sched.total > 0 and d.sched.counts[0] == 0
    assert d.sched.percentile(0.5) > 0
    assert first.processes[0].comm == "fio" and first.processes[0].pid == 6508
    assert first.processes[0].ios == 81 + 305
    # The cumulative maps give each interval its own share; the idle last interval is empty.
    assert samples[2].devices["loop40"].ios == 220 + 228 + 266 + 274 - 386
    assert samples[4].devices == {}
    assert total_ios(samples) == 273 + 280 + 320 + 327


def total_ios(samples) -> int:
    return sum(s.devices["loop40"].ios for s in samples if "loop40" in s.devices)


def test_total_mean_comes_from_the_exact_sum():
    _, samples = samples_of(recorded_lines())
    d = samples[1].devices["loop40"]
    assert d.total_ns == 4427234 + 284497773 + 366228527 + 865164076
    assert d.to_json()["total_mean_us"] == pytest.approx(d.total_ns / d.total.total / 1e3, abs=0.1)


def test_json_contract_shape():
    _, samples = samples_of(recorded_lines())
    obj = samples[1].to_json(1.0)
    dev = obj["devices"]["loop40"]
    d = samples[1].devices["loop40"]
    for key, hist in (("sched_us", d.sched), ("device_us", d.device), ("total_us", d.total)):
        assert set(dev[key]) == {"p50", "p99", "hist"}
        assert all(len(row) == 3 and row[0] < row[1] for row in dev[key]["hist"])
        assert sum(row[2] for row in dev[key]["hist"]) == hist.total
        assert dev[key]["p50"] <= dev[key]["p99"]
    assert set(dev["ops"]) == {"read", "write"}
    assert dev["ios"] == 386
    json.dumps(obj)


def test_truncated_and_garbage_lines_are_skipped_and_counted():
    lines = recorded_lines()
    assert '"@sched"' in lines[6]
    cut = lines[6][: len(lines[6]) // 2]  # a hist line cut short (bpftrace killed mid-write)
    noisy = [*lines[:6], cut, "garbage", "", '{"type": 3}', "[1, 2]", '{"type": "map", "data": {"@x": {"k": "v"}}}',
             *lines[7:]]
    b, samples = samples_of(noisy)
    assert b.bad_lines == 5
    assert total_ios(samples) == 1200


def test_a_lost_print_keeps_the_count_right():
    """bpftrace drops output events when its reader lags: a frame without @ios must not double count later."""
    lines = [ln for i, ln in enumerate(recorded_lines()) if not (i == 14 and '"@ios"' in ln)]
    assert len(lines) == len(recorded_lines()) - 1
    _, samples = samples_of(lines)
    assert total_ios(samples) == 1200


def test_output_cut_before_the_first_tick_gives_no_sample():
    b, samples = samples_of(recorded_lines()[:1])
    assert samples == [] and b.bad_lines == 0


def test_records():
    assert parse_line('{"type": "printf", "data": "iosched-tick 12\\n"}') == TickRecord(12)
    assert isinstance(parse_line('{"type": "attached_probes", "data": {"probes": 7}}'), InfoRecord)
    # The kernel's rwbs is a char[10]: bytes after its NUL can make two map entries print as one key.
    assert parse_line('{"type": "map", "data": {"@ios": {"1,0,R": 2, "1,0,R": 3}}}') == MapRecord("ios", {"1,0,R": 5})
    rec = parse_line('{"type": "hist", "data": {"@h": {"1,W": [{"min": 0, "max": 0, "count": 2}, '
                     '{"min": 4, "max": 7, "count": 1}], "1,W": [{"min": 4, "max": 7, "count": 3}]}}}')
    assert rec == HistRecord("h", {"1,W": Log2Hist((2, 0, 0, 4))})
    for bad in ('{"type": "printf", "data": "iosched-tick x"}', '{"type": "map", "data": {"@m": {"k": 1.5}}}',
                '{"type": "hist", "data": {"@h": {"k": [{"min": -4, "count": 1}]}}}', "{", '"x"',
                '{"type": "map", "data": {"nope": {}}}'):
        with pytest.raises(TraceOutputError):
            parse_line(bad)


@pytest.mark.parametrize(("rwbs", "op"), [("R", "read"), ("RA", "read"), ("RSM", "read"), ("W", "write"),
                                          ("WS", "write"), ("FWS", "write"), ("WFS", "write"), ("D", "discard"),
                                          ("DE", "discard"), ("F", "flush"), ("FF", "flush"), ("N", "other"),
                                          ("", "other")])
def test_op_of_rwbs(rwbs, op):
    assert op_of(rwbs) == op


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                           max_leaves=20)


@settings(max_examples=300)
@given(st.text())
def test_random_text_is_a_typed_error_or_a_record(text):
    try:
        rec = parse_line(text)
    except TraceOutputError:
        return
    assert isinstance(rec, MapRecord | HistRecord | TickRecord | InfoRecord)


@settings(max_examples=300)
@given(st.sampled_from(["map", "hist", "printf", "time", "lost_events"]), json_values)
def test_random_records_never_raise_anything_else(kind, data):
    line = json.dumps({"type": kind, "data": data})
    with contextlib.suppress(TraceOutputError):
        parse_line(line)


@settings(max_examples=100)
@given(st.lists(st.text(max_size=80) | st.sampled_from(recorded_lines()), max_size=30))
def test_frame_builder_survives_any_line_sequence(lines):
    _b, frames = frames_of(lines)
    for p, c in itertools.pairwise(frames):
        s = interval_sample(p, c, NAMES)
        if s is not None:
            assert all(d.ios >= 0 for d in s.devices.values())


def test_discards_and_flushes_are_requests_but_no_data():
    def line(name: str, values: dict) -> str:
        return json.dumps({"type": "map", "data": {f"@{name}": values}})

    def tick(ns: int) -> str:
        return json.dumps({"type": "printf", "data": f"iosched-tick {ns}"})

    keys = {f"{LOOP},0,R": (10, 40960), f"{LOOP},1,W": (5, 20480), f"{LOOP},0,D": (2, 1 << 30),
            f"{LOOP},1,FF": (3, 0), f"{LOOP},0,FWS": (1, 4096)}
    lines = [tick(0), line("ios", {k: n for k, (n, _) in keys.items()}),
             line("bytes", {k: b for k, (_, b) in keys.items()}), tick(1_000_000_000)]
    _, (sample,) = samples_of(lines)
    dev = sample.devices["loop40"]
    assert dev.ios == 21 and dev.bytes == 40960 + 20480 + 4096  # a preflush write is a write
    assert (dev.ops["discard"].ios, dev.ops["discard"].bytes, dev.ops["discard"].extent_bytes) == (2, 0, 1 << 30)
    assert (dev.ops["flush"].ios, dev.ops["flush"].bytes) == (3, 0)
    assert dev.to_json()["bytes"] == dev.bytes and dev.to_json()["ops"]["discard"]["extent_bytes"] == 1 << 30
