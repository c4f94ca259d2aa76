"""Tracer lifecycle: quick toggles of the latency pane never leave a bpftrace running (hidden or twice), the
/proc/PID/io fallback is read off the stepping thread, the per-request maps are reset with the loss counted,
and the tracefs mount is bounded."""

from __future__ import annotations

import subprocess
import threading
import time
from typing import ClassVar

import psutil
import pytest
from test_tui_jobs import select
from tui_support import SteppedSampler, populated_tree

from iosched.core.kernel.procio import ProcCounters
from iosched.core.trace import probe as trace_probe
from iosched.core.trace.parse import FrameBuilder, TraceSample, interval_sample
from iosched.core.trace.probe import ProcIOProbe
from iosched.core.trace.tracer import (
    Tracer,
    TracerStopped,
    TracingUnavailable,
    build_script,
    mount_tracefs,
    reset_every,
)
from iosched.tui.app import IoschedApp
from iosched.tui.live_tracing import TracingStarted
from iosched.tui.widgets.latency_pane import LatencyPane

from conftest import attach_loop, detach_loop, need_real


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
        post = live.post_message

        def spy(message):
            ok = post(message)
            if isinstance(message, TracingStarted):
                posted.set()
            return ok

        live.post_message = spy
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
            if p.name() == "bpftrace" and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            pass
    return out


async def test_real_quick_toggles_leave_one_bpftrace_then_none(tmp_path):
    need_real("bpftrace", "setpriv")
    loop = attach_loop(tmp_path)
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
        detach_loop(loop)


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


def test_script_clears_only_the_idle_request_maps_and_switches_later():
    assert reset_every(1.0) == 60 and reset_every(0.5) == 120 and reset_every(120.0) == 2
    for io_start in (True, False):
        script = build_script(1.0, [7340032], io_start, reset_period=10)
        block = script[script.index("@resetn = @resetn + 1"):script.index("iosched-tick %lld\\n\", nsecs);\n}")]
        # Cleared at tick 8 (the idle set: the other one than @epoch names), switched at tick 10.
        assert "if (@resetn == 8) { if (@epoch) { print(@sadd0);" in block
        assert "if (@resetn >= 10) { @epoch = @epoch ? 0 : 1;" in block
        for m in ("@start", "@pid", "@ins", "@iss", "@sadd", "@sdel", "@shit"):
            assert f"clear({m}0)" in block and f"clear({m}1)" in block
        probes = script[:script.index("interval:ms:")]
        assert "clear(" not in probes and "print(" not in probes
        # A completion deletes from the current set only.
        assert "delete(@start1[" in probes and "$t = @start0[args->dev, args->sector]; if ($t) { @shit0" in probes


def test_dropped_requests_are_what_the_idle_set_held_when_cleared():
    lines = [
        '{"type": "printf", "data": "iosched-tick 1000000000"}',
        '{"type": "map", "data": {"@sadd1": {"0": 50, "1": 30}}}',
        '{"type": "map", "data": {"@sdel1": {"0": 45, "1": 30}}}',
        '{"type": "map", "data": {"@shit1": {"1": 2}}}',
        '{"type": "printf", "data": "iosched-tick 2000000000"}',
        '{"type": "printf", "data": "iosched-tick 3000000000"}',
    ]
    b = FrameBuilder()
    frames = [f for f in (b.feed(ln) for ln in lines) if f is not None]
    s1 = interval_sample(frames[0], frames[1], {})
    s2 = interval_sample(frames[1], frames[2], {})
    assert s1 is not None and s1.dropped_requests == 3 and s1.to_json(0.0)["dropped_requests"] == 3
    assert s2 is not None and s2.dropped_requests == 0  # counted at the clear only, not carried over


def test_real_switching_map_sets_keeps_timing_every_request(tmp_path):
    need_real("fio", "bpftrace", "setpriv")
    loop = attach_loop(tmp_path)
    tracer = Tracer(interval=0.1, devices=[loop.name], reset_period=0.2)  # clear and switch every other tick
    load = None
    try:
        tracer.start()
        tracer.wait_ready()
        load = subprocess.Popen(["fio", "--name=reset", f"--filename={loop.path}", "--direct=1", "--rw=randread",
                                 "--bs=4k", "--iodepth=32", "--ioengine=libaio", "--time_based", "--runtime=3",
                                 "--thread", "--output-format=terse"], stdout=subprocess.DEVNULL)
        samples: list[TraceSample] = []
        while load.poll() is None or len(samples) < 5:
            ev = tracer.get(timeout=5)
            if isinstance(ev, TracerStopped):
                pytest.fail(f"the tracer stopped: {ev.reason}")
            if isinstance(ev, TraceSample):
                samples.append(ev)
        assert load.wait(timeout=60) == 0
        assert tracer.running  # dozens of clears under load, none raced with the probes
        busy = [s.devices[loop.name] for s in samples if loop.name in s.devices]
        ios = sum(d.ios for d in busy)
        assert ios > 1000
        # Requests in flight across a switch are still timed; only a missed completion goes untimed.
        assert sum(d.total.total for d in busy) >= 0.97 * ios
        assert sum(s.dropped_requests for s in samples) <= 0.03 * ios
    finally:
        if load is not None and load.poll() is None:
            load.kill()
            load.wait()
        tracer.stop()
        detach_loop(loop)


def test_a_hanging_mount_times_out_with_one_sentence(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "mount"
    fake.write_text("#!/bin/sh\nexec sleep 30\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    with pytest.raises(TracingUnavailable) as e:
        mount_tracefs(tmp_path / "tracing", timeout=0.3)
    msg = str(e.value)
    assert "did not finish within 0.3 s" in msg and "\n" not in msg
    assert not any(p.info["name"] == "sleep" and p.info["ppid"] == psutil.Process().pid
                   for p in psutil.process_iter(["name", "ppid"]))


def test_the_cli_line_and_the_pane_title_say_how_many_requests_went_untimed(tmp_path):
    import dataclasses
    from datetime import datetime

    from test_tui_latency import traced

    from iosched.cli.latency import latency_text
    from iosched.core.trace.probe import TraceView

    clean = traced(1001.0, 64, 0)
    reset = dataclasses.replace(clean, dropped_requests=12)
    assert "untimed" not in latency_text(clean, datetime(2026, 1, 1), None)
    assert "12 requests untimed (map reset)" in latency_text(reset, datetime(2026, 1, 1), None).splitlines()[0]
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
        assert "tracing on, bpftrace 0.4% CPU, 6 untimed" in pane.plain_text()
