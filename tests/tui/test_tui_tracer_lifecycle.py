"""Tracer lifecycle in the TUI: quick toggles of the latency pane never leave a bpftrace running (hidden or
twice), and the pane says how many requests went untimed."""

from __future__ import annotations

import threading
from typing import ClassVar

import psutil
import pytest
from test_tui_jobs import select
from tui_support import SteppedSampler, populated_tree

from iosched.core.trace import probe as trace_probe
from iosched.tui.app import IoschedApp
from iosched.tui.live_tracing import TracingStarted
from iosched.tui.widgets.latency_pane import LatencyPane

from conftest import need_real


class GatedTracer:
    """Stands in for Tracer: ``wait_ready`` blocks until the test opens its gate; every one made is kept."""

    made: ClassVar[list[GatedTracer]] = []

    def __init__(self, *args, **kw) -> None:
        self.gate = threading.Event()
        self.stopped = False
        GatedTracer.made.append(self)

    def start(self) -> None:
        pass

    def wait_ready(self, timeout: float = 30.0) -> None:
        assert self.gate.wait(30), "the test never opened the gate"

    def stop(self) -> None:
        self.stopped = True

    @property
    def running(self) -> bool:
        return not self.stopped

    def get(self, timeout=None):
        return None


@pytest.fixture
def gated(monkeypatch):
    GatedTracer.made = []
    monkeypatch.setattr(trace_probe, "Tracer", GatedTracer)
    return GatedTracer.made


def fixture_app(tmp_path) -> IoschedApp:
    tree = populated_tree(tmp_path / "root")
    return IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False)


async def until(pilot, condition, what: str) -> None:
    for _ in range(300):
        if condition():
            return
        await pilot.pause(0.02)
    pytest.fail(f"never happened: {what}")


async def test_a_start_finishing_after_the_pane_closed_is_stopped_not_kept_hidden(tmp_path, gated):
    app = fixture_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        live = app.live
        await pilot.press("l")
        assert live.tracing_on and live.has_class("-latency")  # the reactive makes room for the pane
        await until(pilot, lambda: len(gated) == 1, "the start worker made its tracer")
        await pilot.press("l")  # closed while bpftrace still compiles
        assert not live.tracing_on and not live.has_class("-latency")
        gated[0].gate.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert gated[0].stopped
        assert live.tracing.probe.tracer is None and live.tracing.probe not in app.monitor.probes


async def test_overlapping_starts_end_with_one_tracer_and_none_once_closed(tmp_path, gated):
    app = fixture_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        live = app.live
        await pilot.press("l")
        await until(pilot, lambda: len(gated) == 1, "the first start")
        await pilot.press("l", "l")  # off and on again: a second start while the first still waits
        await until(pilot, lambda: len(gated) == 2, "the second start")
        gated[1].gate.set()
        gated[0].gate.set()  # the older one finishes last
        await app.workers.wait_for_complete()
        await pilot.pause()
        running = [t for t in gated if not t.stopped]
        assert running == [gated[1]] and live.tracing.probe.tracer is gated[1]
        assert live.tracing.probe in app.monitor.probes
        await pilot.press("l")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert all(t.stopped for t in gated) and live.tracing.probe.tracer is None


async def test_a_started_message_arriving_after_the_close_stops_its_tracer(tmp_path, gated):
    """The worker saw a current token and posted; the close came before the UI thread handled the message."""
    app = fixture_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        live = app.live
        posted = threading.Event()
        post = live.tracing.post_message

        def spy(message):
            ok = post(message)
            if isinstance(message, TracingStarted):
                posted.set()
            return ok

        live.tracing.post_message = spy
        await pilot.press("l")
        await until(pilot, lambda: len(gated) == 1, "the start worker made its tracer")
        gated[0].gate.set()
        assert posted.wait(30)  # blocks the event loop: the message is queued, not handled yet
        live.action_trace()  # the close, before the message
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert gated[0].stopped
        assert live.tracing.probe.tracer is None and live.tracing.probe not in app.monitor.probes
        assert not app.query_one(LatencyPane).display


def bpftrace_children() -> list[psutil.Process]:
    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            if p.name() in ("bpftrace", "iosched-blktrace") and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            pass
    return out


async def test_real_quick_toggles_leave_one_tracer_then_none(tmp_path, make_loop):
    need_real("bpftrace", "setpriv")
    loop = make_loop()
    try:
        app = IoschedApp(interval=0.5, watch_udev=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(0.5)
            await select(app, pilot, loop.name)
            await pilot.press("l", "l", "l", "l", "l")  # ends shown, three starts overlapping
            await app.workers.wait_for_complete()
            await pilot.pause()
            live = app.live
            assert live.tracing.probe is not None and live.tracing.probe.running, live.tracing.note
            kids = bpftrace_children()
            assert [p.pid for p in kids] == [live.tracing.probe.tracer.pid]
            await pilot.press("l")
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert not live.tracing.probe.running and bpftrace_children() == []
    finally:
        for p in bpftrace_children():  # only on failure: leave nothing behind
            p.kill()


def test_the_cli_line_and_the_pane_title_say_how_many_requests_went_untimed(tmp_path):
    import dataclasses
    from datetime import datetime

    from test_tui_latency import traced

    from iosched.cli.latency import latency_text
    from iosched.core.trace.probe import TraceView

    clean = traced(1001.0, 64, 0)
    reset = dataclasses.replace(clean, dropped_requests=12)
    assert "untimed" not in latency_text(clean, datetime(2026, 1, 1), None)
    assert "12 requests untimed" in latency_text(reset, datetime(2026, 1, 1), None).splitlines()[0]
    assert TraceView(True, None, (clean, reset, reset), 0.4).dropped_requests == 24


async def test_the_pane_title_counts_untimed_requests(tmp_path):
    import dataclasses

    from test_tui_latency import FeedTracer, traced

    from iosched.core.trace.probe import TraceProbe

    app = fixture_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("down")  # nvme0n1 -> sda
        live = app.live
        probe = TraceProbe()
        probe.tracer = FeedTracer([dataclasses.replace(traced(1001.0 + i, 64, 0), dropped_requests=i)
                                   for i in range(4)])
        live.tracing.probe = probe
        live.monitor.probes.append(probe)
        pane = live.tracing.pane()
        pane.display = True
        live.tick()
        await pilot.pause()
        assert "tracing on, bpftrace 0.4% of a CPU, 6 untimed" in pane.plain_text()
