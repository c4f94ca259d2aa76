"""The latency pane: block-layer tracing of the selected device as heatmaps over time (device time and time
in the scheduler, log2 buckets, switch markers), p50/p99, and the device's IO per process.

Without tracing (no bpftrace, not root) it shows the system-wide bytes per process from /proc/PID/io and one
line on how to enable tracing. The live screen's tracing (tui/live_tracing.py) feeds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from rich.style import Style

from iosched.core.base.terminal_text import printable
from iosched.core.live.monitor import Marker
from iosched.core.trace.histograms import Log2Hist, bucket_bounds
from iosched.tui.widgets.rows import RowsWidget, Runs

if TYPE_CHECKING:
    # The tracer, its parser and psutil load when the pane first opens: about 3 MB and 40 ms of start-up
    # that most sessions never use.
    from iosched.core.trace.parse import TraceSample
    from iosched.core.trace.probe import ProcIOView, TraceView

SHADES = " ·░▒▓█"
GUTTER = 6


def _us_label(us: int) -> str:
    if us >= 1_000_000:
        return f"{us // 1_000_000}s"
    if us >= 1000:
        return f"{us // 1000}ms"
    return f"{us}µs"


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if v >= 1000:
        return f"{v / 1000:.1f}ms"
    return f"{v:.0f}µs" if v >= 10 else f"{v:.1f}µs"


def heatmap(hists: Sequence[Log2Hist | None], height: int) -> tuple[list[list[int]], list[int]]:
    """Columns of shade levels (0..5, bottom row first) and the bucket each row starts at.

    Rows cover the buckets seen in the window, several buckets a row when they do not fit; each column is
    scaled to its own busiest row, so the shape of the distribution shows whatever the IO rate.
    """
    seen = [i for h in hists if h is not None for i, c in enumerate(h.counts) if c]
    if not seen:
        return [[0] * height for _ in hists], []
    lo, hi = min(seen), max(seen)
    span = hi - lo + 1
    per_row = -(-span // max(height, 1))
    starts = [lo + r * per_row for r in range(-(-span // per_row))]
    cols = []
    for h in hists:
        if h is None:
            cols.append([0] * len(starts))
            continue
        counts = [sum(h.counts[s:s + per_row]) for s in starts]
        top = max(counts) or 1
        cols.append([0 if c == 0 else max(1, round(c / top * (len(SHADES) - 1))) for c in counts])
    return cols, starts


def sample_marker_columns(times: Sequence[float], marks: Sequence[float], offset: int) -> set[int]:
    """Columns (one per sample, starting at ``offset``) of the first sample ending at or after each marker."""
    out = set()
    for mark in marks:
        for i, t in enumerate(times):
            if t >= mark:
                out.add(offset + i)
                break
    return out


class LatencyPane(RowsWidget):
    COMPONENT_CLASSES: ClassVar[set[str]] = {"latency--heat", "latency--sched", "latency--axis",
                                             "latency--marker", "latency--title"}
    DEFAULT_CSS = """
    LatencyPane { height: 14; }
    LatencyPane > .latency--heat { color: $success; }
    LatencyPane > .latency--sched { color: $warning; }
    LatencyPane > .latency--axis { color: $text-muted; }
    LatencyPane > .latency--marker { color: $error; text-style: bold; }
    LatencyPane > .latency--title { text-style: bold; }
    """

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.device = ""
        self.view: TraceView | None = None
        self.procio: ProcIOView | None = None
        self.markers: list[Marker] = []
        self.note = ""

    def set_data(self, device: str, view: TraceView | None, procio: ProcIOView | None,
                 markers: Sequence[Marker], note: str = "") -> None:
        self.device, self.view, self.procio, self.markers, self.note = device, view, procio, list(markers), note
        self.invalidate()

    # ---- drawing --------------------------------------------------------------------------------
    def build_rows(self, width: int, height: int) -> list[Runs]:
        title_style = self.get_component_rich_style("latency--title")
        plain = Style()
        if self.view is None or not self.view.running:
            return self._fallback_rows(width, height, title_style, plain)
        samples = list(self.view.samples)
        latest = samples[-1].devices.get(self.device) if samples else None
        title = Runs()
        wide = width >= 100
        if wide:
            title.add(f"Latency {self.device or '-'}", title_style)
            dropped = self.view.dropped_requests
            cost = f", {self.view.cost_text()}" if samples else ""
            title.add(f"  tracing on{cost}{f', {dropped} untimed' if dropped else ''}  ", plain)
        else:
            title.add(self.device or "-", title_style)
            title.add(" ", plain)
        if latest is not None:
            dev_word = "device" if wide else "dev"
            title.add(f"{dev_word} p50 {_fmt(latest.device.percentile(0.5))} p99 "
                      f"{_fmt(latest.device.percentile(0.99))}  sched p50 {_fmt(latest.sched.percentile(0.5))} "
                      f"p99 {_fmt(latest.sched.percentile(0.99))}", plain)
        else:
            title.add("no IO completed in the last interval", plain)
        rows = [title]
        procs = [p for p in (samples[-1].processes if samples else ()) if p.device == self.device][:3]
        map_h = max(2, height - 1 - 1 - (len(procs) + 1 if procs else 0))
        half = width if width < 80 else (width - 2) // 2
        left = self._heat_block("device time", samples, "device", half, map_h, "latency--heat")
        right = (self._heat_block("time in the scheduler", samples, "sched", width - half - 2, map_h,
                                  "latency--sched") if width >= 80 else [])
        for i, runs in enumerate(left):
            if right:
                runs.add("  ", plain)
                for text, style in right[i].runs:
                    runs.add(text, style)
            rows.append(runs)
        if procs:
            head = Runs()
            head.add(f"{'PID':>7} {'COMMAND':<16} {'IO/s':>8} {'MB/s':>8} {'p99':>8}", self.get_component_rich_style(
                "latency--axis"))
            rows.append(head)
            dt = samples[-1].interval or 1.0
            for p in procs:
                r = Runs()
                r.add(f"{p.pid:>7} {printable(p.comm)[:16]:<16} {p.ios / dt:8.0f} {p.bytes / dt / 1e6:8.2f} "
                      f"{_fmt(p.total.percentile(0.99)):>8}", plain)
                rows.append(r)
        return rows[:height]

    def _heat_block(self, label: str, samples: list[TraceSample], attr: str, width: int, height: int,
                    style_name: str) -> list[Runs]:
        axis = self.get_component_rich_style("latency--axis")
        heat = self.get_component_rich_style(style_name)
        mark = self.get_component_rich_style("latency--marker")
        plot_w = max(1, width - GUTTER)
        shown = samples[-plot_w:]
        hists = [getattr(s.devices[self.device], attr) if self.device in s.devices else None for s in shown]
        cols, starts = heatmap(hists, max(1, height - 1))
        # One column per sample, newest at the right edge like the line charts.
        offset = plot_w - len(shown)
        cols = [[0] * len(starts)] * offset + cols
        marks = sample_marker_columns([s.mono for s in shown], [m.time for m in self.markers], offset)
        out = []
        head = Runs()
        head.add(f"{label[:width]:<{width}}", axis)
        out.append(head)
        nrows = len(starts)
        for r in range(height - 1):
            row_index = nrows - 1 - r  # the highest latencies on top
            runs = Runs()
            if 0 <= row_index < nrows:
                runs.add(f"{_us_label(bucket_bounds(starts[row_index])[0]):>{GUTTER - 1}}┤", axis)
            else:
                runs.add(" " * (GUTTER - 1) + "│", axis)
            chars, styles = [], []
            for c in range(plot_w):
                level = cols[c][row_index] if c < len(cols) and 0 <= row_index < nrows else 0
                if level:
                    chars.append(SHADES[level])
                    styles.append(heat)
                elif c in marks:
                    chars.append("│")
                    styles.append(mark)
                else:
                    chars.append(" ")
                    styles.append(axis)
            runs.add_cells(chars, styles)
            out.append(runs)
        return out

    def _fallback_rows(self, width: int, height: int, title_style: Style, plain: Style) -> list[Runs]:
        title = Runs()
        if self.procio is None:  # bpftrace is starting
            title.add(f"Latency {self.device}", title_style)
            title.add(f"  {self.note}", plain)
            return [title]
        title.add("IO per process (system-wide, /proc/PID/io)", title_style)
        rows = [title]
        if self.note:
            note = Runs()
            note.add(self.note[:width], self.get_component_rich_style("latency--marker"))
            rows.append(note)
        head = Runs()
        head.add(f"{'PID':>7} {'COMMAND':<16} {'read MB/s':>10} {'write MB/s':>10}",
                 self.get_component_rich_style("latency--axis"))
        rows.append(head)
        for r in (self.procio.rates if self.procio else ())[: max(0, height - len(rows))]:
            line = Runs()
            comm = printable(r.comm)[:16]
            line.add(f"{r.pid:>7} {comm:<16} {r.read_bytes_s / 1e6:10.2f} {r.write_bytes_s / 1e6:10.2f}", plain)
            rows.append(line)
        return rows
