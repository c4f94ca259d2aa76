"""Block-layer tracing and per-process IO as Monitor probes: ``monitor.extras["trace"]`` / ``["procio"]``.

The tracer runs at its own pace in its reader thread; the probe drains what arrived each time the Monitor
steps, keeps a bounded history for the views (heatmaps over time) and says whether tracing runs and why not.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from iosched.core.kernel.procio import ProcCounters, ProcessRate, process_rates, read_process_io
from iosched.core.live.sampler import Rates
from iosched.core.trace.parse import TraceSample
from iosched.core.trace.tracer import Tracer, TracerStopped

TRACE_HISTORY = 600


@dataclass(frozen=True)
class TraceView:
    """What a view needs of the tracer at one step."""

    running: bool
    error: str | None  # one sentence when tracing is off for a reason (unavailable, died)
    samples: tuple[TraceSample, ...]  # oldest first, bounded
    tracer_cpu: float | None  # the tracer process's own CPU, % of one CPU, over the last interval

    @property
    def latest(self) -> TraceSample | None:
        return self.samples[-1] if self.samples else None

    @property
    def cost_us_per_io(self) -> float | None:
        """The CO-RE tracer's cost per IO as last measured: an idle interval issues no request to spread its CPU
        over, so it has no figure of its own (None before the first interval with IO, and for bpftrace)."""
        return next((s.cost_us_per_io for s in reversed(self.samples) if s.cost_us_per_io is not None), None)

    def cost_text(self) -> str:
        """Which tracer runs and what it costs, for a header: "CO-RE tracer 1.3 µs/IO" (the last measured),
        "bpftrace 0.4% of a CPU"; "" before the first interval."""
        latest = self.latest
        if latest is None:
            return ""
        if latest.tracer == "libbpf":
            cost = self.cost_us_per_io
            return "CO-RE tracer" + ("" if cost is None else f" {cost:.1f} µs/IO")
        return latest.cost_text()

    @property
    def dropped_requests(self) -> int:
        """Requests the tracer could not time, over the samples kept."""
        return sum(s.dropped_requests for s in self.samples)


class TraceProbe:
    """Owns a Tracer; ``start()``/``stop()`` toggle it (the TUI's key), ``step()`` is called by the Monitor."""

    name = "trace"

    def __init__(self, interval: float = 1.0, devices: list[str] | None = None, root: str = "/",
                 capacity: int = TRACE_HISTORY, loader: Path | None = None) -> None:
        self.interval, self.devices, self.root, self.loader = interval, devices, root, loader
        self.tracer: Tracer | None = None
        self.error: str | None = None
        self.samples: deque[TraceSample] = deque(maxlen=capacity)

    def start(self) -> Tracer:
        """Start a tracer and wait until it runs (blocking: call it from a worker); TracingUnavailable/
        TracingFailed are raised for the caller.

        The probe does not take the tracer: the caller hands it to ``attach`` when it still wants it (the
        user may have toggled tracing off, or on again, meanwhile) and stops it otherwise.
        """
        tracer = Tracer(self.interval, self.devices, self.root, loader=self.loader)
        tracer.start()
        tracer.wait_ready()
        return tracer

    def attach(self, tracer: Tracer) -> Tracer | None:
        """Take a started tracer (from ``start``); returns the one held before, for the caller to stop."""
        old, self.tracer, self.error = self.tracer, tracer, None
        return old

    def fail(self, reason: str) -> None:
        self.error = reason

    def stop(self) -> None:
        tracer = self.detach()
        if tracer is not None:
            tracer.stop()

    def detach(self) -> Tracer | None:
        """Let go of the running tracer without waiting for it (the caller stops it, e.g. in a worker)."""
        tracer, self.tracer = self.tracer, None
        return tracer

    @property
    def running(self) -> bool:
        return self.tracer is not None and self.tracer.running

    def step(self, rates: Rates | None = None) -> TraceView:
        t = self.tracer
        while t is not None:
            ev = t.get(timeout=0)
            if ev is None:
                break
            if isinstance(ev, TracerStopped):
                self.error = ev.reason
                self.tracer = t = None
                break
            self.samples.append(ev)
        latest = self.samples[-1] if self.samples else None
        return TraceView(self.running, self.error, tuple(self.samples),
                         latest.tracer_cpu if latest is not None and self.running else None)


@dataclass(frozen=True)
class ProcIOView:
    rates: tuple[ProcessRate, ...]  # busiest first; system-wide, not per device


PROCIO_PERIOD = 2.0


class ProcIOProbe:
    """Per-process bytes/s from /proc/PID/io (psutil): the fallback when block-layer tracing is unavailable.

    Reading every process's counters takes milliseconds to tens of them, too long for the thread that steps
    the Monitor (the TUI's): a daemon thread reads them every ``period`` seconds and ``step`` hands out the
    latest rates. The thread starts with the first step and ends with ``close``.
    """

    name = "procio"

    def __init__(self, top: int = 20, period: float = PROCIO_PERIOD) -> None:
        self.top, self.period = top, period
        self._view = ProcIOView(())  # replaced whole by the poller: a reference swap, no lock needed
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def step(self, rates: Rates | None = None) -> ProcIOView:
        if self._thread is None and not self._stop.is_set():
            self._thread = threading.Thread(target=self._poll, name="iosched-procio", daemon=True)
            self._thread.start()
        return self._view

    def close(self) -> None:
        """Stop the poller (it ends within one period; nothing waits for it)."""
        self._stop.set()

    def _poll(self) -> None:
        prev: dict[int, ProcCounters] | None = None
        t_prev = 0.0
        while not self._stop.is_set():
            cur, t = read_process_io(), time.monotonic()
            if prev is not None:
                self._view = ProcIOView(tuple(process_rates(prev, cur, t - t_prev, self.top)))
            prev, t_prev = cur, t
            self._stop.wait(self.period)
