"""Block-layer tracing over an experiment's runs: one tracer for the whole experiment, each run's window cut
from its samples (time in the scheduler, device time, total time; bpftrace's own CPU with it, since tracing
adds CPU per IO). Total time is queue-to-complete: from when the kernel starts accounting a request (as diskstats
does) to its completion, what a request spent below the program that submitted it; per process too, the busiest
first (a replay beside a flood tells its own requests by them: core/load/replay_latency.py)."""

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
MAX_PROCESSES = 16  # a run's busiest processes on the device, kept with their figures


Bucket = tuple[int, int, int]  # a log2 histogram's non-empty bucket: low µs, high µs (exclusive), count


class ProcessWindow(NamedTuple):
    """What one process submitted to the device over a run (pid and command at submission), and its requests' total
    time: p50 and p99 from its log2 histogram, the mean from the buckets' midpoints (no exact sum per process)."""

    pid: int
    comm: str
    ios: int
    bytes: int  # data moved (a discard's range is not)
    total_mean_us: float | None
    total_p50_us: float | None
    total_p99_us: float | None


class TraceWindow(NamedTuple):
    """A run's block-layer figures (by metric name) and histograms: what the run's trace (a TraceDoc) holds."""

    metrics: dict[str, float | None]
    ios: int
    sched_us: list[Bucket]
    device_us: list[Bucket]
    total_us: list[Bucket]
    processes: tuple[ProcessWindow, ...] = ()  # the busiest MAX_PROCESSES, by requests
    read_mean_us: float | None = None  # reads' mean total time, exact: what iostat's r_await averages
    write_mean_us: float | None = None  # writes' (w_await)


def _buckets(hist: Log2Hist) -> list[Bucket]:
    return [(low, high, count) for low, high, count in hist.rows()]


def _processes(samples: list[TraceSample], device: str) -> tuple[ProcessWindow, ...]:
    """Each process's requests on ``device`` over the samples, merged by pid; the busiest MAX_PROCESSES."""
    got: dict[int, tuple[str, int, int, Log2Hist]] = {}
    for s in samples:
        for p in s.processes:
            if p.device == device:
                comm, ios, size, hist = got.get(p.pid, (p.comm, 0, 0, Log2Hist()))
                got[p.pid] = (comm, ios + p.ios, size + p.bytes, hist + p.total)
    busiest = sorted(got.items(), key=lambda kv: (-kv[1][1], kv[0]))[:MAX_PROCESSES]
    return tuple(ProcessWindow(pid, comm, ios, size, hist.mean(), hist.percentile(0.5), hist.percentile(0.99))
                 for pid, (comm, ios, size, hist) in busiest)


def _op_mean(devs: list[DeviceLatency], op: str) -> float | None:
    """One operation's mean total time over the samples, µs (exact: the sum is carried beside the histogram)."""
    got = [d.ops[op] for d in devs if op in d.ops]
    n = sum(o.total.total for o in got)
    return sum(o.total_ns for o in got) / n / 1e3 if n else None


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
                       _processes(inside, device), _op_mean(devs, "read"), _op_mean(devs, "write"))


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
