"""A replay's latency is its requests' in the block layer: fio's figure is left out when fio's own waiting is more than
the stated share of it, the block layer's when it disagrees with the device's own await."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from capture_support import DEV_SIZE, make_capture, mixed
from hypothesis import given
from hypothesis import strategies as st

from iosched.core.load.replay import prepare_replay
from iosched.core.load.replay_latency import (
    AWAIT_FACTOR,
    BLOCK_FIGURES,
    FIO_FIGURES,
    MAX_ENGINE_SHARE,
    awaits_agree,
    checked,
    engine_share,
    fio_usable,
    latency_note,
)


@dataclass(frozen=True)
class Op:
    mean_us: float | None
    p50_us: float | None = None
    p99_us: float | None = None


@dataclass(frozen=True)
class Trace:
    reads: Op | None = Op(540.0)
    writes: Op | None = None


def run_metrics(fio_mean: float, block_mean: float, r_await_ms: float = 0.54) -> dict[str, float | None]:
    """A timed replay's run as the runner has it after tracing: fio's figures, the block layer's, the device's."""
    return {"iops": 1000.0, "mb_s": 4.1, "clat_mean_us": fio_mean, "clat_p50_us": fio_mean * 0.9,
            "clat_p99_us": fio_mean * 1.8, "clat_p999_us": fio_mean * 2.5, "dev_r_await": r_await_ms,
            "dev_w_await": 0.0, "total_mean_us": block_mean, "total_p50_us": block_mean * 0.5,
            "total_p99_us": block_mean * 8, "replay_lag_s": 0.01}


def test_the_share_is_what_fio_added_above_the_block_layer():
    assert engine_share(12_000.0, 540.0) == pytest.approx(0.955)
    assert engine_share(110.0, 100.0) == pytest.approx(1 / 11)
    assert engine_share(90.0, 100.0) == 0.0  # fio's below the block layer's: it added nothing
    assert engine_share(0.0, 100.0) == 0.0
    assert fio_usable(MAX_ENGINE_SHARE) and not fio_usable(MAX_ENGINE_SHARE + 1e-9)
    assert awaits_agree(540.0, 540.0) and awaits_agree(100.0, 100.0 * AWAIT_FACTOR)
    assert not awaits_agree(100.0, 100.0 * AWAIT_FACTOR * 1.01) and not awaits_agree(0.0, 5.0)


def test_fio_mostly_waiting_on_itself_is_left_out_and_the_block_layer_judged():
    # The 1,000 IO/s capture replayed at depth 10: fio said 12 ms, the block layer 0.54 ms, as the device's await.
    metrics = run_metrics(12_065.6, 541.6, r_await_ms=0.543)
    out, rec = checked(metrics, Trace(Op(541.6)))
    assert not any(k in out for k in FIO_FIGURES)
    assert all(out[k] == metrics[k] for k in (*BLOCK_FIGURES, "iops", "mb_s", "dev_r_await", "replay_lag_s"))
    assert not rec.fio_kept and rec.block_kept and rec.role is None
    assert rec.engine_share == pytest.approx(0.9551, abs=1e-4) and rec.max_share == MAX_ENGINE_SHARE
    assert rec.fio_mean_us == 12_065.6 and rec.block_mean_us == 541.6
    assert rec.await_us == pytest.approx(543.0) and rec.block_await_us == 541.6
    assert rec.note == ("fio's latency is 96% fio's own (12.07 ms against 542 µs in the block layer; more than 25% is "
                        "not the device's): its latency figures are left out")
    assert metrics["clat_p99_us"] is not None  # the run's figures are not changed in place


def test_fio_close_to_the_block_layer_stays_beside_it():
    metrics = run_metrics(110.0, 100.0, r_await_ms=0.1)
    out, rec = checked(metrics, Trace(Op(100.0)))
    assert out == metrics
    assert rec.fio_kept and rec.block_kept and rec.note is None and rec.engine_share == pytest.approx(0.0909, abs=1e-4)


def test_a_block_layer_far_from_the_devices_own_await_is_left_out_and_fio_with_it():
    metrics = run_metrics(110.0, 100.0, r_await_ms=0.5)  # diskstats says 500 µs, the tracer 100 µs: it missed some
    out, rec = checked(metrics, Trace(Op(100.0)))
    assert not any(k in out for k in (*FIO_FIGURES, *BLOCK_FIGURES))
    assert not rec.block_kept and not rec.fio_kept
    assert rec.note == ("the block layer's mean (100 µs) and the device's own await (500 µs) differ by more than 2x, "
                        "so the tracer missed requests: its figures are left out; fio's latency figures with them, "
                        "nothing left to check them against")
    # Writes are checked against w_await when the replay read nothing.
    writes = {**metrics, "dev_r_await": 0.0, "dev_w_await": 0.1}
    out, rec = checked(writes, Trace(None, Op(100.0)))
    assert rec.block_kept and rec.await_us == pytest.approx(100.0) and out["total_p99_us"] == 800.0


def test_without_the_block_layer_fios_figure_is_never_judged():
    metrics = {k: v for k, v in run_metrics(12_000.0, 1.0).items() if k not in BLOCK_FIGURES}
    out, rec = checked(metrics, None)  # tracing stopped before this run
    assert not any(k in out for k in (*FIO_FIGURES, *BLOCK_FIGURES))
    assert not rec.fio_kept and not rec.block_kept and rec.engine_share is None
    assert rec.note == ("without the block layer's figures fio's latency cannot be told from fio's own waiting: its "
                        "latency figures are left out")


def test_a_foreground_replay_beside_a_write_flood_is_judged_on_its_reads():
    metrics = {**run_metrics(30_000.0, 9_000.0, r_await_ms=0.15), "fg:clat_mean_us": 12_000.0,
               "fg:clat_p99_us": 20_000.0, "bg:mb_s": 150.0}
    trace = Trace(Op(150.0, 120.0, 900.0), Op(40_000.0, 38_000.0, 90_000.0))
    out, rec = checked(metrics, trace, "fg")
    assert (out["fg:total_mean_us"], out["fg:total_p50_us"], out["fg:total_p99_us"]) == (150.0, 120.0, 900.0)
    assert rec.role == "fg" and rec.block_mean_us == 150.0 and rec.fio_mean_us == 12_000.0 and not rec.fio_kept
    assert rec.await_us == pytest.approx(150.0) and rec.block_await_us == 150.0 and rec.block_kept
    assert not any(k in out for k in ("fg:clat_mean_us", "fg:clat_p99_us", *FIO_FIGURES))  # the pooled hold fg's too
    assert out["bg:mb_s"] == 150.0 and out["total_mean_us"] == 9_000.0
    # A capture that only writes cannot be told from the flood: no figure of its own, and fio's is not judged instead.
    out, rec = checked({**metrics, "dev_r_await": 0.0, "dev_w_await": 40.0}, Trace(None, trace.writes), "fg")
    assert "fg:total_p99_us" not in out and "fg:clat_p99_us" not in out and not rec.fio_kept and not rec.block_kept
    assert rec.note is not None and rec.note.startswith("the fg role read nothing, and its writes cannot be told from "
                                                        "the flood's in the block layer")


def test_the_note_says_what_a_replays_latency_is_and_what_was_left_out():
    left = checked(run_metrics(12_000.0, 540.0), Trace())[1]
    kept = checked(run_metrics(110.0, 100.0, 0.1), Trace(Op(100.0)))[1]
    gone = checked(run_metrics(110.0, 100.0, 0.5), Trace(Op(100.0)))[1]
    assert latency_note([]) is None
    assert latency_note([kept, kept]) == ("replay latency: judged in the block layer (queue to completion), not on "
                                          "fio's figures; fio's agree with it to within 25% in every run")
    assert latency_note([left, kept]) == ("replay latency: judged in the block layer (queue to completion), not on "
                                          "fio's figures; fio's are left out of 1 of 2 run(s): up to 96% of them was "
                                          "fio's own waiting (more than 25% is not the device's)")
    assert latency_note([kept, gone]) == ("replay latency: judged in the block layer (queue to completion), not on "
                                          "fio's figures; 1 run(s) without a block-layer figure, not judged on latency")


figures = st.floats(min_value=1e-3, max_value=1e9, allow_nan=False)


@given(fio_mean=figures, block_mean=figures, await_factor=st.floats(min_value=0.6, max_value=1.6))
def test_a_fio_figure_mostly_fios_own_is_never_kept(fio_mean, block_mean, await_factor):
    metrics = run_metrics(fio_mean, block_mean, r_await_ms=block_mean * await_factor / 1000)
    out, rec = checked(metrics, Trace(Op(block_mean)))
    share = engine_share(fio_mean, block_mean)
    assert 0.0 <= share <= 1.0 and rec.block_kept
    assert rec.fio_kept == (share <= MAX_ENGINE_SHARE)
    assert all((k in out) == rec.fio_kept for k in FIO_FIGURES)
    assert all(out[k] == metrics[k] for k in BLOCK_FIGURES)


def test_a_replay_job_judges_timed_runs_below_fio_and_leaves_a_fast_untraced_run_as_it_is(tmp_path):
    log = make_capture(tmp_path / "c.iolog", mixed(40))
    for mode, traced in (("fast", False), ("timed", True)):
        job = prepare_replay(log, mode, "loop9", DEV_SIZE)
        try:
            assert job.traced == traced and job.role is None
            metrics = run_metrics(12_000.0, 540.0)
            if mode == "fast":
                assert job.below_fio(metrics, None) == {}  # judged on MB/s: fio's figures as they are
                changes = job.below_fio(metrics, Trace())  # traced with --trace: the same checks
            else:
                changes = job.below_fio(metrics, None)  # the tracer stopped: fio's figure is not judged instead
                assert changes["latency"].note.startswith("without the block layer's figures")
            assert set(changes) == {"metrics", "latency"} and "clat_p99_us" not in changes["metrics"]
        finally:
            job.release()
