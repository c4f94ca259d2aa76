"""Block-layer tracing over an experiment's runs: one tracer for the whole experiment, each run's window cut
from its samples (time in the scheduler, device time, total time; bpftrace's own CPU with it, since tracing
adds CPU per IO). Total time is queue-to-complete: from when the kernel starts accounting a request (as diskstats
does) to its completion, what a request spent below the program that submitted it; reads' and writes' apart too,
as iostat's r_await and w_await (a replay beside a write flood is told by its reads: core/load/replay_latency.py)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import NamedTuple

from iosched.core.trace.histograms import Log2Hist, merge
from iosched.core.trace.parse import DeviceLatency, TraceSample
from iosched.core.trace.tracer import Tracer, TracerStopped

TRACE_INTERVAL = 0.5
TRACE_METRICS = ("sched_p50_us", "sched_p99_us", "device_p50_us", "device_p99_us", "total_mean_us", "total_p50_us",
                 "total_p99_us", "tracer_cpu", "tracer_us_per_io")


Bucket = tuple[int, int, int]  # a log2 histogram's non-empty bucket: low µs, high µs (exclusive), count


class OpWindow(NamedTuple):
    """One operation's requests over a run and their total time: the mean exact (its sum is carried), p50 and p99
    from its log2 histogram."""

    ios: int
    mean_us: float | None
    p50_us: float | None
    p99_us: float | None


class TraceWindow(NamedTuple):
    """A run's block-layer figures (by metric name) and histograms: what the run's trace (a TraceDoc) holds."""

    metrics: dict[str, float | None]
    ios: int
    sched_us: list[Bucket]
    device_us: list[Bucket]
    total_us: list[Bucket]
    reads: OpWindow | None = None  # what iostat's r_await averages
    writes: OpWindow | None = None  # w_await's


def _buckets(hist: Log2Hist) -> list[Bucket]:
    return [(low, high, count) for low, high, count in hist.rows()]


def _op(devs: list[DeviceLatency], op: str) -> OpWindow | None:
    """One operation's requests over the samples; None when there were none."""
    got = [d.ops[op] for d in devs if op in d.ops]
    total = merge([o.total for o in got])
    if not total.total:
        return None
    return OpWindow(sum(o.ios for o in got), sum(o.total_ns for o in got) / total.total / 1e3, total.percentile(0.5),
                    total.percentile(0.99))


def window(samples: list[TraceSample], device: str, t0: float, t1: float) -> TraceWindow | None:
    """The samples ending inside (t0, t1 + one interval] merged for ``device``: metrics and histograms.

    The last sample may reach a little past the run's end: it holds the run's final completions.
    """
    inside = [s for s in samples if t0 < s.mono <= t1 + s.interval + 0.05 and s.mono - s.interval < t1]
    devs = [s.devices[device] for s in inside if device in s.devices]
    if not devs:
        return None
    sched = merge([d.sched for d in devs])
    dev_t = merge([d.device for d in devs])
    total = merge([d.total for d in devs])
    total_ns = sum(d.total_ns for d in devs)
    cpu = [s.tracer_cpu for s in inside if s.tracer_cpu is not None]
    cost = [s.cost_us_per_io for s in inside if s.cost_us_per_io is not None]
    metrics: dict[str, float | None] = {
        "sched_p50_us": sched.percentile(0.5), "sched_p99_us": sched.percentile(0.99),
        "device_p50_us": dev_t.percentile(0.5), "device_p99_us": dev_t.percentile(0.99),
        "total_mean_us": total_ns / total.total / 1e3 if total.total else None,
        "total_p50_us": total.percentile(0.5), "total_p99_us": total.percentile(0.99),
        "tracer_cpu": sum(cpu) / len(cpu) if cpu else None,
        # What tracing cost this run (the CO-RE tracer measures it; bpftrace cannot): µs of CPU per IO.
        "tracer_us_per_io": sum(cost) / len(cost) if cost else None,
    }
    return TraceWindow(metrics, sum(d.ios for d in devs), _buckets(sched), _buckets(dev_t), _buckets(total),
                       _op(devs, "read"), _op(devs, "write"))


class RunTracer:
    """Started once per experiment; ``collect(t0, t1)`` after each run. A tracer that dies is reported once."""

    def __init__(self, device: str, root: str | Path = "/") -> None:
        self.device = device
        self.tracer = Tracer(interval=TRACE_INTERVAL, devices=[device], root=root)
        self.samples: list[TraceSample] = []
        self.stopped: str | None = None

    def start(self) -> None:
        self.tracer.start()
        self.tracer.wait_ready()

    def _drain(self, until: float | None = None, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            wait = 0.0 if until is None else max(0.0, deadline - time.monotonic())
            ev = self.tracer.get(timeout=wait)
            if ev is None:
                return
            if isinstance(ev, TracerStopped):
                self.stopped = ev.reason or "tracing stopped"
                return
            self.samples.append(ev)
            if until is not None and ev.mono > until + TRACE_INTERVAL:
                return

    def collect(self, t0: float, t1: float) -> TraceWindow | None:
        """The run's window; waits for the sample that covers its end (at most a few seconds)."""
        if self.stopped is None:
            self._drain(until=t1)
        got = window(self.samples, self.device, t0, t1)
        self.samples = [s for s in self.samples if s.mono > t1]  # later runs start after this one
        return got

    def stop(self) -> None:
        self.tracer.stop()
