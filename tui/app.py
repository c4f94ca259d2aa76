"""The Textual app: live device table, graphs of the selected device, CPU pane, scheduler hot-swap."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol

from textual import events, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid
from textual.message import Message
from textual.theme import Theme
from textual.timer import Timer
from textual.widgets import DataTable, Footer
from textual.worker import get_current_worker

from iosched.core.devices import BlockDevice, list_devices
from iosched.core.errors import IoschedError
from iosched.core.persist import DEFAULT_RULES, apply_hint, build_rule, merged
from iosched.core.persist import covers as persist_covers
from iosched.core.sampler import History, Rates, Sample, Sampler, compute_rates
from iosched.core.scheduler import switch_scheduler
from iosched.core.targets import Refused, target_hint
from iosched.core.tunables import apply as apply_settings
from iosched.core.tunables import changed_here, list_settings
from iosched.core.units import short_number
from iosched.core.writes import WriteResult, restore, write_rules_file
from iosched.themes import THEME_NAMES, stylesheets
from iosched.tui.commands import SchedulerCommands
from iosched.tui.screens import (
    ConfirmScreen,
    HelpScreen,
    JobPicker,
    PersistScreen,
    SchedulerPicker,
    TunablesScreen,
    TypeNameScreen,
)
from iosched.tui.widgets import CpuPane, DeviceTable, LineChart, Marker, StatusBar

if TYPE_CHECKING:  # the workload and experiment modules load on first use: a faster first frame
    from iosched.core.fio import FioProgress, FioResult
    from iosched.core.recording import Recording
    from iosched.tui.compare_screen import CompareScreen
    from iosched.tui.job_run import JobState

INTERVALS = (0.25, 0.5, 1.0, 2.0, 5.0)
SORT_KEYS = ("name", "r_s", "w_s", "util", "r_await", "w_await")
HISTORY_POINTS = 1200  # 10 min at 0.5 s; idle devices share one zero-rates object, so this stays small
INVENTORY_POLL_S = 2.0  # an outside scheduler change shows within this

MONO_THEME = Theme(
    name="iosched-mono", primary="#c0c0c0", secondary="#a0a0a0", accent="#ffffff", warning="#ffffff",
    error="#ffffff", success="#d0d0d0", foreground="#e0e0e0", background="#000000", surface="#101010",
    panel="#202020", dark=True,
)
TEXTUAL_THEME = {"dark": "textual-dark", "light": "textual-light", "mono": "iosched-mono"}
READ_ONLY_NOTICE = ("This is a read-only view: switching, jobs, experiments, tunables and persist are off. "
                    "Writes need the TUI in a terminal, or `iosched serve --allow-writes`.")


class SampleSource(Protocol):
    def take(self) -> Sample: ...


class InventoryLoaded(Message):
    def __init__(self, devices: list[BlockDevice]) -> None:
        super().__init__()
        self.devices = devices


class DevicesChanged(Message):
    """A block uevent arrived (attach, detach, change): re-read the inventory."""


class SwitchDone(Message):
    def __init__(self, result: WriteResult) -> None:
        super().__init__()
        self.result = result


class SwitchFailed(Message):
    def __init__(self, device: str, error: str) -> None:
        super().__init__()
        self.device = device
        self.error = error


class JobProgressed(Message):
    def __init__(self, progress: FioProgress) -> None:
        super().__init__()
        self.progress = progress


class JobEnded(Message):
    """The job finished (result), failed or was stopped (error), or needs the device name typed (refused)."""

    def __init__(self, state: JobState, result: FioResult | None = None, error: str = "",
                 refused: Refused | None = None) -> None:
        super().__init__()
        self.state = state
        self.result = result
        self.error = error
        self.refused = refused


class IoschedApp(App[int]):
    TITLE = "iosched"
    CSS_PATH: ClassVar = [str(p) for p in stylesheets()]
    COMMANDS: ClassVar = App.COMMANDS | {SchedulerCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "switch", "Scheduler"),
        Binding("j", "job", "Job"),
        Binding("x", "stop_job", "Stop job", show=False),  # the status line says "x stops" while a job runs
        Binding("c", "compare", "Compare"),
        Binding("u", "tunables", "Tunables"),
        Binding("P", "persist", "Persist", show=False),  # the status line says "x stops" while a job runs
        Binding("space", "pause", "Pause", show=False),
        Binding("plus,equals_sign", "faster", "Faster", show=False),
        Binding("minus", "slower", "Slower", show=False),
        Binding("o", "sort", "Sort", show=False),
        Binding("t", "cycle_theme", "Theme", show=False),
        Binding("comma", "replay_step(-10)", "Back", show=False),
        Binding("full_stop", "replay_step(10)", "Forward", show=False),
        Binding("less_than_sign", "replay_step(-60)", "Back 1 min", show=False),
        Binding("greater_than_sign", "replay_step(60)", "Forward 1 min", show=False),
        Binding("g", "replay_edge(False)", "Start", show=False),
        Binding("G", "replay_edge(True)", "End", show=False),
        Binding("question_mark,f1", "help", "Help"),
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]
    HELP_KEYS: ClassVar[list[tuple[str, str]]] = [
        ("↑/↓", "select a device (its graphs show below the table)"),
        ("s", "switch the selected device's IO scheduler (picker; Enter applies)"),
        ("j", "run a fio job on the selected device in the background (W = writes)"),
        ("x", "stop the running job"),
        ("c", "compare schedulers: A/B runs with repeats or live alternation, with a verdict"),
        ("u", "the scheduler's tunables and the queue knobs, with meanings; Enter edits (journaled)"),
        ("P", "make the selected device's scheduler permanent (udev rule; shows the change first)"),
        ("ctrl+p", "command palette: '<dev>: scheduler -> <name>' and more"),
        ("space", "pause / resume sampling"),
        ("+ / -", "sample faster / slower (0.25 s … 5 s)"),
        ("o", "sort the table: name, r/s, w/s, %util, r_await, w_await"),
        ("t", "cycle theme: dark, light, mono"),
        ("? / F1", "this help"),
        ("q / ctrl+c", "quit (offers to restore schedulers changed in this session)"),
    ]

    def __init__(self, root: str | Path = "/", interval: float = 1.0, theme_name: str = "dark",
                 sampler: SampleSource | None = None, auto_tick: bool = True, watch_udev: bool = True,
                 rules_file: str = DEFAULT_RULES, focus: str | None = None, replay: Recording | None = None,
                 replay_name: str = "", read_only: bool = False) -> None:
        super().__init__()
        self.read_only = read_only  # a viewer: watches, never writes (browser views unless --allow-writes)
        self.replay = replay
        self.replay_name = replay_name
        self._replay_rates: list[Rates] = []
        self._replay_start_sched: dict[str, str | None] = {}  # scheduler per device when recording began
        self.replay_pos = 0  # how many replayed intervals are shown (the scrub position)
        if replay is not None:
            auto_tick, watch_udev = False, False
        self.rules_file = rules_file
        self.focus_device = focus  # select this device at start (the demo sandbox)
        self.hangup_cleanups: list[Callable[[], None]] = []  # run on SIGHUP, which skips every `finally`
        self.root = Path(root)
        self.interval = min(INTERVALS, key=lambda i: abs(i - interval))
        self.theme_name = theme_name if theme_name in THEME_NAMES else "dark"
        self.sampler: SampleSource = sampler or Sampler(root)
        self.auto_tick = auto_tick
        self.watch_udev = watch_udev
        self.history = History(HISTORY_POINTS)
        self.devices: list[BlockDevice] = []
        self.markers: deque[Marker] = deque(maxlen=500)
        self.changed_devices: set[str] = set()
        self.sort_key = "name"
        self.paused = False
        self.last_rates: Rates | None = None
        self._prev: Sample | None = None
        self._disk_names: frozenset[str] = frozenset()
        self._timer: Timer | None = None
        self._switching = False
        self._selected: str | None = None
        self.job: JobState | None = None
        self.compare: CompareScreen | None = None

    # ---- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        yield DeviceTable(id="devices")
        with Grid(id="graphs"):
            yield LineChart("IOPS", ["r/s", "w/s"], id="chart-iops")
            yield LineChart("Device latency ms", ["r_await", "w_await"], id="chart-latency")
            yield LineChart("MB/s", ["read", "write"], id="chart-throughput")
            yield LineChart("Queue", ["aqu-sz", "%util"], id="chart-queue")
        yield CpuPane(id="cpu")
        yield Footer()

    def on_mount(self) -> None:
        self.register_theme(MONO_THEME)
        self._apply_theme()
        self._apply_size_classes()
        if self.replay is not None:
            self._mount_replay(self.replay)
            return
        self.devices = list_devices(self.root)  # first frame shows real rows; ~50 µs per device
        self._sync_table()
        self._prev = self.sampler.take()
        self._disk_names = frozenset(self._prev.disks)
        if self.auto_tick:
            self._timer = self.set_interval(self.interval, self.tick)
            self.set_interval(INVENTORY_POLL_S, self.refresh_inventory)
            if self.watch_udev and str(self.root) == "/":
                self._watch_udev()
        self._render_status()
        table = self.query_one(DeviceTable)
        table.focus()
        if self.focus_device in [d.name for d in self.devices]:
            table.move_cursor(row=[d.name for d in self.devices].index(self.focus_device))
            self._selected = self.focus_device
            self.notify(f"Sandbox {self.focus_device}: j runs a job (randread-q16t2 shows scheduler cost), "
                        "s switches the scheduler while it runs, c compares. It is removed when you quit.",
                        timeout=15)

    def on_resize(self, event: events.Resize) -> None:
        self._apply_size_classes(event.size.width, event.size.height)

    def _apply_size_classes(self, w: int | None = None, h: int | None = None) -> None:
        if w is None or h is None:
            w, h = self.size
        self.screen.set_class(w < 100 or h < 30, "-compact")
        self.screen.set_class(w < 60 or h < 16, "-tiny")

    def _apply_theme(self) -> None:
        for name in THEME_NAMES:
            self.set_class(name == self.theme_name, f"theme-{name}")
        self.theme = TEXTUAL_THEME[self.theme_name]

    # ---- sampling -----------------------------------------------------------------------------
    def tick(self) -> None:
        """One sample, rates, history; then redraw what is visible. Procfs reads take microseconds."""
        cur = self.sampler.take()
        prev, self._prev = self._prev, cur
        if prev is None:
            return
        rates = compute_rates(prev, cur)
        self.history.append(rates)
        self.last_rates = rates
        names = frozenset(cur.disks)
        if names != self._disk_names:
            self._disk_names = names
            self.refresh_inventory()
        self._redraw()

    def _redraw(self) -> None:
        with self.batch_update():
            if self.sort_key != "name":
                self._sync_table()
            table = self.query_one(DeviceTable)
            if self.last_rates is not None:
                table.update_rates(self.devices, self.last_rates.disks)
            self._draw_graphs()
            self._render_status()

    def _draw_graphs(self) -> None:
        dev = self.selected_device()
        # Only what the widest graph can show: copying the whole 1200-point window each tick costs more.
        last = max(2, self.size.width * 2)
        times = self.history.recent_times(last)
        marks = [m for m in self.markers if dev is not None and m.device == dev.name]
        name = dev.name if dev else ""

        def series(field: str, scale: float = 1.0) -> list[float | None]:
            values = self.history.disk_series(name, field, last)
            return values if scale == 1.0 else [None if v is None else v * scale for v in values]

        charts = {
            "chart-iops": [series("r_s"), series("w_s")],
            "chart-latency": [series("r_await"), series("w_await")],
            "chart-throughput": [series("rkB_s", 1 / 1024), series("wkB_s", 1 / 1024)],
            "chart-queue": [series("aqu_sz"), series("util")],
        }
        for chart_id, data in charts.items():
            chart = self.query_one(f"#{chart_id}", LineChart)
            if chart.display and chart.size.width:
                chart.set_data(times, data, marks)
        cpu = self.query_one(CpuPane)
        if cpu.display:
            cpu.set_data(self.history.cpu_rates("all", max(1, cpu.size.width)),
                         self.last_rates.cpus if self.last_rates else {})

    def _render_status(self) -> None:
        if self.replay is not None:
            self.query_one(StatusBar).set_text(self._replay_status())
            return
        dev = self.selected_device()
        where = "no device" if dev is None else f"{dev.name} [{dev.scheduler or 'no scheduler'}]"
        state = "❚❚ paused" if self.paused else "● live"
        util = ""
        if dev is not None and not dev.util_is_saturation:
            util = "  %util≠saturation (multi-queue SSD)"
        if dev is not None and not dev.iostats:
            util = "  iostats off: counters frozen"
        if self.job is not None:  # the job's figures matter more than the settings line
            self.query_one(StatusBar).set_text(f"{where} {state[0]} {self.interval:g}s{self._job_text()}")
            return
        mode = "  read-only" if self.read_only else ""
        self.query_one(StatusBar).set_text(
            f"iosched{mode}  {where}  {state}  every {self.interval:g}s  sort {self.sort_key}{util}")

    def _job_text(self) -> str:
        job = self.job
        if job is None:
            return ""
        p = job.progress
        if p is None:
            return f"  ▶ {job.job.name} on {job.device}: starting…"
        lat = f" {p.clat_mean_us:.0f}µs" if p.clat_mean_us is not None else ""
        dev = ""
        if self.last_rates is not None and job.device in self.last_rates.disks:
            d = self.last_rates.disks[job.device]
            dev = f" · dev {short_number(d.r_s + d.w_s)}"
        return (f" ▶ {job.job.name} {p.elapsed:.0f}/{job.job.runtime:.0f}s fio {short_number(p.iops)} IOPS{lat}"
                f"{dev} · x stops")

    # ---- inventory ----------------------------------------------------------------------------
    def refresh_inventory(self) -> None:
        if self.replay is None:  # a replay's inventory is the recorded one
            self._load_inventory()

    # ---- replay -------------------------------------------------------------------------------
    def _mount_replay(self, rec: Recording) -> None:
        self.devices = rec.inventory
        self._replay_start_sched = {d.name: d.scheduler for d in self.devices}
        self._replay_rates = list(rec.rates())
        self.markers.extend(Marker(e.time, e.device, e.label) for e in rec.events)
        self._sync_table()
        self.query_one(DeviceTable).focus()
        self.replay_seek(len(self._replay_rates))

    def replay_seek(self, pos: int) -> None:
        """Show the recording up to interval ``pos``: the graphs' window ends there, the table shows it."""
        pos = max(1, min(len(self._replay_rates), pos))
        self.replay_pos = pos
        self.history = History(HISTORY_POINTS)
        for rates in self._replay_rates[max(0, pos - HISTORY_POINTS):pos]:
            self.history.append(rates)
        self.last_rates = self._replay_rates[pos - 1]
        # The table's scheduler column as it was at that moment.
        assert self.replay is not None
        at = self.last_rates.time
        sched = dict(self._replay_start_sched)
        for e in self.replay.events:
            if e.name == "scheduler" and e.time <= at:
                sched[e.device] = e.new
        self.devices = [replace(d, scheduler=sched.get(d.name, d.scheduler)) for d in self.devices]
        self._sync_table()
        self._redraw()

    def action_replay_step(self, step: int) -> None:
        if self.replay is not None:
            self.replay_seek(self.replay_pos + step)

    def action_replay_edge(self, end: bool) -> None:
        if self.replay is not None:
            self.replay_seek(len(self._replay_rates) if end else 1)

    def _replay_status(self) -> str:
        assert self.replay is not None
        t0 = self.replay.samples[0].time
        at = self.last_rates.time - t0 if self.last_rates else 0.0
        span = self.replay.samples[-1].time - t0
        wall = datetime.fromtimestamp(self.replay.header["start_wall"] + at).astimezone()
        dev = self.selected_device()
        where = "" if dev is None else f"{dev.name} "
        return (f"replay {self.replay_name}  {where}{wall:%H:%M:%S} +{at:.1f}/{span:.1f}s  "
                ",/. step  </> 1 min  g/G start/end")

    @work(thread=True, exclusive=True, group="inventory", exit_on_error=False)
    def _load_inventory(self) -> None:
        self.post_message(InventoryLoaded(list_devices(self.root)))

    def on_inventory_loaded(self, message: InventoryLoaded) -> None:
        by_name = sorted(message.devices, key=lambda d: d.name)
        if by_name == sorted(self.devices, key=lambda d: d.name):
            return  # the slow poll found nothing new: no table update, no repaint
        # A scheduler changed by someone else (`iosched compare` in another pane, udev, tuned): mark it too.
        before = {d.name: d.scheduler for d in self.devices}
        for d in message.devices:
            old = before.get(d.name)
            if old is not None and d.scheduler and d.scheduler != old:
                self._mark(d.name, d.scheduler, time.monotonic())
        self.devices = message.devices
        self._sync_table()
        self._redraw()

    def _mark(self, device: str, label: str, at: float) -> None:
        """A marker on the device's graphs, once: our own switch and the inventory poll both see it."""
        if not any(m.device == device and m.label == label and abs(at - m.time) < 5 for m in self.markers):
            self.markers.append(Marker(at, device, label))

    def on_devices_changed(self, _: DevicesChanged) -> None:
        self.refresh_inventory()

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

    def _sorted_devices(self) -> list[BlockDevice]:
        if self.sort_key == "name" or self.last_rates is None:
            return sorted(self.devices, key=lambda d: d.name)
        rates = self.last_rates.disks

        def key(d: BlockDevice) -> tuple[float, str]:
            r = rates.get(d.name)
            return (-(getattr(r, self.sort_key) if r else 0.0), d.name)

        return sorted(self.devices, key=key)

    def _sync_table(self) -> None:
        self.devices = self._sorted_devices()
        table = self.query_one(DeviceTable)
        table.sync_rows(self.devices)
        if self.last_rates is not None:
            table.update_rates(self.devices, self.last_rates.disks)
        self._selected = table.selected_name()

    def selected_device(self) -> BlockDevice | None:
        name = self._selected
        return next((d for d in self.devices if d.name == name), None)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._selected = None if event.row_key.value is None else str(event.row_key.value)
        self._draw_graphs()
        self._render_status()

    # ---- switching ----------------------------------------------------------------------------
    def refused_read_only(self) -> bool:
        """In a read-only view a write action says why it does nothing."""
        if self.read_only:
            self.notify(READ_ONLY_NOTICE, title="Read-only", severity="warning", timeout=6)
        return self.read_only

    def action_switch(self) -> None:
        if self.refused_read_only():
            return
        dev = self.selected_device()
        if dev is None:
            self.notify("No device selected.", severity="warning")
            return
        if not dev.has_scheduler:
            self.notify(f"{dev.name} has no IO scheduler (its driver bypasses the elevator).", severity="warning")
            return
        if self._switching:
            return  # debounce: one switch at a time

        def chosen(name: str | None) -> None:
            if name is not None:
                self.start_switch(dev.name, name)

        self.push_screen(SchedulerPicker(dev.name, dev.scheduler, dev.schedulers), chosen)

    def start_switch(self, device: str, name: str) -> None:
        if self.refused_read_only():  # the command palette comes here directly
            return
        if self._switching:
            self.notify("A switch is already in progress.", severity="warning")
            return
        self._switching = True
        self._write_worker(device, lambda: switch_scheduler(device, name, root=self.root))

    @work(thread=True, group="switch", exit_on_error=False)
    def _write_worker(self, device: str, write: Callable[[], WriteResult]) -> None:
        """A sysfs write off the UI thread: a switch on a busy device waits for its queue to drain."""
        if self.read_only:
            return
        try:
            result = write()
        except IoschedError as e:
            self.post_message(SwitchFailed(device, str(e)))
        except Exception as e:  # never let a write take the app down
            self.post_message(SwitchFailed(device, f"{type(e).__name__}: {e}"))
        else:
            self.post_message(SwitchDone(result))

    def on_switch_done(self, message: SwitchDone) -> None:
        self._switching = False
        r = message.result
        what = "" if r.attr == "queue/scheduler" else f"{r.attr.rsplit('/', 1)[-1]} "
        if r.old == r.new:
            self.notify(f"{r.device} {what}already {r.new}.")
            return
        self.changed_devices.add(r.device)
        self._mark(r.device, r.new if not what else f"{what.strip()}={r.new}", r.time)
        self.notify(f"{r.device}: {what}{r.old} -> {r.new} in {r.seconds * 1000:.1f} ms")
        self.refresh_inventory()

    def on_switch_failed(self, message: SwitchFailed) -> None:
        self._switching = False
        self.notify(message.error, title=f"{message.device}: switch failed", severity="error", timeout=8)

    MAIN_SCREEN_ACTIONS: ClassVar[frozenset[str]] = frozenset(
        {"switch", "job", "stop_job", "compare", "sort", "pause", "faster", "slower", "tunables", "persist"})

    LIVE_ACTIONS: ClassVar[frozenset[str]] = frozenset(
        {"switch", "job", "stop_job", "compare", "tunables", "persist", "pause", "faster", "slower"})

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.replay is not None:  # a replay shows the past: nothing to switch, load or tune
            return action not in self.LIVE_ACTIONS
        if action.startswith("replay_"):
            return False
        # On the experiment screen the device belongs to the experiment: no switching or jobs from here.
        owned = getattr(self.screen, "OWNS_DEVICE", False)  # the experiment screen
        return not (action in self.MAIN_SCREEN_ACTIONS and owned)

    # ---- jobs ---------------------------------------------------------------------------------
    def action_job(self) -> None:
        if self.refused_read_only():
            return
        dev = self.selected_device()
        if dev is None:
            self.notify("No device selected.", severity="warning")
            return
        if self.job is not None:
            self.notify(f"{self.job.job.name} is still running on {self.job.device}: x stops it.", severity="warning")
            return

        def chosen(name: str | None) -> None:
            if name is not None:
                self.start_job(dev.name, name)

        from iosched.tui.job_run import TUI_RUNTIME_S, picker_jobs

        self.push_screen(JobPicker(dev.name, picker_jobs(), target_hint(dev), TUI_RUNTIME_S), chosen)

    def start_job(self, device: str, name: str, destroy: bool = False) -> None:
        if self.job is not None or self.read_only:
            return
        from iosched.tui.job_run import JobState, tui_job

        self.job = JobState(device, tui_job(name))
        self.markers.append(Marker(self.job.started, device, "job"))
        self._job_worker(self.job, destroy)
        self._render_status()

    @work(thread=True, group="job", exit_on_error=False)
    def _job_worker(self, state: JobState, destroy: bool) -> None:
        from iosched.tui.job_run import run_job

        try:
            result = run_job(state, destroy, self.root, lambda p: self.post_message(JobProgressed(p)))
        except Refused as e:
            self.post_message(JobEnded(state, error=str(e), refused=e))
        except IoschedError as e:
            self.post_message(JobEnded(state, error=str(e)))
        except Exception as e:  # a job must never take the app down
            self.post_message(JobEnded(state, error=f"{type(e).__name__}: {e}"))
        else:
            self.post_message(JobEnded(state, result=result))

    def on_job_progressed(self, message: JobProgressed) -> None:
        if self.job is not None:
            self.job.progress = message.progress
            self._render_status()

    def on_job_ended(self, message: JobEnded) -> None:
        state = message.state
        if self.job is state:
            self.job = None
        self.markers.append(Marker(time.monotonic(), state.device, "end"))
        self._render_status()
        r = message.result
        if r is not None:
            self.notify(f"{state.job.name} on {state.device}: {short_number(r.iops)} IOPS, {r.mb_s:.0f} MB/s, "
                        f"p99 {r.clat_p99_us or 0:.0f} µs", timeout=8)
        elif message.refused is not None and message.refused.confirmable:
            def confirmed(yes: bool | None) -> None:
                if yes:
                    self.start_job(state.device, state.job.name, destroy=True)

            self.push_screen(TypeNameScreen(state.device, message.refused.why), confirmed)
        elif state.stopping:
            self.notify(f"{state.job.name} on {state.device} stopped.")
        else:
            self.notify(message.error, title=f"{state.device}: job failed", severity="error", timeout=10)

    def action_stop_job(self) -> None:
        if self.job is None:
            self.notify("No job is running.")
            return
        self.job.stop()

    def kill_job(self) -> None:
        """fio dies and its scratch file is removed now: quit, SIGTERM, SIGHUP. Experiments are cancelled."""
        if self.job is not None:
            self.job.kill(self.root)
        if self.compare is not None:
            self.compare.cancel()

    def action_compare(self) -> None:
        if self.refused_read_only():
            return
        dev = self.selected_device()
        if dev is None or not dev.has_scheduler:
            self.notify("Select a device with an IO scheduler first.", severity="warning")
            return
        if self.job is not None:
            self.notify("Stop the running job first (x).", severity="warning")
            return
        if self.compare is not None and self.compare.running:
            self.push_screen(self.compare)
            return

        def closed(_: None) -> None:
            if self.compare is not None and not self.compare.running:
                self.compare = None

        from iosched.tui.compare_screen import CompareScreen

        self.compare = CompareScreen(dev.name, dev.scheduler, dev.schedulers)
        self.push_screen(self.compare, closed)

    # ---- tunables and persistence -------------------------------------------------------------
    def action_tunables(self) -> None:
        if self.refused_read_only():
            return
        dev = self.selected_device()
        if dev is None or not dev.has_scheduler:
            self.notify("Select a device with an IO scheduler first.", severity="warning")
            return
        try:
            settings = list_settings(dev.name, self.root)
        except IoschedError as e:
            self.notify(str(e), severity="error")
            return

        def edited(change: tuple[str, str] | None) -> None:
            if change is not None:
                self._write_worker(dev.name, lambda: apply_settings(dev.name, [change], self.root)[0])

        self.push_screen(TunablesScreen(dev.name, settings), edited)

    def action_persist(self) -> None:
        if self.refused_read_only():
            return
        dev = self.selected_device()
        if dev is None or not dev.scheduler:
            self.notify("Select a device with an IO scheduler first.", severity="warning")
            return
        choices = [("kernel-name", f"KERNEL==\"{dev.name}\" (this name only)")]
        if persist_covers(dev.name):
            choices.append(("rotational", f"every {'rotational' if dev.rotational else 'non-rotational'} disk"))
        if dev.model:
            choices.insert(0, ("model", f"every disk of model {dev.model}"))
        if dev.serial:
            choices.insert(0, ("serial", f"this disk wherever it appears (serial {dev.serial})"))
        scheduler = dev.scheduler
        try:
            settings = changed_here(dev.name, self.root)  # tuned with iosched: kept in the rule too
        except IoschedError as e:
            self.notify(str(e), severity="error")
            return

        def chosen(by: str | None) -> None:
            if by is None:
                return
            try:
                rule = build_rule(dev.name, scheduler, settings, by, self.root)
                path = Path(self.rules_file)
                old = path.read_text() if path.is_file() else ""
                new = merged(old, rule)
            except (IoschedError, OSError) as e:
                self.notify(str(e), severity="error")
                return
            if new == old:
                self.notify(f"{path} already has this rule.")
                return

            def confirmed(yes: bool | None) -> None:
                if not yes:
                    return
                try:
                    write_rules_file(path, new)
                except IoschedError as e:
                    self.notify(str(e), severity="error")
                    return
                self.notify(f"Written. Apply now with: {apply_hint(rule, dev.name)}", timeout=12)

            self.push_screen(ConfirmScreen(f"{path} will get:\n\n{rule.tag()}\n{rule.line()}\n\nWrite it?"),
                             confirmed)

        what = scheduler + "".join(f" {k}={v}" for k, v in settings)
        self.push_screen(PersistScreen(dev.name, what, choices, self.rules_file), chosen)

    # ---- controls -----------------------------------------------------------------------------
    def action_pause(self) -> None:
        self.paused = not self.paused
        if self._timer is not None:
            if self.paused:
                self._timer.pause()
            else:
                self._prev = self.sampler.take()  # a fresh baseline: no point averaging over the pause
                self._timer.resume()
        self._render_status()

    def _set_interval(self, step: int) -> None:
        i = INTERVALS.index(self.interval)
        self.interval = INTERVALS[max(0, min(len(INTERVALS) - 1, i + step))]
        if self._timer is not None:
            self._timer.stop()
            self._timer = self.set_interval(self.interval, self.tick, pause=self.paused)
        self._render_status()

    def action_faster(self) -> None:
        self._set_interval(-1)

    def action_slower(self) -> None:
        self._set_interval(+1)

    def action_sort(self) -> None:
        self.sort_key = SORT_KEYS[(SORT_KEYS.index(self.sort_key) + 1) % len(SORT_KEYS)]
        self._sync_table()
        self._render_status()

    def action_cycle_theme(self) -> None:
        self.theme_name = THEME_NAMES[(THEME_NAMES.index(self.theme_name) + 1) % len(THEME_NAMES)]
        self._apply_theme()
        self.notify(f"theme: {self.theme_name}", timeout=2)

    def action_help(self) -> None:
        if self.replay is not None:
            self.push_screen(HelpScreen([
                ("↑/↓", "select a device"), (", / .", "step 10 intervals back / forward"),
                ("< / >", "step 60 intervals back / forward"), ("g / G", "start / end of the recording"),
                ("o", "sort"), ("t", "theme"), ("q", "quit")]))
            return
        self.push_screen(HelpScreen(self.HELP_KEYS))

    async def action_quit(self) -> None:
        self.kill_job()
        if not self.changed_devices:
            self.exit(0)
            return
        names = ", ".join(sorted(self.changed_devices))

        def answered(yes: bool | None) -> None:
            if yes:
                self._restore_and_exit()
            else:
                self.exit(0, message=f"Left changed: {names}. `iosched restore` puts the originals back.")

        self.push_screen(ConfirmScreen(
            f"This session changed the scheduler or settings of {names}.\n"
            "Restore the original values before quitting?"),
            answered)

    @work(thread=True, group="restore", exit_on_error=False)
    def _restore_and_exit(self) -> None:
        """Restore in a worker: a switch on a busy device waits for its queue to drain."""
        try:
            outcomes = restore(self.root)
        except IoschedError as e:
            self.call_from_thread(self.exit, 1, message=f"Restore failed: {e}. Run `iosched restore`.")
            return
        failed = any(o.status == "failed" for o in outcomes)
        message = "\n".join(f"{o.device} {o.attr.removeprefix('queue/')}: {o.status} {o.original}" for o in outcomes)
        self.call_from_thread(self.exit, 1 if failed else 0, message=message)

    # ---- signals ------------------------------------------------------------------------------
    def install_signal_handlers(self) -> None:
        """SIGTERM quits cleanly; SIGHUP (dropped SSH) cleans up and exits without touching the dead terminal.

        Python dies on both without running `finally`, and Textual installs no handler. Schedulers the user
        switched stay as they are (the journal is on disk; `iosched restore` undoes); fio, a running
        experiment and the demo sandbox are cleaned up first (see _hangup).
        """
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, lambda: self.exit(143))
        loop.add_signal_handler(signal.SIGHUP, self._hangup)

    def wait_for_children(self) -> None:
        """After the UI is gone: a running experiment puts its device back before the process ends."""
        if self.compare is not None:
            self.compare.wait()

    def _hangup(self) -> None:
        """The terminal is gone: stop fio, let a running experiment put its device back, run the cleanups
        (the demo's sandbox), then leave at once without writing to the dead terminal."""
        self.kill_job()
        if self.compare is not None:
            self.compare.wait(10)
        for cleanup in self.hangup_cleanups:
            with contextlib.suppress(Exception):
                cleanup()
        os._exit(129)
