"""The live screen's block-layer tracing: the latency pane (``l``), the tracer started in a worker (the CO-RE
program loads in about 0.1 s; bpftrace, its fallback, compiles for seconds), the probes added to the Monitor and
taken out again, and the /proc/PID/io fallback.

``Tracing`` is a part of the live screen (``screen.tracing``, a widget: live_part.py) that owns the pane, mounted
inside it on first use, its workers and their messages. The screen keeps the key; whether the pane is open is the
screen's ``tracing_on`` reactive, whose watcher opens and closes it here.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from textual import on
from textual.binding import Binding, BindingType
from textual.message import Message

from iosched.tui.live_part import LivePart
from iosched.tui.widgets.latency_pane import LatencyPane

if TYPE_CHECKING:
    # The tracer, its parser and psutil load when the pane first opens: about 3 MB and 40 ms of start-up
    # that most sessions never use.
    from iosched.core.live.monitor import Monitor
    from iosched.core.trace.probe import ProcIOProbe, TraceProbe
    from iosched.core.trace.tracer import Tracer

# Listed in LiveScreen.BINDINGS.
TRACE_KEYS: list[BindingType] = [
    # Out of the footer (it would push Quit off an 80-column line), listed in the help.
    Binding("l", "trace", "Latency", show=False,
            tooltip="latency pane: time in the scheduler vs device time, per process (block-layer tracing)"),
]


class TracingStarted(Message):
    """A started tracer for the UI thread to keep (its ``generation`` still current) or stop."""

    bubble = False  # the part's own: it keeps or stops the tracer

    def __init__(self, tracer: Tracer, generation: int) -> None:
        super().__init__()
        self.tracer, self.generation = tracer, generation


class TracingNotStarted(Message):
    bubble = False

    def __init__(self, reason: str, generation: int) -> None:
        super().__init__()
        self.reason, self.generation = reason, generation


class Tracing(LivePart):
    """The latency pane and its data sources for one live screen: open, close, the pane's redraw and the status."""

    def __init__(self, monitor: Monitor, read_only: bool) -> None:
        super().__init__(monitor, read_only, id="tracing-part")
        self.opened = False  # the pane is open (the screen's tracing_on)
        self.device = ""  # the device the pane shows (the screen's selected one at its last draw)
        self.probe: TraceProbe | None = None
        self.procio: ProcIOProbe | None = None
        self.note = ""  # what the pane says instead of figures (starting, why tracing is off)
        # Bumped by every open and close: a start worker whose token is no longer current stops what it started.
        self.generation = 0

    def open(self, interval: float, device: str) -> None:
        """Show the pane for ``device`` and start the tracer, sampled every ``interval`` s, in a worker."""
        self.generation += 1
        self.opened = True
        self.pane().display = True
        if self.probe is None:
            from iosched.core.trace.probe import TraceProbe

            self.probe = TraceProbe(interval=interval, root=str(self.monitor.root))
        # The CO-RE tracer loads in about 0.1 s; bpftrace, where it falls back, compiles for seconds.
        self.note = "starting the block-layer tracer (bpftrace, where it falls back, takes a few seconds)…"
        self.draw(device)
        self.run_thread(partial(self._start, self.probe, self.generation), name="start tracing", group="trace")

    def close(self) -> None:
        self.generation += 1
        self.opened = False
        self.pane().display = False
        monitor = self.monitor
        for probe in (self.probe, self.procio):
            if probe is not None and probe in monitor.probes:
                monitor.probes.remove(probe)
        if self.procio is not None:
            self.procio.close()
        self.procio = None
        if self.probe is not None:
            tracer = self.probe.detach()  # a quick toggle back on starts a new one meanwhile
            if tracer is not None:
                self._stop_tracer(tracer)
        monitor.extras.pop("trace", None)
        monitor.extras.pop("procio", None)

    def pane(self) -> LatencyPane:
        """The pane, mounted inside this part, hidden, on first use."""
        found = self.query(LatencyPane)
        if found:
            return found.first()
        pane = LatencyPane(id="latency")
        pane.display = False
        self.mount(pane)
        return pane

    def _start(self, probe: TraceProbe, generation: int) -> None:
        """In a worker thread: bpftrace compiles its program before the first frame."""
        if self.read_only:
            return
        from iosched.core.trace.tracer import TracingFailed, TracingUnavailable

        try:
            tracer = probe.start()
        except (TracingUnavailable, TracingFailed) as e:
            self.post_message(TracingNotStarted(str(e), generation))
            return
        if generation != self.generation:  # toggled meanwhile: an int read, no widget touched
            tracer.stop()
            return
        self.post_message(TracingStarted(tracer, generation))

    @on(TracingStarted)
    def started(self, message: TracingStarted) -> None:
        # The token is checked again here, on the UI thread, where it cannot change under us: a start that
        # lost the race (pane closed, or reopened by a newer start) is stopped, never kept running hidden.
        probe = self.probe
        if message.generation != self.generation or probe is None or not self.opened:
            self._stop_tracer(message.tracer)
            return
        old = probe.attach(message.tracer)
        if old is not None:
            self._stop_tracer(old)
        if probe not in self.monitor.probes:
            self.monitor.probes.append(probe)
        self.note = ""
        self.status_changed()

    @on(TracingNotStarted)
    def not_started(self, message: TracingNotStarted) -> None:
        if message.generation != self.generation:
            return
        if self.probe is not None:
            self.probe.fail(message.reason)
        self.note = message.reason
        self._fall_back_to_procio()
        self.notify(message.reason, title="Block-layer tracing", severity="warning", timeout=8)
        self.draw()

    def _fall_back_to_procio(self) -> None:
        if self.procio is None:
            from iosched.core.trace.probe import ProcIOProbe

            self.procio = ProcIOProbe()
            self.monitor.probes.append(self.procio)

    def _stop_tracer(self, tracer: Tracer) -> None:
        # Stopping kills bpftrace and joins its reader thread: off the UI thread.
        self.run_thread(tracer.stop, name="stop tracing", group="trace-stop")

    def draw(self, device: str | None = None) -> None:
        """Feed the pane ``device``'s latest traces (by default the device it shows), if it is shown."""
        found = self.query(LatencyPane)
        if not found or not found.first().display:
            return
        if device is not None:
            self.device = device
        name = self.device
        from iosched.core.trace.probe import ProcIOView, TraceView

        monitor = self.monitor
        view = monitor.extras.get("trace")
        procio = monitor.extras.get("procio")
        note = self.note
        if isinstance(view, TraceView) and not view.running and view.error:
            note = view.error  # bpftrace died: say so, show the fallback
            self._fall_back_to_procio()
        if note and not note.startswith("starting"):
            note += ("  (block-layer tracing needs root, and iosched's CO-RE tracer built at install or bpftrace: "
                     "apt-get install -y bpftrace)") if "root" not in note and "bpftrace" not in note else ""
        found.first().set_data(name, view if isinstance(view, TraceView) else None,
                               procio if isinstance(procio, ProcIOView) else None,
                               monitor.markers_of(name or None), note)

    def status(self) -> str:
        """The status line's tracing part: empty unless a tracer runs."""
        view = self.monitor.extras.get("trace")
        if view is None:  # every tick: no import while tracing was never started
            return ""
        from iosched.core.trace.probe import TraceView

        if isinstance(view, TraceView) and view.running:
            # What tracing costs: the CO-RE tracer's µs of CPU per IO as last measured (an idle interval has no
            # figure: it said "0.0%" then); bpftrace's own process's share of one CPU.
            latest, cost = view.latest, ""
            if latest is not None and latest.tracer == "libbpf":
                per_io = view.cost_us_per_io
                cost = "" if per_io is None else f" {per_io:.1f} µs/IO"
            elif latest is not None and latest.tracer_cpu is not None:
                cost = f" (bpftrace {latest.tracer_cpu:.1f}% of a CPU)"
            return f"  ● tracing{cost}"
        return ""

    def stop_now(self) -> None:
        """After the UI is gone: bpftrace and the /proc readers stopped, a start still under way included."""
        self.generation += 1  # a start still under way stops what it started
        if self.procio is not None:
            self.procio.close()
        if self.probe is not None:
            self.probe.stop()
