"""The latency pane: the key toggles it, a machine without tracing gets the /proc/PID/io table and one line
why, and traced samples draw as heatmaps with p50/p99, the switch marker and the device's processes."""

from __future__ import annotations

import queue
import subprocess
from dataclasses import replace

from test_tui_jobs import select
from tui_support import SteppedSampler, populated_tree, set_counters

from iosched.core.trace.histograms import Log2Hist
from iosched.core.trace.parse import DeviceLatency, OpLatency, ProcessIO, TraceSample
from iosched.core.trace.probe import TraceProbe
from iosched.tui.app import IoschedApp
from iosched.tui.widgets.latency_pane import LatencyPane, heatmap

from conftest import need_real


def fixture_app(tmp_path) -> tuple[IoschedApp, object]:
    tree = populated_tree(tmp_path / "root")
    return IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False), tree


class FeedTracer:
    """Stands in for a running Tracer: hands out queued samples."""

    def __init__(self, samples):
        self.q = queue.Queue()
        for s in samples:
            self.q.put(s)

    def get(self, timeout=None):
        try:
            return self.q.get_nowait()
        except queue.Empty:
            return None

    running = True

    def stop(self):
        self.running = False


def traced(mono: float, device_us: int, sched_us: int) -> TraceSample:
    op = OpLatency(ios=1000, bytes=4096000, sched=Log2Hist.from_values([sched_us] * 1000),
                   device=Log2Hist.from_values([device_us] * 1000), total=Log2Hist.from_values([device_us] * 1000),
                   total_ns=1000 * device_us * 1000)
    proc = ProcessIO("sda", 4242, "fio", 1000, 4096000, Log2Hist.from_values([device_us] * 1000))
    return TraceSample(mono, 1.0, {"sda": DeviceLatency("sda", {"read": op})}, (proc,), tracer_cpu=0.4)


def test_heatmap_rows_cover_the_buckets_seen():
    cols, starts = heatmap([Log2Hist.from_values([100] * 10), None, Log2Hist.from_values([3, 3, 1000])], 4)
    assert starts[0] == 2 and len(cols) == 3 and cols[1] == [0] * len(starts)
    assert max(cols[0]) == 5 and sum(1 for v in cols[2] if v) == 2


async def test_without_tracing_the_pane_shows_procfs_and_says_why(tmp_path):
    app, tree = fixture_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("l")
        await app.workers.wait_for_complete()
        await pilot.pause()
        for step in (1, 2):
            set_counters(tree, step)
            app.live.tick()
        await pilot.pause()
        pane = app.query_one(LatencyPane)
        assert pane.display
        text = pane.plain_text()
        # The fixture tree has no tracefs: the reason is said, the table is system-wide.
        assert "IO per process (system-wide, /proc/PID/io)" in text
        assert "block tracepoints" in text or "bpftrace" in text or "root" in text
        assert "tracing" not in app.live.status_text()
        await pilot.press("l")
        await pilot.pause()
        assert not pane.display and "procio" not in app.monitor.extras


async def test_traced_samples_draw_heatmaps_markers_and_processes(tmp_path):
    app, tree = fixture_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("down")  # nvme0n1 -> sda
        live = app.live
        probe = TraceProbe()
        probe.tracer = FeedTracer([traced(1001.0 + i, 64 if i < 4 else 700, 0 if i < 4 else 40) for i in range(8)])
        live.tracing.probe = probe
        live.monitor.probes.append(probe)
        pane = live.tracing.pane()
        pane.display = True
        live.monitor.mark("sda", "none→bfq", at=1004.5)
        set_counters(tree, 1)
        live.tick()
        await pilot.pause()
        text = pane.plain_text()
        assert "Latency sda" in text and "tracing on, bpftrace 0.4% of a CPU" in text
        assert "device p50" in text and "sched p50" in text
        assert "device time" in text and "time in the scheduler" in text
        assert "█" in text
        # The switch marker inside the device-time map (not the axis), after the four "before" samples.
        rows = [r[:59] for r in text.splitlines()[2:12]]  # the left half: 6 columns of axis, 53 of samples
        fast = next(r for r in rows if r.lstrip().startswith("64µs"))
        slow = next(r for r in rows if r.lstrip().startswith("512µs"))
        assert fast.endswith("████│   ")  # newest at the right; the marker on the first sample after it
        assert slow.endswith("    ████")
        assert "fio" in text and "4242" in text
        assert "● tracing (bpftrace 0.4% of a CPU)" in live.status_text()


async def test_the_co_re_tracer_says_its_cost_per_io_through_idle_intervals(tmp_path):
    """The CO-RE tracer measures µs of CPU per IO; an interval without IO has no figure, and the status line said
    "● tracing 0.0%" then. It keeps the last measured cost, as the pane's header does."""
    app, tree = fixture_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("down")  # nvme0n1 -> sda
        live = app.live
        busy = [replace(traced(1001.0 + i, 64, 0), tracer="libbpf", tracer_cpu=0.0, cost_us_per_io=1.3 + i / 10)
                for i in range(3)]
        idle = [TraceSample(1004.0 + i, 1.0, {}, (), tracer="libbpf", tracer_cpu=0.0) for i in range(2)]
        probe = TraceProbe()
        probe.tracer = FeedTracer(busy + idle)
        live.tracing.probe = probe
        live.monitor.probes.append(probe)
        pane = live.tracing.pane()
        pane.display = True
        set_counters(tree, 1)
        live.tick()
        await pilot.pause()
        assert "● tracing 1.5 µs/IO" in live.status_text() and "%" not in live.status_text()
        assert "tracing on, CO-RE tracer 1.5 µs/IO" in pane.plain_text()
        probe.samples.clear()
        probe.tracer = FeedTracer(idle)  # nothing measured yet: no figure rather than a made-up one
        live.tick()
        await pilot.pause()
        assert "● tracing" in live.status_text() and "µs/IO" not in live.status_text()


def start_fio(path: str) -> subprocess.Popen:
    return subprocess.Popen(["fio", "--name=pane", f"--filename={path}", "--rw=randread", "--bs=4k", "--direct=1",
                             "--ioengine=libaio", "--iodepth=8", "--time_based", "--runtime=60", "--thread",
                             "--output-format=terse"], stdout=subprocess.DEVNULL)


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


async def test_real_tracing_toggles_on_a_loop_device_under_load(tmp_path, make_loop):
    need_real("fio", "bpftrace", "setpriv")
    loop = make_loop()
    fio = start_fio(loop.path)
    try:
        app = IoschedApp(interval=0.5, watch_udev=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(0.5)
            await select(app, pilot, loop.name)
            await pilot.press("l")
            await app.workers.wait_for_complete()
            live = app.live
            assert live.tracing.probe is not None and live.tracing.probe.running, live.tracing.note
            tracer_pid = live.tracing.probe.tracer.pid
            pane = app.query_one(LatencyPane)
            def busy(view) -> bool:
                return (view is not None and view.latest is not None and loop.name in view.latest.devices
                        and any(p.comm == "fio" and p.device == loop.name for p in view.latest.processes))

            for _ in range(200):
                await pilot.pause(0.1)
                if busy(app.monitor.extras.get("trace")):
                    break
            assert busy(app.monitor.extras.get("trace")), app.monitor.extras.get("trace")
            live.tracing.draw()
            await pilot.pause()
            text = pane.plain_text()
            assert f"Latency {loop.name}" in text and "device p50" in text, text
            assert "fio" in text, text
            assert "● tracing" in live.status_text()
            await pilot.press("l")
            await app.workers.wait_for_complete()
            assert not pane.display and not live.tracing.probe.running
            assert gone(tracer_pid)
    finally:
        fio.kill()
        fio.wait()
