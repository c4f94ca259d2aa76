"""An experiment's run windows cut from tracer samples."""

from __future__ import annotations

from dataclasses import replace

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


def test_window_has_the_block_layers_percentiles_and_each_operations_figures():
    def with_writes(end: float) -> TraceSample:
        s = sample(end, 10)
        read = s.devices["loop3"].ops["read"]
        write = OpLatency(10, 10 * 65536, Log2Hist(), Log2Hist(), Log2Hist.from_values([3000] * 10), 10 * 3_000_000)
        return replace(s, devices={"loop3": DeviceLatency("loop3", {"read": read, "write": write})})

    got = window([with_writes(10.5), with_writes(11.0)], "loop3", 10.0, 11.0)
    assert got is not None and got.reads is not None and got.writes is not None
    assert 128 <= got.metrics["total_p50_us"] <= 256 and 2048 <= got.metrics["total_p99_us"] <= 4096
    assert got.reads.ios == 200 and got.reads.mean_us == pytest.approx(250.0) and 128 <= got.reads.p99_us <= 256
    assert got.writes.ios == 20 and got.writes.mean_us == pytest.approx(3000.0) and 2048 <= got.writes.p50_us <= 4096
    assert window([sample(10.5, 0)], "loop3", 10.0, 11.0).writes is None  # no write: no figure
