"""An experiment's run windows cut from tracer samples."""

from __future__ import annotations

import pytest

from iosched.core.trace.histograms import Log2Hist
from iosched.core.trace.parse import DeviceLatency, OpLatency, TraceSample
from iosched.core.trace.runs import window


def sample(end: float, sched_us: int, n: int = 100, cpu: float | None = 0.5) -> TraceSample:
    op = OpLatency(n, n * 4096, Log2Hist.from_values([sched_us] * n), Log2Hist.from_values([200] * n),
                   Log2Hist.from_values([250] * n), n * 250_000)
    return TraceSample(end, 0.5, {"loop3": DeviceLatency("loop3", {"read": op})}, tracer_cpu=cpu)


def test_window_takes_the_samples_of_the_run_and_its_last_completions():
    samples = [sample(9.5, 0), sample(10.5, 40), sample(11.0, 40), sample(11.5, 40), sample(12.6, 0)]
    got = window(samples, "loop3", 10.0, 11.2)
    assert got is not None and got.ios == 300  # 10.5, 11.0 and 11.5 (which holds the run's end); not 9.5 or 12.6
    m = got.metrics
    assert 32 <= m["sched_p50_us"] <= 64 and 128 <= m["device_p50_us"] <= 256
    assert m["total_mean_us"] == pytest.approx(250.0)
    assert m["tracer_cpu"] == pytest.approx(0.5)
    assert got.sched_us == [(32, 64, 300)]


def test_window_without_the_device_is_none():
    assert window([sample(10.5, 0)], "loop9", 10.0, 11.0) is None
    assert window([], "loop3", 10.0, 11.0) is None
