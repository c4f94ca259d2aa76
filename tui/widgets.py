"""Widgets of the main screen: the device table, braille line charts with switch markers, the CPU pane."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import DataTable

from iosched.core.devices import BlockDevice
from iosched.core.monitor import Marker
from iosched.core.rates import CpuRates, DiskRates
from iosched.core.textcharts import (
    BRAILLE_BASE,
    CPU_STACK_FIELDS,
    braille_grid,
    cpu_stack_column,
    marker_columns,
    nice_ceiling,
    spark_char,
)
from iosched.core.units import human_size, short_number

# Ordered by importance: at 80 columns the later ones scroll off to the right.
RATE_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("r_s", "r/s", 6), ("w_s", "w/s", 6), ("r_await", "r_await", 7), ("w_await", "w_await", 7),
    ("util", "%util", 5), ("rMB_s", "rMB/s", 6), ("wMB_s", "wMB/s", 6), ("aqu_sz", "aqu-sz", 6),
)


def rate_value(rates: DiskRates, key: str) -> float:
    if key == "rMB_s":
        return rates.rkB_s / 1024
    if key == "wMB_s":
        return rates.wkB_s / 1024
    return getattr(rates, key)


def format_rate(key: str, value: float) -> str:
    if key in ("r_s", "w_s"):
        return short_number(value) if value >= 10000 else f"{value:.0f}"
    if key == "util":
        return f"{value:.0f}"
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


class DeviceTable(DataTable):
    """One row per whole disk, updated in place every tick; idle devices dimmed."""

    DEFAULT_CSS = """
    DeviceTable { height: auto; max-height: 12; scrollbar-size-horizontal: 0; }
    """

    def on_mount(self) -> None:
        self._shown: dict[str, tuple] = {}  # what each row shows now, to skip unchanged updates
        self.cursor_type = "row"
        self.zebra_stripes = False
        self.add_column("Device", key="name", width=8)
        self.add_column("Scheduler", key="sched", width=11)
        for key, header, width in RATE_COLUMNS:
            self.add_column(header, key=key, width=width)
        self.add_column("Type", key="type", width=4)
        self.add_column("Size", key="size", width=7)
        self.add_column("Model", key="model", width=16)

    def sync_rows(self, devices: Sequence[BlockDevice]) -> None:
        """Add and remove rows so the table lists exactly ``devices``, in that order; keep the cursor."""
        selected = self.selected_name()
        wanted = [d.name for d in devices]
        current = [str(k.value) for k in self.rows]
        if current != wanted:
            self._shown.clear()
            self.clear()
            for d in devices:
                name, kind, sched = self._static_cells(d)
                self.add_row(name, sched, *(["-"] * len(RATE_COLUMNS)), kind, "", "", key=d.name)
                self.update_cell(d.name, "size", human_size(d.size_bytes))
                self.update_cell(d.name, "model", d.model or d.transport or "")
            if selected in wanted:
                self.move_cursor(row=wanted.index(selected))
        else:
            for d in devices:
                for key, cell in zip(("name", "type", "sched"), self._static_cells(d)):
                    self.update_cell(d.name, key, cell)

    @staticmethod
    def _static_cells(d: BlockDevice) -> tuple[Text, str, Text]:
        sched = Text(d.scheduler or "—") if d.has_scheduler else Text("no sched", style="italic")
        return Text(d.name), ("HDD" if d.rotational else "SSD"), sched

    def update_rates(self, devices: Sequence[BlockDevice], rates: dict[str, DiskRates]) -> None:
        dim = Style(dim=True)
        shown = self._shown
        for d in devices:
            r = rates.get(d.name)
            idle = r is None or (r.r_s == 0 and r.w_s == 0 and r.d_s == 0 and r.f_s == 0)
            cells = [(key, "-" if r is None else format_rate(key, rate_value(r, key))) for key, _, _ in RATE_COLUMNS]
            state = (idle, tuple(cells))
            if shown.get(d.name) == state:
                continue  # unchanged row (idle devices, most ticks): no cell updates, no repaint
            shown[d.name] = state
            for key, text in cells:
                self.update_cell(d.name, key, Text(text, style=dim if idle else "", justify="right"))
            self.update_cell(d.name, "name", Text(d.name, style=dim if idle else "bold"))

    def selected_name(self) -> str | None:
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except Exception:  # cursor outside a table that just shrank
            return None
        return None if key.value is None else str(key.value)


class Runs:
    """One screen row as runs of (text, style); neighbouring characters of one style share a run."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, Style]] = []

    def add(self, text: str, style: Style) -> None:
        if self.runs and self.runs[-1][1] is style:
            self.runs[-1] = (self.runs[-1][0] + text, style)
        else:
            self.runs.append((text, style))

    def add_cells(self, chars: list[str], styles: list[Style]) -> None:
        """Many one-character cells at once: joined per run of one style (charts are thousands of cells)."""
        start = 0
        for i in range(1, len(chars) + 1):
            if i == len(chars) or styles[i] is not styles[start]:
                self.add("".join(chars[start:i]), styles[start])
                start = i

    @property
    def plain(self) -> str:
        return "".join(t for t, _ in self.runs)


class RowsWidget(Widget):
    """A widget drawn through the line API from rows built once per data change or resize.

    Building a Rich Text of thousands of one-character spans and converting it costs tens of ms per
    frame; a few merged segments per row cost well under one.
    """

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._rows: list[Runs] | None = None
        self._strips: list[Strip] = []
        self._rows_size: tuple[int, int] = (0, 0)

    def build_rows(self, width: int, height: int) -> list[Runs]:
        raise NotImplementedError

    def invalidate(self) -> None:
        self._rows = None
        self.refresh()

    def on_resize(self) -> None:
        self.invalidate()

    def rows(self) -> list[Runs]:
        size = (self.size.width, self.size.height)
        if self._rows is None or size != self._rows_size:
            width = max(1, size[0])
            self._rows = self.build_rows(width, max(1, size[1]))
            self._rows_size = size
            base = self.rich_style
            self._strips = [Strip([Segment(text, base + style) for text, style in row.runs])
                            .adjust_cell_length(width, base) for row in self._rows]
        return self._rows

    def plain_text(self) -> str:
        return "\n".join(r.plain for r in self.rows())

    def render_line(self, y: int) -> Strip:
        self.rows()
        if y >= len(self._strips):
            return Strip.blank(self.size.width, self.rich_style)
        return self._strips[y]


class StatusBar(RowsWidget):
    """One line of text; cheaper than a Static, whose update() asks for a new layout."""

    DEFAULT_CSS = "StatusBar { height: 1; }"

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._text = ""

    def set_text(self, text: str) -> None:
        if text != self._text:
            self._text = text
            self.invalidate()

    def build_rows(self, width: int, height: int) -> list[Runs]:
        row = Runs()
        row.add(self._text, Style())
        return [row]


class LineChart(RowsWidget):
    """A braille line chart of up to two series, with labelled vertical markers."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "chart--s0", "chart--s1", "chart--axis", "chart--marker", "chart--title"}
    DEFAULT_CSS = """
    LineChart { height: 1fr; min-height: 3; }
    LineChart > .chart--s0 { color: $success; }
    LineChart > .chart--s1 { color: $warning; }
    LineChart > .chart--axis { color: $text-muted; }
    LineChart > .chart--marker { color: $error; text-style: bold; }
    LineChart > .chart--title { text-style: bold; }
    """
    GUTTER = 6

    def __init__(self, title: str, labels: Sequence[str], unit: str = "", **kw) -> None:
        super().__init__(**kw)
        self.title = title
        self.labels = list(labels)
        self.unit = unit
        self._times: list[float] = []
        self._series: list[list[float | None]] = []
        self._markers: list[Marker] = []
        self._key: tuple = ()  # what the current picture was drawn from

    def set_data(self, times: Sequence[float], series: Sequence[Sequence[float | None]],
                 markers: Sequence[Marker]) -> None:
        points = max(2, (self.size.width - self.GUTTER) * 2)
        all_times = list(times)
        times = all_times[-points:]
        series = [list(s)[-points:] for s in series]
        # A marker older than the window is gone; one before the first sample ever still shows (left edge).
        scrolled = len(all_times) > points
        marks = [m for m in markers if times and (m.time >= times[0] or not scrolled)]
        # An idle device's graph does not change as time passes: skip the rebuild and the repaint.
        key = (tuple(tuple(s) for s in series), tuple(marker_columns(times, [m.time for m in marks],
                                                                     points // 2).items()))
        self._times, self._series, self._markers = times, series, marks
        if key != self._key:
            self._key = key
            self.invalidate()

    def build_rows(self, width: int, height: int) -> list[Runs]:
        plot_w = max(1, width - self.GUTTER)
        plot_h = max(1, height - 1)
        styles = [self.get_component_rich_style(f"chart--s{i}") for i in range(2)]
        axis = self.get_component_rich_style("chart--axis")
        mark_style = self.get_component_rich_style("chart--marker")
        plain = Style()
        visible = [v for s in self._series for v in s[-plot_w * 2:] if v is not None]
        ymax = nice_ceiling(max(visible, default=0.0))

        title = Runs()
        title.add(self.title, self.get_component_rich_style("chart--title"))
        for i, label in enumerate(self.labels):
            series = self._series[i] if i < len(self._series) else []
            latest = next((v for v in reversed(series) if v is not None), None)
            title.add("  ━ ", styles[i % 2])
            title.add(f"{label} {'-' if latest is None else short_number(latest)}{self.unit}", plain)
        rows = [title]

        grid = braille_grid(self._series, plot_w, plot_h, ymax)
        marks = marker_columns(self._times, [m.time for m in self._markers], plot_w)
        labels: dict[int, str] = {}  # top-row overlay: each marker's label beside its line
        for col, index in marks.items():
            label = self._markers[index].label[:plot_w]
            start = col + 1 if col + 1 + len(label) <= plot_w else max(0, col - len(label))
            labels.update({start + i: ch for i, ch in enumerate(label)})
        for row in range(plot_h):
            runs = Runs()
            if row == 0:
                runs.add(f"{short_number(ymax):>{self.GUTTER - 1}}┤", axis)
            elif row == plot_h - 1:
                runs.add(f"{'0':>{self.GUTTER - 1}}┤", axis)
            else:
                runs.add(" " * (self.GUTTER - 1) + "│", axis)
            chars: list[str] = []
            cell_styles: list[Style] = []
            grid_row = grid[row]
            for col in range(plot_w):
                bits, index = grid_row[col]
                if row == 0 and col in labels:
                    chars.append(labels[col])
                    cell_styles.append(mark_style)
                elif bits:  # data stays visible through a marker
                    chars.append(chr(BRAILLE_BASE + bits))
                    cell_styles.append(styles[index % 2])
                elif col in marks:
                    chars.append("│")
                    cell_styles.append(mark_style)
                else:
                    chars.append(" ")
                    cell_styles.append(axis)
            runs.add_cells(chars, cell_styles)
            rows.append(runs)
        return rows


class CpuPane(RowsWidget):
    """Stacked usr/sys/iowait/irq/soft/steal for "all" over time, plus one spark per CPU."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *(f"cpu--{f}" for f in CPU_STACK_FIELDS), "cpu--title", "cpu--idle"}
    DEFAULT_CSS = """
    CpuPane { height: 6; }
    CpuPane > .cpu--usr { color: $success; }
    CpuPane > .cpu--sys { color: $error; }
    CpuPane > .cpu--iowait { color: $warning; }
    CpuPane > .cpu--irq { color: $accent; }
    CpuPane > .cpu--soft { color: $secondary; }
    CpuPane > .cpu--steal { color: $primary; }
    CpuPane > .cpu--idle { color: $text-muted; }
    CpuPane > .cpu--title { text-style: bold; }
    """

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._history: list[CpuRates | None] = []
        self._per_cpu: dict[str, CpuRates] = {}

    def set_data(self, history: Sequence[CpuRates | None], per_cpu: dict[str, CpuRates]) -> None:
        history = list(history)[-max(1, self.size.width):]
        if history == self._history and per_cpu == self._per_cpu:
            return
        self._history = history
        self._per_cpu = per_cpu
        self.invalidate()

    def build_rows(self, width: int, height: int) -> list[Runs]:
        stack_rows = max(1, height - 2)
        styles = [self.get_component_rich_style(f"cpu--{f}") for f in CPU_STACK_FIELDS]
        idle_style = self.get_component_rich_style("cpu--idle")
        plain = Style()
        title = Runs()
        title.add("CPU", self.get_component_rich_style("cpu--title"))
        latest = self._history[-1] if self._history else None
        for f, style in zip(CPU_STACK_FIELDS, styles):
            title.add(" ■", style)
            title.add(f"{f} {'-' if latest is None else f'{getattr(latest, f):.1f}'}", plain)
        rows = [title]
        columns = [None if r is None else cpu_stack_column(r._asdict(), stack_rows)
                   for r in self._history[-width:]]
        pad = width - len(columns)
        for row in reversed(range(stack_rows)):
            runs = Runs()
            runs.add(" " * pad, plain)
            cats = [-1 if col is None else col[row] for col in columns]
            runs.add_cells(["█" if c >= 0 else "·" for c in cats], [styles[c] if c >= 0 else idle_style for c in cats])
            rows.append(runs)
        per_cpu = Runs()
        for key in sorted((k for k in self._per_cpu if k != "all"), key=int):
            busy = 100.0 - self._per_cpu[key].idle
            per_cpu.add(f"{key}:", plain)
            per_cpu.add(spark_char(busy), styles[0])
            per_cpu.add(f"{busy:3.0f}% ", plain)
        rows.append(per_cpu)
        return rows
