"""The device table: one row per whole disk, its cells updated in place every tick."""

from __future__ import annotations

from collections.abc import Sequence

from rich.style import Style
from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from iosched.core.base.terminal_text import printable
from iosched.core.base.units import human_size, short_number
from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.live.rates import DiskRates

# Ordered by importance: at 80 columns the later ones scroll off to the right, and every one up to wMB/s stays in
# view, beside the scrollbar of a table longer than its rows (each column is its width and a cell of padding each side:
# 78 with an 8-cell name; a MB/s figure takes at most 5, as its header: "99.99", "12345").
RATE_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("r_s", "r/s", 6), ("w_s", "w/s", 6), ("r_await", "r_await", 7), ("w_await", "w_await", 7),
    ("util", "%util", 5), ("rMB_s", "rMB/s", 5), ("wMB_s", "wMB/s", 5), ("aqu_sz", "aqu-sz", 6),
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

    def sync_rows(self, devices: Sequence[DeviceDoc]) -> None:
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
                self.update_cell(d.name, "model", Text(printable(d.model or d.transport or "")))
            if selected in wanted:
                self.move_cursor(row=wanted.index(selected))
        else:
            # The name cell keeps its busy/idle style: the row key is the name, so it cannot change here.
            self.set_row_cells({d.name: dict(zip(("type", "sched"), self._static_cells(d)[1:])) for d in devices})

    @staticmethod
    def _static_cells(d: DeviceDoc) -> tuple[Text, str, Text]:
        sched = Text(printable(d.scheduler or "—")) if d.has_scheduler else Text("no sched", style="italic")
        return Text(printable(d.name)), ("HDD" if d.rotational else "SSD"), sched

    def update_rates(self, devices: Sequence[DeviceDoc], rates: dict[str, DiskRates]) -> None:
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
            row: dict[str, object] = {key: Text(text, style=dim if idle else "", justify="right")
                                      for key, text in cells}
            row["name"] = Text(printable(d.name), style=dim if idle else "bold")
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
        for cell_key in [k for k in cached if (k[0].value, k[1].value) in changed]:
            cell_cache.discard(cell_key)
        for cache in row_caches:
            cache.clear()
        for name in {name for name, _ in changed}:
            index = locations.get(RowKey(name))
            if index is not None:  # always: the row was just read from the table's data
                self.refresh_row(index)

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
