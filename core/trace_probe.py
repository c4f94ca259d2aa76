"""Block-layer tracing and per-process IO as Monitor probes: ``monitor.extras["trace"]`` / ``["procio"]``.

The tracer runs at its own pace in its reader thread; the probe drains what arrived each time the Monitor
steps, keeps a bounded history for the views (heatmaps over time) and says whether tracing runs and why not.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from iosched.core.procio import ProcCounters, ProcessRate, process_rates, read_process_io
from iosched.core.sampler import Rates
from iosched.core.tracer import Tracer, TracerStopped, TracingFailed, TracingUnavailable
from iosched.core.tracing_parse import TraceSample

TRACE_HISTORY = 600


@dataclass(frozen=True)
class TraceView:
    """What a view needs of the tracer at one step."""

    running: bool
    error: str | None  # one sentence when tracing is off for a reason (unavailable, died)
    samples: tuple[TraceSample, ...]  # oldest first, bounded
    tracer_cpu: float | None  # bpftrace's own CPU, % of one CPU, over the last interval

    @property
    def latest(self) -> TraceSample | None:
        return self.samples[-1] if self.samples else None


class TraceProbe:
    """Owns a Tracer; ``start()``/``stop()`` toggle it (the TUI's key), ``step()`` is called by the Monitor."""

    name = "trace"

    def __init__(self, interval: float = 1.0, devices: list[str] | None = None, root: str = "/",
                 capacity: int = TRACE_HISTORY) -> None:
        self.interval, self.devices, self.root = interval, devices, root
        self.tracer: Tracer | None = None
        self.error: str | None = None
        self.samples: deque[TraceSample] = deque(maxlen=capacity)

    def start(self) -> None:
        """Start tracing; TracingUnavailable/TracingFailed are kept as ``error`` (and raised) for the caller."""
        self.stop()
        tracer = Tracer(self.interval, self.devices, self.root)
        try:
            tracer.start()
            tracer.wait_ready()
        except (TracingUnavailable, TracingFailed) as e:
            self.error = str(e)
            raise
        self.tracer, self.error = tracer, None

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


class ProcIOProbe:
    """Per-process bytes/s from /proc/PID/io (psutil): the fallback when block-layer tracing is unavailable."""

    name = "procio"

    def __init__(self, top: int = 20) -> None:
        self.top = top
        self._prev: dict[int, ProcCounters] | None = None
        self._t = 0.0

    def step(self, rates: Rates | None = None) -> ProcIOView:
        cur, t = read_process_io(), time.monotonic()
        prev, dt = self._prev, t - self._t
        self._prev, self._t = cur, t
        if prev is None:
            return ProcIOView(())
        return ProcIOView(tuple(process_rates(prev, cur, dt, self.top)))
