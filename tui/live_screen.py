"""The live view: a Monitor stepped on a timer, the inventory kept fresh (udev events and a slow poll),
and the keys that act on the selected device.

The screen holds the keys, the actions, its own messages and the state it shows (reactives); the work is done by
parts, widgets it composes that own their workers, messages, state and panes (live_part.py): ``settings``
(switch, tunables, persist: live_settings.py), ``jobs`` (the background fio job: live_jobs.py), ``tracing`` (the
latency pane: live_tracing.py) and ``capturing`` (live_capture.py). Each action resolves the device it acts on
and hands it to its part; a part tells the screen when its piece of the status line changed. Compare is
compare_screen.py."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, ClassVar

from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.timer import Timer
from textual.worker import get_current_worker

from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.kernel.devices import inventory_signature
from iosched.core.live.monitor import REFRESH_STEPS, Marker, Monitor
from iosched.core.settings.journal import journal_problem
from iosched.core.settings.persist import DEFAULT_RULES
from iosched.tui.live_capture import CAPTURE_KEYS, Capturing
from iosched.tui.live_jobs import JOB_KEYS, BackgroundJob
from iosched.tui.live_part import READ_ONLY_NOTICE, DevicesChanged, StatusChanged
from iosched.tui.live_settings import SWITCH_KEYS, TUNING_KEYS, SettingWrites
from iosched.tui.live_tracing import TRACE_KEYS, Tracing
from iosched.tui.monitor_screen import MonitorScreen
from iosched.tui.status_line import EXTRA, KEEP, SPARE, USEFUL, fit_parts
from iosched.tui.widgets.device_table import DeviceTable
from iosched.tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from iosched.tui.advise_screen import AdviseScreen
    from iosched.tui.compare_screen import CompareScreen

INTERVALS = REFRESH_STEPS
INVENTORY_POLL_S = 2.0  # an outside scheduler change shows within this
INVENTORY_GAP_S = 1.0  # at most one full inventory read per this, however many uevents arrive
# The graphs and the CPU pane are redrawn at most this often: at 0.25 s sampling every other sample draws
# two new points at once. Redrawing them is most of a tick's cost, and the table still shows every sample.
GRAPH_PERIOD_S = 0.5
SANDBOX_HINT = "sandbox: c start-up under a flood, j job, s switch"
SANDBOX_NOTICE_S = 8  # the start-up notice covers part of the graphs; the status line keeps its advice


class InventoryRead(Message):
    """A fresh inventory from a worker; ``token`` lets a late, older read be dropped."""

    def __init__(self, devices: list[DeviceDoc], token: int) -> None:
        super().__init__()
        self.devices = devices
        self.token = token


class LiveScreen(MonitorScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        *SWITCH_KEYS,
        *JOB_KEYS,
        Binding("c", "compare", "Compare",
                tooltip="compare schedulers: A/B runs with repeats or live alternation, with a verdict"),
        # Not in the key bar (at 80 columns it would push Quit out): F1 and the palette list it.
        Binding("a", "advise", "Advise", show=False,
                tooltip="which scheduler for this disk? observed, planned, tested, decided with its margin, kept"),
        *TUNING_KEYS,
        *TRACE_KEYS,
        *CAPTURE_KEYS,
        Binding("space", "pause", "Pause", show=False, tooltip="pause / resume sampling"),
        Binding("plus,equals_sign", "faster", "Faster", show=False, tooltip="sample faster / slower (0.25 s … 5 s)"),
        Binding("minus", "slower", "Slower", show=False, tooltip="sample faster / slower (0.25 s … 5 s)"),
    ]

    # Their watchers draw: set them once the screen is mounted. No binding depends on them (the keys stay
    # active and say why they cannot act), so none refreshes the bindings.
    paused: reactive[bool] = reactive(False, repaint=False)
    """Sampling stands still (space): the timer is paused and the status line says so."""
    tracing_on: reactive[bool] = reactive(False, repaint=False, toggle_class="-latency")
    """The latency pane is open (l): bpftrace, or the /proc/PID/io fallback, feeds it each tick. The screen's
    ``-latency`` class makes room for it."""
    roles_shown: reactive[bool] = reactive(False, repaint=False, toggle_class="-roles")
    """The chart of a role job's foreground latency is shown under the device's graphs (the selected device is
    the one the last role job ran on); the screen's ``-roles`` class makes room for it."""

    def __init__(self, monitor: Monitor, interval: float = 1.0, auto_tick: bool = True, watch_udev: bool = True,
                 rules_file: str = DEFAULT_RULES, focus: str | None = None, read_only: bool = False,
                 served: bool = False) -> None:
        super().__init__(monitor)
        self.read_only = read_only  # a viewer: watches, never writes (browser views unless --allow-writes)
        self.served = served  # a browser tab of `iosched serve`: never runs commands or reads files it is named
        self.interval = min(INTERVALS, key=lambda i: abs(i - interval))
        self.auto_tick = auto_tick
        self.watch_udev = watch_udev
        self.focus_device = focus  # select this device at start (the demo sandbox)
        self.sandbox_notice_until = 0.0  # monotonic time the demo's start-up notice shows until
        self.compare: CompareScreen | None = None
        self.advise: AdviseScreen | None = None
        self._timer: Timer | None = None
        self._inventory_signature: tuple = ()
        self._inventory_read_at = -INVENTORY_GAP_S
        self._inventory_timer: Timer | None = None
        self._since_graphs = 0.0  # sampling time since the graphs were last drawn
        self._markers_drawn = 0  # markers ever made when the graphs were last drawn: a new one draws at once
        self.settings = SettingWrites(monitor, read_only, rules_file)
        self.jobs = BackgroundJob(monitor, read_only, demo=focus is not None)
        self.tracing = Tracing(monitor, read_only)
        self.capturing = Capturing(monitor, read_only)

    def compose_parts(self) -> ComposeResult:
        # Under the graphs: a role job's chart, then the latency pane (each mounted inside its part on first use).
        yield self.jobs
        yield self.tracing
        yield self.settings
        yield self.capturing

    def on_mount(self) -> None:
        super().on_mount()
        # The first frame shows real rows: ~50 µs per device.
        self.monitor.apply_inventory(self.monitor.read_inventory(), self.monitor.inventory_token())
        self.sync_table()
        self.monitor.baseline()
        if self.auto_tick:
            self._timer = self.set_interval(self.interval, self.tick)
            self.set_interval(INVENTORY_POLL_S, self.poll_inventory)
            if self.watch_udev and str(self.monitor.root) == "/":
                self._watch_udev()
        self.render_status()
        if problem := journal_problem(self.monitor.root):
            self.notify(problem, title="Journal", severity="warning", timeout=30)
        self.query_one(DeviceTable).focus()
        if self.focus_device in [d.name for d in self.devices]:
            self.select(self.focus_device)
            self.notify(f"Sandbox {self.focus_device}: c starts an application while the disk is flooded, under "
                        "each scheduler; j runs a job live (a reader under a write flood), s switches the scheduler "
                        "while it runs. It is removed when you quit.", timeout=SANDBOX_NOTICE_S)
            self.sandbox_notice_until = time.monotonic() + SANDBOX_NOTICE_S

    def on_screen_suspend(self) -> None:
        """A dialog or screen opens over this one (the job picker, F1 help): the demo's start-up notice would cover
        its right half at 80 columns, and its advice is done (the status line keeps it)."""
        if time.monotonic() < self.sandbox_notice_until:
            self.sandbox_notice_until = 0.0
            self.app.clear_notifications()

    # ---- sampling -----------------------------------------------------------------------------
    def tick(self) -> None:
        """One Monitor step, then redraw what is visible. Procfs reads take microseconds."""
        if self.monitor.step() is None:
            return
        if self.monitor.take_disks_changed():
            self.refresh_inventory()
        self._since_graphs += self.interval
        marked = self.monitor.marks_made
        graphs = self._since_graphs >= GRAPH_PERIOD_S - 1e-9 or marked != self._markers_drawn
        if graphs:
            self._since_graphs, self._markers_drawn = 0.0, marked
        self.redraw(graphs=graphs)
        dev = self.selected_device()
        self.tracing.draw(dev.name if dev else "")  # nothing while its pane is hidden

    def status_text(self, width: int | None = None) -> str:
        """The status line fitted to ``width`` (default: the status bar's): what is left out first when it
        is short is the least useful part (sort order, interval, name), never the device or a job's
        progress and its stop key."""
        if width is None:
            width = self.app.size.width - self.query_one(StatusBar).styles.gutter.width
        dev = self.selected_device()
        where = "no device" if dev is None else f"{dev.name} [{dev.scheduler or 'no scheduler'}]"
        state = "❚❚ paused" if self.paused else "● live"
        if self.jobs.job is not None:  # the job's figures matter more than the settings line
            tick = (f"{state[0]} {self.interval:g}s", USEFUL if self.paused else SPARE)
            return fit_parts([("iosched", SPARE), (where, KEEP), (self.capturing.status(), KEEP), tick,
                              *self.jobs.status_parts()], width, sep=" ")
        util = ""
        if dev is not None and not dev.util_is_saturation:
            util = "%util≠saturation (multi-queue SSD)"
        if dev is not None and not dev.iostats:
            util = "iostats off: counters frozen"
        hint = ""
        if dev is not None and dev.name == self.focus_device and not self.read_only:
            hint = SANDBOX_HINT  # the start-up notice's advice, where it covers nothing
        # A running capture stays in view: it writes a file until C stops it.
        return fit_parts([("iosched", SPARE), ("read-only" if self.read_only else "", KEEP), (where, KEEP),
                          (self.capturing.status(), KEEP), (state, USEFUL), (f"every {self.interval:g}s", SPARE),
                          (f"sort {self.sort_key}", SPARE),
                          (util, USEFUL), (self.tracing.status().strip(), USEFUL), (hint, EXTRA)], width)

    def on_resize(self, event: events.Resize) -> None:
        self.render_status()  # MonitorScreen's own handler runs too (size classes)

    def action_pause(self) -> None:
        self.paused = not self.paused

    def watch_paused(self, paused: bool) -> None:
        if self._timer is not None:
            if paused:
                self._timer.pause()
                if self._since_graphs:  # the last sample skipped the graphs: show it while paused
                    self._since_graphs = 0.0
                    self.draw_graphs()
            else:
                self.monitor.baseline()  # no point averaging over the pause
                self._timer.resume()
        self.render_status()

    def _set_interval(self, step: int) -> None:
        i = INTERVALS.index(self.interval)
        self.interval = INTERVALS[max(0, min(len(INTERVALS) - 1, i + step))]
        if self._timer is not None:
            self._timer.stop()
            self._timer = self.set_interval(self.interval, self.tick, pause=self.paused)
        self.render_status()

    def action_faster(self) -> None:
        self._set_interval(-1)

    def action_slower(self) -> None:
        self._set_interval(+1)

    # ---- inventory ----------------------------------------------------------------------------
    def refresh_inventory(self) -> None:
        """Re-read the inventory now, or, within INVENTORY_GAP_S of the last read, once when the gap ends:
        a burst of uevents (loop devices attached by the dozen) costs one or two reads, not one each."""
        if self._inventory_timer is not None:  # a read is already due: it will see this change too
            return
        wait = self._inventory_read_at + INVENTORY_GAP_S - time.monotonic()
        if wait <= 0:
            self._reload_inventory()
        else:
            self._inventory_timer = self.set_timer(wait, self._reload_inventory)

    def _reload_inventory(self) -> None:
        self._inventory_timer = None
        self._inventory_read_at = time.monotonic()
        self._read_inventory(self.monitor.inventory_token())

    def poll_inventory(self) -> None:
        """The slow poll reads the whole inventory only when its cheap signature moved."""
        self._poll_inventory(self.monitor.inventory_token())

    @work(thread=True, exclusive=True, group="inventory", exit_on_error=False)
    def _read_inventory(self, token: int) -> None:
        if not get_current_worker().is_cancelled:
            self._inventory_signature = inventory_signature(self.monitor.root)
            self.post_message(InventoryRead(self.monitor.read_inventory(), token))

    # A group of its own: a poll must not cancel a read a uevent asked for (that change may not show in the
    # signature, e.g. a new filesystem); a late result of either is dropped by its token.
    @work(thread=True, exclusive=True, group="inventory-poll", exit_on_error=False)
    def _poll_inventory(self, token: int) -> None:
        # A full read costs 20-30 ms at 40 devices; the signature about 1 ms.
        signature = inventory_signature(self.monitor.root)
        if signature != self._inventory_signature and not get_current_worker().is_cancelled:
            self._inventory_signature = signature
            self.post_message(InventoryRead(self.monitor.read_inventory(), token))

    def on_inventory_read(self, message: InventoryRead) -> None:
        same = sorted(message.devices, key=lambda d: d.name) == sorted(self.devices, key=lambda d: d.name)
        diff = self.monitor.apply_inventory(message.devices, message.token)
        if diff is None or same:
            return  # a stale read, or the slow poll found nothing new: no table update, no repaint
        self.sync_table()
        self.redraw()

    def on_devices_changed(self, _: DevicesChanged) -> None:
        """A uevent, or a part wrote a device's settings."""
        self.refresh_inventory()

    def on_status_changed(self, _: StatusChanged) -> None:
        self.render_status()

    @work(thread=True, exclusive=True, group="udev", exit_on_error=False)
    def _watch_udev(self) -> None:
        try:
            import pyudev

            context = pyudev.Context()
            # Without a running udevd (containers, minimal VMs) only the kernel's own events arrive.
            source = "udev" if os.path.exists("/run/udev/control") else "kernel"
            monitor = pyudev.Monitor.from_netlink(context, source=source)
            monitor.filter_by("block")
            monitor.start()
        except Exception:
            return  # the slow poll still notices changes
        worker = get_current_worker()
        while not worker.is_cancelled:
            if monitor.poll(timeout=0.5) is not None:
                self.post_message(DevicesChanged())

    def refused_read_only(self) -> bool:
        """In a read-only view a write action says why it does nothing."""
        if self.read_only:
            self.notify(READ_ONLY_NOTICE, title="Read-only", severity="warning", timeout=6)
        return self.read_only

    def device_to_write(self, needs_scheduler: bool = True) -> DeviceDoc | None:
        """The selected device for a write action, or None after saying why not (read-only view, no device
        selected, a device whose driver has no IO scheduler)."""
        if self.refused_read_only():
            return None
        dev = self.selected_device()
        if dev is None:
            self.notify("No device selected.", severity="warning")
            return None
        if needs_scheduler and not dev.has_scheduler:
            self.notify(f"{dev.name} has no IO scheduler (its driver bypasses the elevator).", severity="warning")
            return None
        return dev

    # ---- the parts' keys ----------------------------------------------------------------------
    # Textual reads bindings from the screen: each action names the device its part acts on.
    def action_switch(self) -> None:
        if (dev := self.device_to_write()) is not None:
            self.settings.pick_scheduler(dev)

    def action_tunables(self) -> None:
        if (dev := self.device_to_write()) is not None:
            self.settings.edit_tunables(dev)

    def action_persist(self) -> None:
        if (dev := self.device_to_write()) is not None:
            self.settings.persist(dev)

    def action_job(self) -> None:
        if (dev := self.device_to_write(needs_scheduler=False)) is not None:
            self.jobs.pick(dev)

    def action_stop_job(self) -> None:
        self.jobs.stop()

    def draw_extra_charts(self, dev: DeviceDoc | None, times: list[float], marks: list[Marker]) -> None:
        self.roles_shown = self.jobs.draw_chart(dev, times, marks)

    def watch_roles_shown(self, shown: bool) -> None:
        if shown:  # the chart has no size until the layout makes room for it
            self.call_after_refresh(self.draw_graphs)

    def action_trace(self) -> None:
        # bpftrace runs as root and mounts tracefs: a write in all but name.
        if self.tracing_on or not self.refused_read_only():
            self.tracing_on = not self.tracing_on

    def watch_tracing_on(self, on: bool) -> None:
        if on:
            dev = self.selected_device()
            self.tracing.open(self.interval, dev.name if dev else "")
        else:
            self.tracing.close()
            self.render_status()

    def action_capture(self) -> None:
        # The capture's tracer runs as root and the file it writes is the user's: the part refuses when read-only.
        self.capturing.toggle(self.selected_device())

    # ---- compare ------------------------------------------------------------------------------
    def device_for_a_run(self) -> DeviceDoc | None:
        """The selected device for a compare or an advice, which has it alone: None, and why said, while the screen
        is read-only or its background job runs."""
        dev = self.device_to_write()
        if dev is not None and self.jobs.job is not None:
            self.notify("Stop the running job first (x).", severity="warning")
            return None
        return dev

    def action_compare(self) -> None:
        dev = self.device_for_a_run()
        if dev is None:
            return
        if self.compare is not None and self.compare.running:
            self.app.push_screen(self.compare)
            return

        def closed(_: None) -> None:
            if self.compare is not None and not self.compare.running:
                self.compare = None

        from iosched.tui.compare_screen import CompareScreen

        self.compare = CompareScreen(self.monitor, dev, self, served=self.served, spec=self.capturing.spec(),
                                     demo=self.jobs.demo and dev.name == self.focus_device)
        self.app.push_screen(self.compare, closed)

    def on_compare_screen_run_started(self, message: CompareScreen.RunStarted) -> None:
        self.monitor.mark(message.device, message.scheduler, kind="run")

    def on_compare_screen_finished(self, _: CompareScreen.Finished) -> None:
        self.refresh_inventory()  # the experiment put the device back

    # ---- advise -------------------------------------------------------------------------------
    def action_advise(self, device: str | None = None) -> None:
        """The Advise screen for the selected device (or ``device``, from the palette); the one running is shown
        again rather than a second started."""
        if device is not None:
            self.select(device)
        if self.advise is not None and self.advise.running:
            self.app.push_screen(self.advise)
            return
        dev = self.device_for_a_run()
        if dev is None:
            return
        if self.compare is not None and self.compare.running:
            self.notify("A comparison is running on this screen's devices: wait for it, or cancel it (c, Esc).",
                        severity="warning")
            return

        def closed(_: None) -> None:
            if self.advise is not None and not self.advise.running:
                self.advise = None

        from iosched.tui.advise_screen import AdviseScreen

        self.advise = AdviseScreen(self.monitor, dev, self)
        self.app.push_screen(self.advise, closed)

    # ---- the way out --------------------------------------------------------------------------
    def stop_children(self) -> None:
        """Quit, SIGTERM, SIGHUP: fio is told to die and experiments are cancelled; returns at once."""
        if self.jobs.job is not None:
            self.jobs.job.kill(self.monitor.root, wait=False)
        if self.compare is not None:
            self.compare.cancel()
        if self.advise is not None:
            self.advise.cancel()
        if self.capturing.run is not None:
            self.capturing.run.stop()

    def wait_for_experiments(self) -> None:
        """A cancelled compare's or advice's own put-back done (each given its switch's deadline): before the
        quit's restore, which would race it, and before the process ends."""
        for run in (self.compare, self.advise):
            if run is not None:
                run.wait()

    def wait_for_children(self, timeout: float = 20.0) -> None:
        """After the UI is gone: fio reaped, scratch files removed, an experiment's device put back."""
        self.tracing.stop_now()
        self.capturing.stop_now()
        if (job := self.jobs.job) is not None:
            job.kill(self.monitor.root, wait=True)
            job.finished.wait(timeout)
        self.wait_for_experiments()
