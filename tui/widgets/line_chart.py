"""A braille line chart of up to two series with labelled vertical markers (the device graphs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.style import Style

from iosched.core.base.textcharts import (
    BRAILLE_BASE,
    braille_cells,
    marker_columns,
    marker_labels,
    nice_ceiling,
    time_axis,
)
from iosched.core.base.units import short_number
from iosched.core.live.monitor import Marker
from iosched.tui.widgets.rows import RowsWidget, Runs

# A row of cells becomes text through bytes and str.translate, in C: dot bits -> braille (empty: a space),
# series index + 1 -> style key (series colours alternate; 2 = empty).
_BRAILLE = str.maketrans({0: " "} | {bits: chr(BRAILLE_BASE + bits) for bits in range(1, 256)})
_SERIES_KEY = str.maketrans({0: "2"} | {i: "01"[(i - 1) % 2] for i in range(1, 17)})
_PLUS_ONE = (1).__add__


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
    AXIS_FROM_HEIGHT = 6  # a chart this tall or taller gives its bottom row to the time axis

    def __init__(self, title: str, labels: Sequence[str], unit: str = "", **kw) -> None:
        super().__init__(**kw)
        self.title = title
        self.labels = list(labels)
        self.unit = unit
        self._times: list[float] = []
        self._series: list[list[float | None]] = []
        self._markers: list[Marker] = []
        self._key: tuple = ()  # what the current picture was drawn from

    def retitle(self, title: str, labels: Sequence[str]) -> None:
        """A new title and series labels (a chart that follows one job after another)."""
        if (title, list(labels)) != (self.title, self.labels):
            self.title, self.labels, self._key = title, list(labels), ()
            self.invalidate()

    def set_data(self, times: Sequence[float], series: Sequence[Sequence[float | None]],
                 markers: Sequence[Marker]) -> None:
        points = max(2, (self.size.width - self.GUTTER) * 2)
        all_times = list(times)
        times = all_times[-points:]
        shown = [list(s)[-points:] for s in series]
        # A marker older than the window is gone; one before the first sample ever still shows (left edge).
        scrolled = len(all_times) > points
        marks = [m for m in markers if times and (m.time >= times[0] or not scrolled)]
        # An idle device's graph does not change as time passes: skip the rebuild and the repaint.
        key = (tuple(tuple(s) for s in shown), tuple(marker_columns(times, [m.time for m in marks],
                                                                     points // 2).items()))
        self._times, self._series, self._markers = times, shown, marks
        if key != self._key:
            self._key = key
            self.invalidate()

    def build_rows(self, width: int, height: int) -> list[Runs]:
        plot_w = max(1, width - self.GUTTER)
        with_axis = height >= self.AXIS_FROM_HEIGHT
        plot_h = max(1, height - 1 - with_axis)
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
        if with_axis:  # how far back the picture goes: "-2m┴ … -1m┴ … now"
            axis_row = Runs()
            axis_row.add(" " * (self.GUTTER - 1) + "└" + time_axis(self._times, plot_w), axis)
            rows.append(axis_row)
        return rows
