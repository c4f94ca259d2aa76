"""A timed replay's lag against its capture's timing: measured from fio's runtime (whole runs) or from the requests a
run cut at --runtime issued, the bound past which a run is invalid, and how it reads back and is shown."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest
from doc_support import experiment_doc

from iosched.core.base.decode import DecodeError, decode
from iosched.core.documents.document import RunDoc
from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.load.iolog import CaptureWriter, SeriesDoc, write_meta
from iosched.core.load.replay import first_timed_us, prepare_replay
from iosched.core.load.replay_lag import (
    LAG_FLOOR_S,
    ReplayLag,
    lag_bound,
    request_time_s,
    requests_lag,
    seconds_text,
    span_lag,
)
from iosched.core.present.report import replay_timing

DEV_SIZE = 64 << 20
T0 = 10**12


def capture(path: Path, times_ms: list[int], end_ms: int) -> Path:
    """A capture of 4 KiB reads begun at ``times_ms`` (from its start), ending at ``end_ms``."""
    dev = DeviceDoc(name="loop7", maj_min="7:7", size_bytes=DEV_SIZE, rotational=False, removable=False,
                    read_only=False, scheduler="none", schedulers=["none", "bfq"], nr_requests=128, read_ahead_kb=128)
    with open(path, "w") as out:
        w = CaptureWriter(out, "/dev/loop7", T0)
        for i, t in enumerate(times_ms):
            w.add(T0 + t * 10**6, 0, i * 8, 4096, 1)
        end_us = w.finish(T0 + end_ms * 10**6)
    write_meta(w.meta(iolog=path.name, device=dev, kernel="6.1.0", started="2026-11-25T00:00:00+00:00",
                      duration_s=end_us / 1e6, ended="duration", timestamps="begin", lost=0, untracked=0), path)
    return path


def test_the_bound_is_a_tenth_of_the_capture_and_at_least_the_floor():
    assert lag_bound(3.0) == LAG_FLOOR_S == 1.0
    assert lag_bound(20.0) == pytest.approx(2.0) and lag_bound(600.0) == pytest.approx(60.0)


def test_a_whole_run_is_measured_from_the_first_timed_request_to_the_end():
    kept = span_lag(3.13, start_us=100_000, end_us=3_200_000)
    assert kept == ReplayLag(lag_s=0.03, capture_s=3.1, ran_s=3.13, bound_s=1.0, basis="span")
    assert not kept.behind
    # The case a user met: a 20 s capture that took 30 s a run.
    slow = span_lag(30.0, start_us=0, end_us=20_000_000)
    assert slow.lag_s == 10.0 and slow.bound_s == 2.0 and slow.behind
    assert slow.reason() == ("the timed replay fell 10.00 s behind the capture's timing (more than 2.00 s: a tenth "
                             "of its 20.0 s, at least 1 s), so its latencies are not the captured workload's")
    # fio's runtime is in whole milliseconds: a hair under the capture's timing is no lead.
    assert span_lag(3.0995, 100_000, 3_200_000).lag_s == 0.0
    assert span_lag(1.0, 5_000_000, 5_000_000).capture_s == 0.0  # every request at once: no timing to keep


def test_a_run_cut_at_its_runtime_is_measured_by_its_requests():
    # 10 requests a second for 10 s: the 30th had begun by 3 s into the capture.
    series = SeriesDoc(interval_s=1.0, iops=[10.0] * 10, mb_s=[0.04] * 10, depth=[1.0] * 10)
    assert request_time_s(series, 30) == pytest.approx(3.0) and request_time_s(series, 35) == pytest.approx(3.5)
    assert request_time_s(series, 1000) == 10.0  # more than it holds: its end
    # Quiet intervals take no request: the 11th comes after the gap.
    gaps = SeriesDoc(interval_s=0.5, iops=[20.0, 0.0, 0.0, 20.0], mb_s=[0.0] * 4, depth=[1.0] * 4)
    assert request_time_s(gaps, 11) == pytest.approx(1.55)
    kept = requests_lag(3.0, 30, 0, series)
    assert kept.basis == "requests" and kept.lag_s == 0.0
    behind = requests_lag(3.0, 15, 0, series)  # in 3 s it issued what the capture issued in 1.5 s
    assert behind.lag_s == 1.5 and behind.capture_s == 1.5 and behind.behind


def test_a_replay_job_knows_where_fios_clock_starts_and_measures_timed_runs_only(tmp_path):
    # The first request at the capture's very start (0 µs): fio waits no gap for it, nor for the next one,
    # whose gap is counted from a time of 0 too. Its clock starts at the first time after 0.
    log = capture(tmp_path / "c.iolog", [0, 250, 500, 750, 1000], end_ms=1500)
    job = prepare_replay(log, "timed", "loop9", DEV_SIZE)
    try:
        assert first_timed_us(Path(job.iolog)) == job.start_us == 250_000
        whole = job.lag(1.30, 5)
        assert whole is not None and whole.basis == "span" and whole.capture_s == 1.25 and whole.lag_s == 0.05
        cut = job.lag(1.0, 3)  # cut at --runtime 1: three requests issued, the third captured at 0.5 s
        assert cut is not None and cut.basis == "requests" and 0.5 <= cut.lag_s <= 0.75  # to a 0.1 s interval
    finally:
        job.release()
    fast = prepare_replay(log, "fast", "loop9", DEV_SIZE)
    fast.release()
    assert fast.lag(9.0, 5) is None  # a fast replay keeps no timing
    late = capture(tmp_path / "late.iolog", [2000, 2100], end_ms=3000)  # an idle start is not waited either
    job = prepare_replay(late, "timed", "loop9", DEV_SIZE)
    job.release()
    idle = job.lag(1.0, 2)
    assert job.start_us == 2_000_000 and idle is not None and idle.capture_s == 1.0


def run_doc(lag: ReplayLag | None) -> dict:
    run = {"index": 0, "variant": "none", "start": 0.0, "end": 2.0, "valid": not (lag and lag.behind),
           "invalid_reason": lag.reason() if lag and lag.behind else None, "config": {"scheduler": "none"},
           "metrics": {"clat_p99_us": 120.0, **({"replay_lag_s": lag.lag_s} if lag else {})}}
    if lag is not None:
        run["replay"] = asdict(lag)
    return run


def test_a_run_with_its_lag_reads_back_as_its_declared_type_and_odd_values_are_refused():
    lag = span_lag(2.4, 100_000, 2_100_000)
    back = decode(RunDoc, run_doc(lag), where="run")
    assert back.replay == lag and back.metrics["replay_lag_s"] == 0.4
    assert decode(RunDoc, run_doc(None), where="run").replay is None
    for key, bad in (("lag_s", -1.0), ("basis", "guess"), ("bound_s", "1")):
        doc = run_doc(lag)
        doc["replay"][key] = bad
        with pytest.raises(DecodeError):
            decode(RunDoc, doc, where="run")


def test_the_report_says_in_one_line_whether_the_runs_kept_the_timing():
    assert replay_timing(experiment_doc({"runs": [run_doc(None)]})) is None
    kept = replay_timing(experiment_doc({"runs": [run_doc(span_lag(2.003, 100_000, 2_100_000))] * 2}))
    assert kept == "timed replay: every run kept the capture's timing to within 3 ms (a run more than 1.00 s behind " \
                   "would be invalid)"
    slow = replay_timing(experiment_doc({"runs": [run_doc(span_lag(2.003, 100_000, 2_100_000)),
                                                  run_doc(span_lag(3.9, 100_000, 2_100_000))]}))
    assert slow is not None and slow.startswith("timed replay: 1 of 2 run(s) fell behind the capture's timing by "
                                                "more than 1.00 s (up to 1.90 s) and are invalid")
    assert seconds_text(0.0004) == "0 ms" and seconds_text(0.9996) == "1.00 s"
