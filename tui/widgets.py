"""Widgets of the main screen: the device table, braille line charts with switch markers, the CPU pane."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from iosched.core.base.textcharts import (
    BRAILLE_BASE,
    CPU_STACK_FIELDS,
    braille_cells,
    cpu_stack_column,
    marker_columns,
    marker_labels,
    nice_ceiling,
    spark_char,
)
from iosched.core.base.units import human_size, short_number
from iosched.core.kernel.devices import BlockDevice
from iosched.core.live.monitor import Marker
from iosched.core.live.rates import CpuRates, DiskRates

# A row of cells becomes text through bytes and str.translate, in C: dot bits -> braille (empty: a space),
# series index + 1 -> style key (series colours alternate; 2 = empty).
_BRAILLE = str.maketrans({0: " "} | {bits: chr(BRAILLE_BASE + bits) for bits in range(1, 256)})
_SERIES_KEY = str.maketrans({0: "2"} | {i: "01"[(i - 1) % 2] for i in range(1, 17)})
_PLUS_ONE = (1).__add__
_CPU_KEY = "0123456"  # a CPU cell's style key by category; idle (-1) is the last
_CPU_CELL = str.maketrans({"0": "█", "1": "█", "2": "█", "3": "█", "4": "█", "5": "█", "6": "·"})
_ONE_CELL_EACH = re.compile("[\u0020-\u007e\u00a0-\u00ff\u2500-\u25fc\u2800-\u28ff]*").fullmatch  # U+25FD-E: wide
_SAME_KEY_RUN = re.compile(r"(.)\1*")


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
        self._rates_shown: dict[str, DiskRates | None] = {}  # the rates each row was formatted from
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
            self._rates_shown.clear()
            self.clear()
            for d in devices:
                name, kind, sched = self._static_cells(d)
                self.add_row(name, sched, *(["-"] * len(RATE_COLUMNS)), kind, "", "", key=d.name)
                self.update_cell(d.name, "size", human_size(d.size_bytes))
                self.update_cell(d.name, "model", d.model or d.transport or "")
            if selected in wanted:
                self.move_cursor(row=wanted.index(selected))
        else:
            # The name cell keeps its busy/idle style: the row key is the name, so it cannot change here.
            self.set_row_cells({d.name: dict(zip(("type", "sched"), self._static_cells(d)[1:])) for d in devices})

    @staticmethod
    def _static_cells(d: BlockDevice) -> tuple[Text, str, Text]:
        sched = Text(d.scheduler or "—") if d.has_scheduler else Text("no sched", style="italic")
        return Text(d.name), ("HDD" if d.rotational else "SSD"), sched

    def update_rates(self, devices: Sequence[BlockDevice], rates: dict[str, DiskRates]) -> None:
        dim = Style(dim=True)
        shown = self._shown
        changed: dict[str, dict[str, object]] = {}
        rates_shown = self._rates_shown
        for d in devices:
            r = rates.get(d.name)
            if d.name in rates_shown and rates_shown[d.name] == r and d.name in shown:
                continue  # the same figures as last tick (idle devices): not even formatted again
            rates_shown[d.name] = r
            idle = r is None or (r.r_s == 0 and r.w_s == 0 and r.d_s == 0 and r.f_s == 0)
            cells = [(key, "-" if r is None else format_rate(key, rate_value(r, key))) for key, _, _ in RATE_COLUMNS]
            state = (idle, tuple(cells))
            if shown.get(d.name) == state:
                continue  # unchanged row (idle devices, most ticks): no cell updates, no repaint
            shown[d.name] = state
            row = {key: Text(text, style=dim if idle else "", justify="right") for key, text in cells}
            row["name"] = Text(d.name, style=dim if idle else "bold")
            changed[d.name] = row
        self.set_row_cells(changed)

    def set_row_cells(self, rows: dict[str, dict[str, object]]) -> None:
        """New values for some cells of some rows; only those rows are rendered again and repainted.

        DataTable.update_cell drops the rendered form of every cell in the table, so one busy device made
        the table render all its visible rows each tick (most of an idle TUI's cost at 40 devices).
        """
        if not rows:
            return
        try:
            data, cell_cache, locations = self._data, self._cell_render_cache, self._row_locations
            row_caches = (self._row_render_cache, self._row_renderable_cache, self._line_cache)
        except AttributeError:  # a Textual without these internals: the public way, which renders it all
            for name, cells in rows.items():
                for key, value in cells.items():
                    self.update_cell(name, key, value)
            return
        changed: set[tuple[str, str]] = set()
        for name, cells in rows.items():
            row = data[RowKey(name)]
            for key, value in cells.items():
                if not _same_cell(row.get(ColumnKey(key)), value):
                    row[ColumnKey(key)] = value
                    changed.add((name, key))
        if not changed:
            return
        # Rendered cells are cached by (row key, column key, ...): drop the changed cells' only (a busy
        # device changes half of its row). The line caches are cheap to rebuild from cached cells, and only
        # the repainted rows are asked for again.
        cached = cell_cache.keys()  # an LRUCache: not iterable itself
        for key in [k for k in cached if (k[0].value, k[1].value) in changed]:
            cell_cache.discard(key)
        for cache in row_caches:
            cache.clear()
        for name in {name for name, _ in changed}:
            self.refresh_row(locations.get(RowKey(name)))

    def selected_name(self) -> str | None:
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except Exception:  # cursor outside a table that just shrank
            return None
        return None if key.value is None else str(key.value)


def _same_cell(a: object, b: object) -> bool:
    """Whether two cell values look the same (rich's Text equality ignores the style)."""
    if isinstance(a, Text) and isinstance(b, Text):
        return a.plain == b.plain and a.style == b.style and a.justify == b.justify and a.spans == b.spans
    return a == b


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

    def add_keyed(self, text: str, keys: str, styles: Sequence[Style]) -> None:
        """One character per cell, cell i in ``styles[int(keys[i])]``: one run per stretch of one key, found
        by a regular expression (no per-cell work in Python, for panes redrawn every tick)."""
        for m in _SAME_KEY_RUN.finditer(keys):
            start, end = m.span()
            self.add(text[start:end], styles[int(keys[start])])

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
        self._part_styles: dict[str, Style] = {}
        self._on_base: dict[Style | None, Style] = {}  # a run's style over the widget's own: Style addition is slow
        self._built: list[Runs] = []  # the rows the current strips were made from, at this width
        self._built_width = 0
        self._base_style: Style | None = None

    def component_style(self, name: str) -> Style:
        """A component class's style, looked up once per theme rather than once per build."""
        style = self._part_styles.get(name)
        if style is None:
            style = self._part_styles[name] = self.get_component_rich_style(name)
        return style

    def build_rows(self, width: int, height: int) -> list[Runs]:
        raise NotImplementedError

    def invalidate(self) -> None:
        """The data changed: rebuild now and repaint only the lines whose picture changed.

        Repainting a line costs Textual far more than building it (styles, then the compositor's cuts):
        an idle graph filling up changes one line per tick, not all of them.
        """
        old = self._strips
        self._rows = None
        if not self.is_mounted or not self.size or not old:
            self.refresh()
            return
        self.rows()
        new = self._strips
        if len(new) != len(old):
            self.refresh()
            return
        width = self.size.width
        for y, (before, after) in enumerate(zip(old, new)):
            if before is not after:
                self.refresh(Region(0, y, width, 1))

    def on_resize(self) -> None:
        self._rows = None
        self._base_style = None  # size classes may have changed the colours around it
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._rows = None  # a new theme: the same rows in new colours
        self._part_styles = {}
        self._on_base = {}
        self._built = []
        self._base_style = None

    def rows(self) -> list[Runs]:
        size = (self.size.width, self.size.height)
        if self._rows is None or size != self._rows_size:
            width = max(1, size[0])
            rows = self.build_rows(width, max(1, size[1]))
            self._rows_size = size
            base = self._base_style
            if base is None:
                base = self._base_style = self.rich_style  # once per theme or class change, not per build
            on_base = self._on_base
            if len(on_base) > 64 or on_base.get(None) != base:  # None holds the base they were made on
                on_base.clear()
                on_base[None] = base
                self._built = []
            # A row equal to the one built at its place last time keeps that Strip: no new one to make, and
            # Textual's caches on it stay. Equal runs are mostly the same objects, so comparing is cheap.
            old_rows = self._built if self._built_width == width else []
            old_strips = self._strips
            strips = []
            for y, row in enumerate(rows):
                if y < len(old_rows) and old_rows[y].runs == row.runs:
                    strips.append(old_strips[y])
                    continue
                segments = []
                cells = 0
                for text, style in row.runs:
                    combined = on_base.get(style)
                    if combined is None:
                        combined = on_base[style] = base + style
                    segments.append(Segment(text, combined))
                    # rich measures braille one character at a time; our alphabets are one cell each.
                    cells += len(text) if _ONE_CELL_EACH(text) else cell_len(text)
                strips.append(Strip(segments, cells).adjust_cell_length(width, base))
            self._rows, self._strips, self._built, self._built_width = rows, strips, rows, width
        return self._rows

    def plain_text(self) -> str:
        return "\n".join(r.plain for r in self.rows())

    def render_lines(self, crop: Region) -> list[Strip]:
        self.rows()  # once per frame: the size check costs more than a line
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        if self._rows is None:
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
        # Cell styles by key: 0/1 a series, 2 the empty plot (axis colour), 3 a marker.
        styles = [self.component_style("chart--s0"), self.component_style("chart--s1"),
                  self.component_style("chart--axis"), self.component_style("chart--marker")]
        axis = styles[2]
        plain = Style()
        visible = [v for s in self._series for v in s[-plot_w * 2:] if v is not None]
        ymax = nice_ceiling(max(visible, default=0.0))

        title = Runs()
        title.add(self.title, self.component_style("chart--title"))
        for i, label in enumerate(self.labels):
            series = self._series[i] if i < len(self._series) else []
            latest = next((v for v in reversed(series) if v is not None), None)
            title.add("  ━ ", styles[i % 2])
            title.add(f"{label} {'-' if latest is None else short_number(latest)}{self.unit}", plain)
        rows = [title]

        bits, owner = braille_cells(self._series, plot_w, plot_h, ymax)
        marks = marker_columns(self._times, [m.time for m in self._markers], plot_w)
        # Top-row overlay: each marker's label beside its line, close ones kept apart.
        labels = marker_labels({col: self._markers[index].label for col, index in marks.items()}, plot_w)
        gutter_mid = " " * (self.GUTTER - 1) + "│"
        for row in range(plot_h):
            runs = Runs()
            if row == 0:
                runs.add(f"{short_number(ymax):>{self.GUTTER - 1}}┤", axis)
            elif row == plot_h - 1:
                runs.add(f"{'0':>{self.GUTTER - 1}}┤", axis)
            else:
                runs.add(gutter_mid, axis)
            row_bits = bits[row * plot_w:(row + 1) * plot_w]
            text = bytes(row_bits).decode("latin-1").translate(_BRAILLE)
            row_owner = bytes(map(_PLUS_ONE, owner[row * plot_w:(row + 1) * plot_w]))
            keys = row_owner.decode("latin-1").translate(_SERIES_KEY)
            if marks or (row == 0 and labels):
                chars, key_list = list(text), list(keys)
                for col in marks:  # data stays visible through a marker
                    if not row_bits[col]:
                        chars[col], key_list[col] = "│", "3"
                if row == 0:
                    for col, ch in labels.items():
                        chars[col], key_list[col] = ch, "3"
                text, keys = "".join(chars), "".join(key_list)
            runs.add_keyed(text, keys, styles)
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
        self._columns: dict[int, tuple[CpuRates, str]] = {}  # id(sample) -> (sample, column keys)

    def set_data(self, history: Sequence[CpuRates | None], per_cpu: dict[str, CpuRates]) -> None:
        history = list(history)[-max(1, self.size.width):]
        if history == self._history and per_cpu == self._per_cpu:
            return
        self._history = history
        self._per_cpu = per_cpu
        self.invalidate()

    def build_rows(self, width: int, height: int) -> list[Runs]:
        stack_rows = max(1, height - 2)
        # By category: the stacked fields in order, then idle last (category -1).
        styles = [self.component_style(f"cpu--{f}") for f in CPU_STACK_FIELDS] + [self.component_style("cpu--idle")]
        plain = Style()
        title = Runs()
        title.add("CPU", self.component_style("cpu--title"))
        latest = self._history[-1] if self._history else None
        for f, style in zip(CPU_STACK_FIELDS, styles):
            title.add(" ■", style)
            title.add(f"{f} {'-' if latest is None else f'{getattr(latest, f):.1f}'}", plain)
        rows = [title]
        # A column depends only on its sample: worked out once, when the sample arrives, as a string of style
        # keys (bottom row first), then only picked apart row by row as it scrolls. The history holds the
        # samples, so an id stays theirs while they are on screen.
        known, self._columns = self._columns, {}
        columns: list[str] = []
        idle = _CPU_KEY[-1] * stack_rows
        for r in self._history[-width:]:
            if r is None:
                columns.append(idle)
                continue
            hit = known.get(id(r))
            if hit is not None and hit[0] is r and len(hit[1]) == stack_rows:
                col = hit[1]
            else:
                col = "".join([_CPU_KEY[c] for c in cpu_stack_column(r._asdict(), stack_rows)])
            self._columns[id(r)] = (r, col)
            columns.append(col)
        pad = width - len(columns)
        for row in reversed(range(stack_rows)):
            runs = Runs()
            runs.add(" " * pad, plain)
            keys = "".join([col[row] for col in columns])
            runs.add_keyed(keys.translate(_CPU_CELL), keys, styles)
            rows.append(runs)
        per_cpu = Runs()
        for key in sorted((k for k in self._per_cpu if k != "all"), key=int):
            busy = 100.0 - self._per_cpu[key].idle
            per_cpu.add(f"{key}:", plain)
            per_cpu.add(spark_char(busy), styles[0])
            per_cpu.add(f"{busy:3.0f}% ", plain)
        rows.append(per_cpu)
        return rows
