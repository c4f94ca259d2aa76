"""Recordings of any size and shape: read streaming with bounded memory, refused in one sentence that says what
the file is, replayed from windows that match the whole, and a replay that quits at once while it loads."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from recording_support import header, write_recording

from iosched.cli.main import main
from iosched.core.base.errors import BadInput
from iosched.core.live.monitor import ReplayMonitor
from iosched.core.live.recording_reader import MAX_DEVICES, MAX_LINE_BYTES, load, scan
from iosched.core.live.sampler import compute_rates
from iosched.tui.app import IoschedApp
from iosched.tui.widgets.status_bar import StatusBar

from conftest import run_cli

_SUITABLE = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


def _report(path, *flags: str) -> tuple[int, str]:
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(["report", str(path), *flags])
    return code, err.getvalue()


def _one_sentence_about_the_recording(err: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "recording" in lines[0] or "not a regular file" in lines[0], lines[0]


def _loads_for_replay(path) -> None:
    """What the replay's worker does (scan) and what its screen then reads (windows at the end and start)."""
    rec = scan(path)
    if rec.count < 2:
        return
    mon = ReplayMonitor(rec, capacity=8)
    mon.seek(mon.length)
    mon.seek(1)
    mon.seek(mon.length // 2)


_value = st.one_of(st.none(), st.booleans(), st.integers(-3, 1 << 65), st.floats(), st.text(max_size=4))
_counts = st.lists(st.integers(-1, 1 << 64) | _value, min_size=0, max_size=19)
_sample = st.fixed_dictionaries(
    {"t": st.just("s"), "m": st.integers(-2, 40) | _value,
     "d": st.dictionaries(st.sampled_from(["sda", "sdb", "loop0"]), _counts | _value, max_size=3) | _value,
     "c": st.dictionaries(st.sampled_from(["all", "0"]), _counts, max_size=2) | _value},
    optional={"gone": st.lists(st.sampled_from(["sda", "sdb"]) | _value, max_size=2) | _value})
_event = st.fixed_dictionaries({"t": st.just("e"), "m": st.integers(0, 40) | _value,
                                "dev": st.sampled_from(["sda", "x"]) | _value, "name": st.just("scheduler") | _value,
                                "old": _value, "new": st.sampled_from(["bfq", "none"]) | _value})
_dev = st.fixed_dictionaries({"t": st.just("dev"), "m": st.integers(0, 40) | _value,
                              "device": st.just({"name": "sdb"}) | _value})
_line = st.one_of(_sample.map(json.dumps), _event.map(json.dumps), _dev.map(json.dumps), st.text(max_size=10))
# "t" first, as the recorder writes it (a report tells a recording by its first bytes).
_header = st.fixed_dictionaries({"version": st.just(1) | _value},
                                optional={"start_wall": st.just(0) | _value, "interval": st.just(1) | _value,
                                          "devices": st.none() | _value, "inventory": st.just([]) | _value}
                                ).map(lambda h: {"t": "header", **h})


def _file(tmp_path_factory, head: dict, lines: list[str], tail: bytes):
    f = tmp_path_factory.mktemp("rec") / "r.jsonl"
    f.write_bytes(("\n".join([json.dumps(head, separators=(",", ":")), *lines]) + "\n").encode() + tail)
    return f


@settings(max_examples=200, deadline=None, suppress_health_check=_SUITABLE)
@given(_header, st.lists(_line, max_size=12), st.binary(max_size=12), st.sampled_from([(), ("--json",), ("--csv",)]))
def test_random_recordings_are_reported_or_refused_in_one_sentence(tmp_path_factory, head, lines, tail, flags):
    f = _file(tmp_path_factory, head, lines, tail)
    before = f.read_bytes()
    code, err = _report(f, *flags)
    assert code in (0, 2)
    if code == 2:
        _one_sentence_about_the_recording(err)
        assert "is not an iosched recording" in err
    assert f.read_bytes() == before


@settings(max_examples=200, deadline=None, suppress_health_check=_SUITABLE)
@given(_header, st.lists(_line, max_size=12), st.binary(max_size=12))
def test_random_recordings_load_for_replay_or_are_refused(tmp_path_factory, head, lines, tail):
    f = _file(tmp_path_factory, head, lines, tail)
    try:
        _loads_for_replay(f)
    except BadInput as e:
        assert str(e).startswith(f"{f} is not an iosched recording: ") and "\n" not in str(e)


def test_a_bad_interval_is_told_as_what_the_file_is_not(tmp_path):
    f = tmp_path / "r.jsonl"
    f.write_text(header(["sda"]).replace('"interval":0.5', '"interval":0') + "\n")
    code, err = _report(f)
    assert code == 2 and err.strip() == f"iosched: {f} is not an iosched recording: interval must be > 0"


@settings(max_examples=60, deadline=None, suppress_health_check=_SUITABLE)
@given(st.integers(2, 90), st.integers(1, 6), st.integers(1, 9), st.integers(0, 7), st.data())
def test_windows_read_from_checkpoints_match_the_whole_recording(tmp_path_factory, n, every, capacity, switch, data):
    """A window read from a checkpoint (thinned or not) is the window of the whole: rates, schedulers, markers."""
    f = write_recording(tmp_path_factory.mktemp("w") / "r.jsonl", n, busy=2, idle=2, switch_every=switch)
    whole = load(f)
    rates = [compute_rates(a, b) for a, b in zip(whole.samples, whole.samples[1:])]
    rec = scan(f, every=every, budget=data.draw(st.sampled_from([1, 1 << 30])))
    mon = ReplayMonitor(rec, capacity=capacity)
    for pos in data.draw(st.lists(st.integers(-2, n + 2), min_size=1, max_size=6)):
        mon.seek(pos)
        p = mon.pos
        assert 1 <= p == max(1, min(n - 1, pos))
        window = rates[max(0, p - capacity):p]
        assert mon.history.recent_times() == [r.time for r in window]
        assert mon.history.disk_series("vda", "r_s") == [r.disks["vda"].r_s for r in window]
        assert mon.last_sample == whole.samples[p]
        at = whole.samples[p].time
        switches = [e for e in whole.events if e.time <= at]
        assert mon.device("vda").scheduler == (switches[-1].new if switches else "none")
        since = window[0].time - window[0].interval
        assert {m.time for m in mon.markers} >= {e.time for e in switches if e.time > since}


def _peak_mb(fn) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_length_of_the_recording(tmp_path):
    short = write_recording(tmp_path / "short.jsonl", 800, busy=2, idle=2, switch_every=500)
    long = write_recording(tmp_path / "long.jsonl", 8_000, busy=2, idle=2, switch_every=500)

    def replay(path) -> None:
        mon = ReplayMonitor(scan(path))
        mon.seek(mon.length)
        mon.seek(1)
        mon.seek(mon.length // 2)

    short_mb, long_mb = _peak_mb(lambda: replay(short)), _peak_mb(lambda: replay(long))
    # 10 times the samples: the checkpoints grow (a few hundred bytes per 256 samples), nothing else does.
    assert long_mb < short_mb + 1.0, (short_mb, long_mb)
    report_mb = _peak_mb(lambda: _report(long))
    assert report_mb < 4.0, report_mb


def test_a_line_longer_than_the_bound_is_refused_without_reading_it_whole(tmp_path):
    f = tmp_path / "r.jsonl"
    with open(f, "w") as out:
        out.write(header(["sda"]) + "\n")
        out.write('{"t":"s","m":1,"d":{' + '"x":[' * (MAX_LINE_BYTES // 5 + 10))  # one line, 4 MiB and more

    def refused() -> None:
        with pytest.raises(BadInput):
            scan(f)

    peak = _peak_mb(refused)
    assert peak < 3 * MAX_LINE_BYTES / 1e6
    code, err = _report(f)
    assert code == 2 and "line 2 is longer than 4 MiB" in err


def _many_devices(tmp_path, n: int):
    f = tmp_path / "many.jsonl"
    disks = ",".join(f'"d{i}":[8,{i % 256},{i},0,0,0,0,0,0,0,0,0,0]' for i in range(n))
    f.write_text(header(["sda"]) + "\n" + f'{{"t":"s","m":1,"d":{{{disks}}},"c":{{}}}}' + "\n")
    return f


def test_too_many_devices_are_one_sentence_from_report(tmp_path):
    f = _many_devices(tmp_path, MAX_DEVICES + 1)
    out = run_cli("report", str(f), timeout=60)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out
    assert f"names more than {MAX_DEVICES} devices" in out.stderr and "Traceback" not in out.stderr
    assert run_cli("report", str(_many_devices(tmp_path, MAX_DEVICES - 1)), timeout=60).returncode == 0  # + sda


async def test_too_many_devices_end_the_replay_with_one_sentence(tmp_path):
    f = _many_devices(tmp_path, MAX_DEVICES + 1)
    app = IoschedApp(replay=f, replay_name=f.name)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(200):
            if app.replay_failure is not None:
                break
            await pilot.pause(0.05)
    assert app.return_value == 2
    assert f"names more than {MAX_DEVICES} devices" in str(app.replay_failure)


async def test_q_quits_at_once_while_a_large_recording_is_loading(tmp_path):
    f = write_recording(tmp_path / "big.jsonl", 300_000, busy=2, idle=2)
    app = IoschedApp(replay=f, replay_name=f.name)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.view
        for _ in range(400):  # the part read so far shows while the rest is read
            await pilot.pause(0.05)
            if screen.replay.length > 0:
                break
        assert screen.reading and screen.replay.length > 0
        assert not screen.loading  # Textual's loading indicator would hide the screen
        assert "read" in app.query_one(StatusBar)._text and "% of" in app.query_one(StatusBar)._text
        await pilot.press("q")
    assert app.return_value == 0
    for _ in range(600):  # the reader stops at its next look at the cancel flag (every few thousand lines)
        if screen.load_stopped:
            break
        await asyncio.sleep(0.1)
    assert screen.load_stopped  # it stopped part-way: the rest of the file was never read
