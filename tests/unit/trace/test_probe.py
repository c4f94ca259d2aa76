"""The tracer and the per-process fallback as Monitor probes: drained each step, bounded, errors kept, the
/proc/PID/io fallback read off the stepping thread."""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path

import pytest
from tui_support import SteppedSampler, populated_tree

from iosched.core.kernel.procio import ProcCounters
from iosched.core.live.monitor import Monitor
from iosched.core.trace import probe as trace_probe
from iosched.core.trace.parse import TraceSample
from iosched.core.trace.probe import ProcIOProbe, TraceProbe
from iosched.core.trace.tracer import (
    TracerStopped,
    TracingUnavailable,
)


class FakeTracer:
    def __init__(self, events):
        self.events: queue.Queue = queue.Queue()
        for e in events:
            self.events.put(e)
        self.stopped = False

    def get(self, timeout=None):
        try:
            return self.events.get_nowait()
        except queue.Empty:
            return None

    @property
    def running(self):
        return not self.stopped

    def stop(self):
        self.stopped = True


def sample(i: float) -> TraceSample:
    return TraceSample(mono=i, interval=1.0, devices={}, tracer_cpu=0.5)


def test_step_drains_what_arrived_and_keeps_a_bounded_history():
    p = TraceProbe(capacity=3)
    p.tracer = FakeTracer([sample(i) for i in range(5)])
    view = p.step()
    assert view.running and view.error is None
    assert [s.mono for s in view.samples] == [2, 3, 4]
    assert view.latest.mono == 4 and view.tracer_cpu == 0.5


def test_a_stopped_tracer_leaves_its_reason_and_the_history():
    p = TraceProbe()
    p.tracer = FakeTracer([sample(1), TracerStopped("bpftrace was killed by signal 9; tracing stopped")])
    view = p.step()
    assert not view.running and view.tracer_cpu is None
    assert view.error.startswith("bpftrace was killed")
    assert len(view.samples) == 1


def test_unavailable_tracing_is_an_error_not_a_crash(monkeypatch):
    monkeypatch.setattr("iosched.core.trace.tracer.shutil.which",
                        lambda name: None if name == "bpftrace" else f"/usr/bin/{name}")
    monkeypatch.setattr("iosched.core.trace.tracer.os.geteuid", lambda: 0)
    p = TraceProbe(loader=Path("/nonexistent/iosched-blktrace"))
    with pytest.raises(TracingUnavailable) as e:
        p.start()
    # Neither tracer can run: each says why.
    assert str(e.value).startswith("block-layer tracing needs bpftrace (on Debian: apt-get install -y bpftrace) "
                                   "(the CO-RE tracer was not built when iosched was installed; to build it: ")
    assert p.tracer is None
    assert not p.step().running


def test_probes_step_with_the_monitor(tmp_path):
    tree = populated_tree(tmp_path)
    procio = ProcIOProbe(top=5)
    trace = TraceProbe()
    trace.tracer = FakeTracer([sample(1)])
    m = Monitor(SteppedSampler(tree.root), root=tree.root, probes=[trace, procio])
    m.baseline()
    m.step()
    assert m.extras["trace"].latest.mono == 1
    assert m.extras["procio"].rates == ()  # the first reading is a baseline
    m.step()
    assert len(m.extras["procio"].rates) <= 5


def test_procio_is_read_off_the_stepping_thread(monkeypatch):
    readers: list[int] = []
    n = iter(range(1_000_000))

    def fake_read():
        readers.append(threading.get_ident())
        k = next(n)
        return {7: ProcCounters(7, "fio", 1.0, 4096 * k, 0, k, 0)}

    monkeypatch.setattr(trace_probe, "read_process_io", fake_read)
    probe = ProcIOProbe(period=0.01)
    try:
        view = probe.step()
        deadline = time.monotonic() + 30
        while not view.rates and time.monotonic() < deadline:
            time.sleep(0.01)
            view = probe.step()
        assert view.rates and view.rates[0].pid == 7 and view.rates[0].read_bytes_s > 0
        assert readers and threading.get_ident() not in readers
    finally:
        probe.close()
