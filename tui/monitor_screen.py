"""What the live view and the replay share: a device table, graphs of the selected device and the CPU pane,
all drawn from one core Monitor. The subclasses decide when the Monitor moves (a timer, a scrub key)."""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid
from textual.screen import Screen
from textual.widgets import DataTable

from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.kernel.devices import device_order
from iosched.core.live.monitor import Marker, Monitor
from iosched.tui.footer import KeysFooter
from iosched.tui.widgets.cpu_pane import CpuPane
from iosched.tui.widgets.device_table import DeviceTable
from iosched.tui.widgets.line_chart import LineChart
from iosched.tui.widgets.status_bar import StatusBar

SORT_KEYS = ("name", "r_s", "w_s", "util", "r_await", "w_await")


class MonitorScreen(Screen[None]):
    # The help screen shows these before the bindings' own lines (keys no binding of ours declares).
    HELP_KEYS: ClassVar[tuple[tuple[str, str], ...]] = (("↑/↓", "select a device (its graphs show below the table)"),)
    HELP_TEXT: ClassVar[str] = (
        "[b]Figures[/b] (as iostat -x): r/s w/s requests completed per second; MB/s throughput; "
        "r_await w_await: device (block-layer) latency in ms, queueing included — not what the application "
        "sees (fio's clat is higher); aqu-sz: average requests in flight; %util: time the device was busy — a "
        "poor saturation signal on multi-queue SSDs. Markers (│ with a label) show the moment a scheduler "
        "was switched."
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "sort", "Sort", show=False, tooltip="sort the table: name, r/s, w/s, %util, r_await, w_await"),
    ]

    def __init__(self, monitor: Monitor) -> None:
        super().__init__()
        self.monitor = monitor
        self.sort_key = "name"
        self._selected: str | None = None

    @property
    def devices(self) -> list[DeviceDoc]:
        return self.monitor.devices

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        yield DeviceTable(id="devices")
        with Grid(id="graphs"):
            yield LineChart("IOPS", ["r/s", "w/s"], id="chart-iops")
            yield LineChart("Device latency ms", ["r_await", "w_await"], id="chart-latency")
            yield LineChart("MB/s", ["read", "write"], id="chart-throughput")
            yield LineChart("Queue", ["aqu-sz", "%util"], id="chart-queue")
        yield from self.compose_parts()
        yield CpuPane(id="cpu")
        yield KeysFooter()

    def compose_parts(self) -> ComposeResult:
        """What a subclass composes between the graphs and the CPU pane (the live screen: its parts)."""
        yield from ()

    def on_mount(self) -> None:
        self._apply_size_classes(*self.app.size)

    def on_resize(self, event: events.Resize) -> None:
        self._apply_size_classes(event.size.width, event.size.height)

    def _apply_size_classes(self, w: int, h: int) -> None:
        self.set_class(w < 100 or h < 30, "-compact")
        self.set_class(w < 60 or h < 16, "-tiny")

    def select(self, name: str | None) -> None:
        names = [d.name for d in self.devices]
        if name in names:
            self.query_one(DeviceTable).move_cursor(row=names.index(name))
            self._selected = name

    # ---- drawing ------------------------------------------------------------------------------
    def status_text(self) -> str:
        raise NotImplementedError

    def render_status(self) -> None:
        self.query_one(StatusBar).set_text(self.status_text())

    def redraw(self, graphs: bool = True) -> None:
        """The table and status line; the graphs and CPU pane too unless ``graphs`` is False."""
        with self.app.batch_update():
            if self.sort_key != "name":
                self.sync_table()
            rates = self.monitor.last_rates
            if rates is not None:
                self.query_one(DeviceTable).update_rates(self.devices, rates.disks)
            if graphs:
                self.draw_graphs()
            self.render_status()

    def graph_points(self) -> int:
        """Only what the widest graph can show: copying the whole window each tick costs more."""
        return max(2, self.size.width * 2)

    def graph_window(self) -> tuple[DeviceDoc | None, list[float], list[Marker]]:
        """The selected device, the sample times the widest graph can show and that device's markers."""
        dev = self.selected_device()
        times = self.monitor.history.recent_times(self.graph_points())
        return dev, times, self.monitor.markers_of(dev.name if dev else None)

    def draw_graphs(self) -> None:
        dev, times, marks = self.graph_window()
        history = self.monitor.history
        last = self.graph_points()
        name = dev.name if dev else ""

        def series(field: str, scale: float = 1.0) -> list[float | None]:
            values = history.disk_series(name, field, last)
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
        self.draw_extra_charts(dev, times, marks)
        cpu = self.query_one(CpuPane)
        if cpu.display:
            last_rates = self.monitor.last_rates
            cpu.set_data(history.cpu_rates("all", max(1, cpu.size.width)), last_rates.cpus if last_rates else {})

    def draw_extra_charts(self, dev: DeviceDoc | None, times: list[float], marks: list[Marker]) -> None:
        """What a subclass draws beside the device's charts, on the same times and markers (the live screen: a
        role job's latency)."""

    # ---- table --------------------------------------------------------------------------------
    def _sorted_devices(self) -> list[DeviceDoc]:
        rates = self.monitor.last_rates
        if self.sort_key == "name" or rates is None:
            return sorted(self.devices, key=lambda d: device_order(d.name))

        def key(d: DeviceDoc) -> tuple[float, tuple[tuple[int, int | str], ...]]:
            r = rates.disks.get(d.name)
            return (-(getattr(r, self.sort_key) if r else 0.0), device_order(d.name))

        return sorted(self.devices, key=key)

    def sync_table(self) -> None:
        self.monitor.devices = self._sorted_devices()
        table = self.query_one(DeviceTable)
        table.sync_rows(self.devices)
        if self.monitor.last_rates is not None:
            table.update_rates(self.devices, self.monitor.last_rates.disks)
        self._selected = table.selected_name()

    def selected_device(self) -> DeviceDoc | None:
        return self.monitor.device(self._selected)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._selected = None if event.row_key.value is None else str(event.row_key.value)
        self.draw_graphs()
        self.render_status()

    def action_sort(self) -> None:
        self.sort_key = SORT_KEYS[(SORT_KEYS.index(self.sort_key) + 1) % len(SORT_KEYS)]
        self.sync_table()
        self.render_status()
