"""Result charts with plotext, drawn once per result: grouped bars, request-size sweeps, latency, CPU.

Each chart is two steps: a pure function picks the numbers out of the judged result (what tests check
against the table), and a ``draw_*`` function puts them on a plot it is given: a textual-plotext widget's own
plot in the TUI, or, for the command line's text (``render_*``), plotext's figure through plotext's public
functions, one chart at a time (cleared before and after under a lock, so two charts never share axes, data or
size). The command line and the TUI both draw with these.
"""

from __future__ import annotations

import math
import re
import textwrap
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import plotext

from iosched.core.base.cells import cut_at_word
from iosched.core.base.units import si
from iosched.core.documents.document import (
    AlternationDoc,
    Bucket,
    CatalogJobDoc,
    CompareDoc,
    JudgementDoc,
    MatrixDoc,
    MatrixJudgementDoc,
    RunDoc,
)
from iosched.core.documents.metrics import metric_words
from iosched.core.load.fio_result import latency_bins
from iosched.core.statistics.judge import workload_name

# Plain-character markers so variants stay apart without colour (NO_COLOR, a pipe, a .txt file).
BAR_MARKERS = ("█", "▒", "░", "▓", "#", "=")
LINE_MARKERS = ("dot", "+", "x", "o", "*", "•")
COLORS = ("blue+", "orange+", "green+", "magenta+", "cyan+", "red+")
CPU_PARTS = (("cpu_usr", "usr"), ("cpu_sys", "sys"), ("cpu_iowait", "iowait"), ("cpu_irq", "irq"),
             ("cpu_soft", "soft"))
PERCENTILES = ((50.0, "p50"), (99.0, "p99"), (99.9, "p99.9"))
WHISKERS = "whiskers the 95% CI"


# --- the numbers --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Series:
    label: str
    x: list[float]  # group positions or request sizes
    y: list[float]  # means (NaN where a cell has no value)
    low: list[float]  # 95% CI of the mean (equal to y where there is none)
    high: list[float]


@dataclass(frozen=True)
class BarsData:
    title: str  # what the chart shows: kept whole when the plot is wide enough for it alone
    groups: list[str]
    series: list[Series]
    notes: tuple[str, ...] = ()  # how to read it: after the title where there is room, else under the chart


@dataclass(frozen=True)
class SweepData(BarsData):
    """A sweep: the groups are request sizes (``Series.x`` in bytes), drawn as lines on a log axis."""


def _metric_title(metric: str) -> str:
    label, unit, *_ = metric_words(metric)
    return f"{label} ({unit})" if unit else label


@dataclass(frozen=True)
class Table:
    """What the charts read of a judgement, a compare's or a matrix's alike (a compare is a matrix of one workload):
    each cell's (workload, variant) mean and the 95% CI of that mean for every metric, and the metric each workload is
    judged on."""

    workloads: list[str]
    variants: list[str]
    metric: str  # the judgement's primary metric
    metric_of: dict[str, str]  # workload -> the metric its cells are judged on
    figures: dict[tuple[str, str], dict[str, tuple[float, float, float]]]  # cell -> metric -> (mean, low, high)

    def value(self, workload: str, variant: str, metric: str) -> tuple[float, float, float]:
        """The cell's mean and its CI (the mean itself where there is none); NaN where it was not measured."""
        return self.figures.get((workload, variant), {}).get(metric, (math.nan, math.nan, math.nan))


def _figure_of(mean: float | None, ci: tuple[float, float] | None) -> tuple[float, float, float]:
    if mean is None:
        return math.nan, math.nan, math.nan
    lo, hi = ci if ci else (mean, mean)
    return float(mean), float(lo), float(hi)


def table(doc: CompareDoc | AlternationDoc | MatrixDoc, judgement: JudgementDoc | MatrixJudgementDoc) -> Table:
    """The charts' view of a judged result: a matrix's cells, or a compare's one workload under each variant."""
    if isinstance(judgement, MatrixJudgementDoc):
        figures = {(c.workload, c.variant): {c.metric: _figure_of(c.mean, c.mean_ci95),
                                             **{k: _figure_of(s.mean, s.mean_ci95) for k, s in c.secondary.items()}}
                   for c in judgement.cells}
        metric_of = {c.workload: c.metric for c in judgement.cells}
        return Table(judgement.workloads, judgement.variants, judgement.primary_metric, metric_of, figures)
    assert not isinstance(doc, MatrixDoc)
    name = workload_name(doc)
    figures = {(name, v): {k: _figure_of(x.mean, x.ci95 if x.n >= 2 else None) for k, x in m.items()}
               for v, m in judgement.summaries.items()}
    variants = [v.label for v in doc.variants]
    return Table([name], variants, judgement.primary_metric, {name: judgement.primary_metric}, figures)


def workload_jobs(doc: CompareDoc | AlternationDoc | MatrixDoc) -> list[tuple[str, dict[str, str] | None]]:
    """Each workload's name and, for a catalog job, its fio options (what a sweep's request sizes are read from)."""
    if isinstance(doc, MatrixDoc):
        return [(w.name, w.options if isinstance(w, CatalogJobDoc) else None) for w in doc.workloads]
    job = doc.workload.job
    return [(workload_name(doc), job.options if isinstance(job, CatalogJobDoc) else None)]


def cells_runs(doc: CompareDoc | AlternationDoc | MatrixDoc) -> list[tuple[str, RunDoc]]:
    """Every run with the workload it ran."""
    if isinstance(doc, MatrixDoc):
        return [(r.workload, r) for r in doc.runs]
    name = workload_name(doc)
    return [(name, r) for r in doc.runs]


def bars_data(t: Table, metric: str | None = None, workloads: list[str] | None = None) -> BarsData:
    """Per workload (group) one bar per variant: the mean and its 95% CI, exactly as the table shows them."""
    metric = metric or t.metric
    names = t.workloads if workloads is None else workloads
    series = []
    for v in t.variants:
        vals = [t.value(w, v, metric) for w in names]
        series.append(Series(v, [float(i + 1) for i in range(len(vals))], [m for m, _, _ in vals],
                             [lo for _, lo, _ in vals], [hi for _, _, hi in vals]))
    return BarsData(f"{_metric_title(metric)}: mean per workload", list(names), series, (WHISKERS,))


def bars_charts(t: Table) -> list[BarsData]:
    """One bar chart per metric the workloads are judged on, each over the workloads judged on it and measured
    (a study's fio jobs on IOPS, its commands on wall time or a figure of their own: no empty slots), and the
    commands' wall time when a figure of their own is what they are judged on."""

    def measured(w: str, metric: str) -> bool:
        return any(not math.isnan(t.value(w, v, metric)[0]) for v in t.variants)

    by_metric: dict[str, list[str]] = {}
    for w in t.workloads:
        metric = t.metric_of[w]
        if measured(w, metric):
            by_metric.setdefault(metric, []).append(w)
    timed = by_metric.setdefault("wall_s", [])
    timed += [w for w in t.workloads if w not in timed and measured(w, "wall_s")]
    return [bars_data(t, m, ws) for m, ws in by_metric.items() if ws]


_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([kmg]?)i?b?$", re.IGNORECASE)


def _bytes(bs: str) -> float | None:
    m = _SIZE.match(str(bs).strip())
    if not m:
        return None
    return float(m.group(1)) * {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[m.group(2).lower()]


def sweeps_data(doc: CompareDoc | AlternationDoc | MatrixDoc, t: Table, metric: str) -> list[SweepData]:
    """Workloads that differ only in request size, as lines against it (one chart per sweep)."""
    families: dict[tuple[tuple[str, Any], ...], list[tuple[float, str]]] = {}
    for name, opts in workload_jobs(doc):  # a catalog job's fio options
        size = _bytes(opts.get("bs", "")) if opts is not None else None
        if opts is None or size is None:
            continue
        key = tuple(sorted((k, v) for k, v in opts.items() if k not in ("bs", "size")))
        families.setdefault(key, []).append((size, name))
    out = []
    for key, members in families.items():
        if len(members) < 3:
            continue
        members.sort()
        rw = dict(key).get("rw", "")
        series = []
        for v in t.variants:
            vals = [t.value(name, v, metric) for _, name in members]
            series.append(Series(v, [s for s, _ in members], [m for m, _, _ in vals], [lo for _, lo, _ in vals],
                                 [hi for _, _, hi in vals]))
        if all(math.isnan(y) for s in series for y in s.y):
            continue  # the metric was not measured: no chart rather than empty axes
        out.append(SweepData(f"{rw}: {_metric_title(metric)} against request size (log)",
                             [_size_label(s) for s, _ in members], series, (WHISKERS,)))
    return out


def _size_label(b: float) -> str:
    for div, suffix in ((1024**3, "G"), (1024**2, "M"), (1024, "K")):
        if b >= div and b % div == 0:
            return f"{b / div:g}{suffix}"
    return f"{b:g}"


@dataclass(frozen=True)
class LatencyCurve:
    label: str
    us: list[float]  # bin latency in µs, ascending
    cdf: list[float]  # cumulative share of IOs in %, at each bin
    marks: dict[str, float]  # "p50" -> µs


def percentile_from_bins(bins: dict[int, int], q: float) -> float | None:
    """The smallest bin latency (ns) at or below which ``q`` percent of IOs completed."""
    total = sum(bins.values())
    if total <= 0:
        return None
    need = total * q / 100.0
    seen = 0
    for ns, n in sorted(bins.items()):
        seen += n
        if seen >= need:
            return float(ns)
    return float(max(bins))


def latency_data(doc: CompareDoc | AlternationDoc | MatrixDoc) -> dict[str, list[LatencyCurve]]:
    """Per workload, each variant's completion-latency distribution over its valid runs (fio json+ bins)."""
    merged: dict[str, dict[str, dict[int, int]]] = {}
    for workload, r in cells_runs(doc):
        if not r.valid or r.fio is None:
            continue
        bins = latency_bins(r.fio)
        into = merged.setdefault(workload, {}).setdefault(r.variant, {})
        for ns, n in bins.items():
            into[ns] = into.get(ns, 0) + n
    out: dict[str, list[LatencyCurve]] = {}
    labels = [v.label for v in doc.variants]
    for w, _ in workload_jobs(doc):
        curves = []
        for v in labels:
            cell_bins = merged.get(w, {}).get(v)
            if not cell_bins:
                continue
            total = sum(cell_bins.values())
            us, cdf, seen = [], [], 0
            for ns, n in sorted(cell_bins.items()):
                seen += n
                us.append(ns / 1000.0)
                cdf.append(100.0 * (seen / total))  # a share first: a huge count never reaches the plot as inf
            marks = {name: (percentile_from_bins(cell_bins, q) or 0.0) / 1000.0 for q, name in PERCENTILES}
            curves.append(LatencyCurve(v, us, cdf, marks))
        if curves:
            out[w] = curves
    return out


@dataclass(frozen=True)
class LatencyChart:
    """One workload's completion-latency curves, one per variant."""

    workload: str
    curves: list[LatencyCurve]


@dataclass(frozen=True)
class CpuData:
    workload: str
    variants: list[str]
    parts: dict[str, list[float]]  # "usr" -> per variant mean %
    per_io: Series  # CPU µs per IO, mean and CI per variant
    # Where the CPU per IO went (core/load/submission.py): "task", "all kworkers" (every block worker on this machine
    # during the run, whatever disk it served), "other" -> per variant mean µs;
    # empty for runs that did not split it.
    split: dict[str, list[float]] = field(default_factory=dict)

    @property
    def has_ios(self) -> bool:
        """False for a command (it counts no IOs): its chart is the CPU stack alone, no empty per-IO bars."""
        return any(not math.isnan(y) for y in self.per_io.y)


def cpu_data(t: Table) -> list[CpuData]:
    out = []
    for w in t.workloads:
        vs = t.variants
        parts = {name: [t.value(w, v, key)[0] for v in vs] for key, name in CPU_PARTS}
        if all(math.isnan(x) for xs in parts.values() for x in xs):
            continue
        per_io = [t.value(w, v, "cpu_us_per_io") for v in vs]
        out.append(CpuData(w, vs, parts, Series("CPU µs per IO", [float(i + 1) for i in range(len(vs))],
                                                [m for m, _, _ in per_io], [lo for _, lo, _ in per_io],
                                                [hi for _, _, hi in per_io]),
                           cpu_split([t.value(w, v, k)[0] for v in vs] for k in SPLIT_KEYS)))
    return out


SPLIT_KEYS = ("cpu_us_per_io", "cpu_us_per_io_task", "cpu_us_per_io_workers")


def cpu_split(columns: Iterable[list[float]]) -> dict[str, list[float]]:
    """The CPU per IO as task, kernel workers and the rest (interrupts, the driver, other loads), per variant; empty
    unless every variant's runs split it."""
    total, task, workers = list(columns)
    if any(math.isnan(x) for x in (*task, *workers)):
        return {}
    return {"task": task, "all kworkers": workers,
            "other": [max(0.0, t - a - b) if not math.isnan(t) else 0.0 for t, a, b in zip(total, task, workers)]}


# --- drawing ------------------------------------------------------------------------------------------------


class PlotextFigure(Protocol):
    """What a chart draws on: plotext's calls, as plotext's module functions and a textual-plotext plot have them."""

    def bar(self, *args: Any, **kw: Any) -> Any: ...
    def multiple_bar(self, *args: Any, **kw: Any) -> Any: ...
    def stacked_bar(self, *args: Any, **kw: Any) -> Any: ...
    def error(self, *args: Any, **kw: Any) -> Any: ...
    def plot(self, *args: Any, **kw: Any) -> Any: ...
    def scatter(self, *args: Any, **kw: Any) -> Any: ...
    def xscale(self, *args: Any, **kw: Any) -> Any: ...
    def xticks(self, *args: Any, **kw: Any) -> Any: ...
    def yticks(self, *args: Any, **kw: Any) -> Any: ...
    def ylim(self, *args: Any, **kw: Any) -> Any: ...
    def title(self, *args: Any, **kw: Any) -> Any: ...


# plotext's public functions draw on one figure of its own: one chart at a time holds it.
_PLOTEXT = threading.Lock()


@contextmanager
def _figure(width: int, height: int, color: bool) -> Iterator[PlotextFigure]:
    """plotext's figure, cleared, sized and themed for one chart, and cleared again after it (a chart left on it
    would be drawn under the next)."""
    with _PLOTEXT:
        plotext.clear_figure()
        try:
            # plotext shrinks a figure to the terminal it runs in: a chart written to a file, or into a pipe
            # (where the "terminal" is 80 columns), keeps the width it was asked for.
            plotext.limit_size(False, False)
            plotext.plot_size(width, height)
            plotext.theme("pro" if color else "clear")
            yield plotext
        finally:
            plotext.clear_figure()


def _finish(color: bool) -> str:
    text = str(plotext.build())
    return text if color else str(plotext.uncolorize(text))


# A title is centred on the canvas, which is the plot less its y axis (tick labels and line): ours are at most
# 8 columns, so a title this much narrower than the plot always fits.
TITLE_MARGIN = 10


def fit_title(title: str, notes: tuple[str, ...] = (), width: int | None = None) -> tuple[str, str]:
    """The title to give plotext for a plot ``width`` columns wide, and what it leaves out (said under the chart).

    plotext leaves out, whole, a title wider than its canvas. So the title goes with as many of its notes as fit;
    a title too wide alone is cut at a word and ends in "…", and what is left out then is the whole title.
    """
    whole = ", ".join((title, *notes))
    if width is None:
        return whole, ""
    room = max(width - TITLE_MARGIN, 8)
    shown, k = title, 0
    while k < len(notes) and len(shown) + 2 + len(notes[k]) <= room:
        shown, k = f"{shown}, {notes[k]}", k + 1
    if len(shown) <= room:
        return shown, ", ".join(notes[k:])
    return cut_at_word(title, room), whole


def _title(fig: PlotextFigure, title: str, notes: tuple[str, ...], width: int | None) -> str:
    shown, rest = fit_title(title, notes, width)
    fig.title(shown)
    return rest


def _under(text: str, rest: str, width: int) -> str:
    """A rendered chart, with what its title left out under it (wrapped at words to the chart's width)."""
    return text + ("\n" + textwrap.fill(rest, width, initial_indent="  ", subsequent_indent="  ") if rest else "")


def _y_from_zero(fig: PlotextFigure, series: list[Series]) -> None:
    """Bars and rates start at zero; an interval reaching below it is cut at the axis, not drawn into negatives."""
    tops = [v for s in series for v in [*s.y, *s.high] if not math.isnan(v)]
    top = max(tops, default=1.0) * 1.08 or 1.0
    fig.ylim(0, top)
    ticks = [top * i / 4 for i in range(5)]
    fig.yticks(ticks, ["0" if t == 0 else si(t) for t in ticks])


def _whiskers(fig: PlotextFigure, xs: list[float], s: Series, color: str | None) -> None:
    # Cut at the axis (the charts start at zero): a point far below it would make plotext draw a line of
    # millions of rows.
    pts = [(x, y, max(lo, 0.0), hi) for x, y, lo, hi in zip(xs, s.y, s.low, s.high)
           if not math.isnan(y) and hi > max(lo, 0.0)]
    if not pts:
        return
    # plotext's error() draws a symmetric whisker about y: centre it on the interval itself.
    mids = [(lo + hi) / 2 for _, _, lo, hi in pts]
    fig.error([p[0] for p in pts], mids, yerr=[(hi - lo) / 2 for _, _, lo, hi in pts], color=color or "default")


# Each draw_* puts one chart on a plot object it is given (a figure of its own here, a textual-plotext
# widget's plot in the TUI), its title fitted to ``width`` when given, and returns what the title left out;
# each render_* gives it a fresh figure and returns the text, with that under the chart.


def draw_bars(fig: PlotextFigure, data: BarsData, color: bool = False, width: int | None = None) -> str:
    n = len(data.series)
    w = 0.8 / max(n, 1)
    for i, s in enumerate(data.series):
        xs = [x + (i - (n - 1) / 2) * w for x in s.x]
        ys = [0.0 if math.isnan(y) else max(y, 0.0) for y in s.y]  # cut at the axis, as the whiskers
        fig.bar(xs, ys, width=w, label=s.label, marker=None if color else BAR_MARKERS[i % len(BAR_MARKERS)],
                color=COLORS[i % len(COLORS)] if color else None)
        _whiskers(fig, xs, s, "red+" if color else None)
    _y_from_zero(fig, data.series)
    fig.xticks([float(i + 1) for i in range(len(data.groups))], data.groups)
    return _title(fig, data.title, data.notes, width)


def render_bars(data: BarsData, width: int = 100, height: int = 20, color: bool = False) -> str:
    with _figure(width, height, color) as fig:
        rest = draw_bars(fig, data, color, width)
        return _under(_finish(color), rest, width)


SWEEP_HEADROOM = 1.25  # a sweep's y axis: the largest mean and a quarter more


def sweep_top(series: list[Series]) -> tuple[float, bool]:
    """The sweep's y-axis top, scaled to the means (a wide interval at n=2 would flatten every line), and
    whether a whisker reaches above it (then clipped, and the title says so)."""
    means = [y for s in series for y in s.y if not math.isnan(y)]
    top = max(means, default=1.0) * SWEEP_HEADROOM or 1.0
    return top, any(h > top for s in series for h in s.high if not math.isnan(h))


def draw_sweep(fig: PlotextFigure, data: BarsData, color: bool = False, width: int | None = None) -> str:
    fig.xscale("log")
    top, clipped = sweep_top(data.series)
    for i, s in enumerate(data.series):
        pts = [(x, max(y, 0.0)) for x, y in zip(s.x, s.y) if not math.isnan(y)]  # cut at the axis
        fig.plot([p[0] for p in pts], [p[1] for p in pts], label=s.label,
                 marker=LINE_MARKERS[i % len(LINE_MARKERS)], color=COLORS[i % len(COLORS)] if color else None)
        shown = Series(s.label, s.x, s.y, s.low, [min(h, top) for h in s.high])
        _whiskers(fig, s.x, shown, COLORS[i % len(COLORS)] if color else None)
    fig.ylim(0, top)
    ticks = [top * i / 4 for i in range(5)]
    fig.yticks(ticks, ["0" if t == 0 else si(t) for t in ticks])
    fig.xticks(data.series[0].x, data.groups)
    notes = tuple(f"{n}, clipped at the top" if clipped and n == WHISKERS else n for n in data.notes)
    if clipped and WHISKERS not in data.notes:
        notes += ("whiskers clipped at the top",)
    return _title(fig, data.title, notes, width)


def render_sweep(data: BarsData, width: int = 100, height: int = 18, color: bool = False) -> str:
    with _figure(width, height, color) as fig:
        rest = draw_sweep(fig, data, color, width)
        return _under(_finish(color), rest, width)


def draw_latency(fig: PlotextFigure, workload: str, curves: list[LatencyCurve], color: bool = False,
                 width: int | None = None) -> str:
    fig.xscale("log")
    for i, c in enumerate(curves):
        c_color = COLORS[i % len(COLORS)] if color else None
        fig.plot(c.us, c.cdf, label=c.label, marker=LINE_MARKERS[i % len(LINE_MARKERS)], color=c_color)
        pts = [(c.marks[name], q) for q, name in PERCENTILES if c.marks.get(name)]
        fig.scatter([p[0] for p in pts], [p[1] for p in pts], marker="◆" if color else "@", color=c_color)
    fig.ylim(0, 100)
    lo = min(c.us[0] for c in curves)
    hi = max(c.us[-1] for c in curves)
    decades = [10.0**k for k in range(math.floor(math.log10(max(lo, 1e-3))), math.ceil(math.log10(hi)) + 1)]
    fig.xticks(decades, [_us(d) for d in decades])
    return _title(fig, f"{workload}: completion latency CDF (µs, log)",
                  (f"{'◆' if color else '@'} at p50 / p99 / p99.9",), width)


def percentile_lines(curves: list[LatencyCurve]) -> list[str]:
    w = max(len(c.label) for c in curves)
    return [f"  {c.label:<{w}}  " + "  ".join(f"{name} {_us(c.marks.get(name))}" for _, name in PERCENTILES)
            for c in curves]


def render_latency(workload: str, curves: list[LatencyCurve], width: int = 100, height: int = 18,
                   color: bool = False) -> str:
    with _figure(width, height, color) as fig:
        rest = draw_latency(fig, workload, curves, color, width)
        return _under(_finish(color), rest, width) + "\n" + "\n".join(percentile_lines(curves))


def _us(x: float | None) -> str:
    if not x:
        return "-"
    if x >= 1e6:
        return f"{x / 1e6:.3g} s"
    return f"{x / 1000:.3g} ms" if x >= 1000 else f"{x:.3g} µs"


def draw_cpu_stack(fig: PlotextFigure, data: CpuData, color: bool = False, width: int | None = None) -> str:
    names = [name for _, name in CPU_PARTS]
    stacks = [[0.0 if math.isnan(x) else x for x in data.parts[name]] for name in names]
    fig.stacked_bar(data.variants, stacks, labels=names,
                    color=list(COLORS[: len(names)]) if color else None,
                    marker=None if color else list(BAR_MARKERS[: len(names)]))
    return _title(fig, f"{data.workload}: CPU %", (), width)  # its legend names the parts


def draw_cpu_per_io(fig: PlotextFigure, data: CpuData, color: bool = False, width: int | None = None) -> str:
    ys = [0.0 if math.isnan(y) else y for y in data.per_io.y]
    if data.split:  # where it went: the submitting task, the kernel's workers, the rest
        names = list(data.split)
        fig.stacked_bar(data.variants, [data.split[n] for n in names], labels=names,
                        color=list(COLORS[: len(names)]) if color else None,
                        marker=None if color else list(BAR_MARKERS[: len(names)]))
    else:
        fig.bar(data.variants, ys, marker=None if color else BAR_MARKERS[1])
    _whiskers(fig, data.per_io.x, data.per_io, "red+" if color else None)
    _y_from_zero(fig, [data.per_io])
    return _title(fig, "CPU µs per IO", (WHISKERS,), width)  # beside the stack, which names the workload


def render_cpu(data: CpuData, width: int = 100, height: int = 16, color: bool = False) -> str:
    """The CPU stack beside CPU time per IO; a command's stack alone, the whole width (it counts no IOs)."""
    if not data.has_ios:
        with _figure(width, height, color) as whole:
            rest = draw_cpu_stack(whole, data, color, width)
            return _under(_finish(color), rest, width)
    with _figure(width // 2, height, color) as left:
        rest_a = draw_cpu_stack(left, data, color, width // 2)
        a = _finish(color).splitlines()
    with _figure(width - width // 2, height, color) as right:
        rest_b = draw_cpu_per_io(right, data, color, width - width // 2)
        b = _finish(color).splitlines()
    rest = "; ".join(r for r in (rest_a, rest_b and f"CPU µs per IO: {rest_b}") if r)
    return _under("\n".join([x + y for x, y in zip(a, b)] + a[len(b):]), rest, width)


@dataclass(frozen=True)
class TraceHistogram:
    """One traced time's distribution per variant (``--trace``) in one workload: the share of IOs in each log2
    bucket."""

    part: str  # "sched_us" or "device_us"
    lows: list[int]  # each bucket's lower bound, µs (0: under 1 µs)
    shares: dict[str, list[float]]  # variant -> % of its traced IOs in each bucket
    ios: dict[str, int]
    workload: str = ""


TRACE_PARTS = (("sched_us", "time in the scheduler"), ("device_us", "device time"))
TRACE_BUCKETS = [0, *(1 << k for k in range(24))]  # µs: under 1, then powers of two to 8 s


def trace_data(doc: CompareDoc | AlternationDoc | MatrixDoc) -> list[TraceHistogram]:
    """Per workload and traced time, each variant's buckets summed over its valid runs (block-layer tracing,
    --trace): a compare's one workload, or each of a matrix's."""
    labels = [v.label for v in doc.variants]
    names = [w for w, _ in workload_jobs(doc)] or [""]
    out = []
    for workload in names:
        runs = [r for w, r in cells_runs(doc) if w == workload or len(names) == 1]
        for part, _title in TRACE_PARTS:
            counts: dict[str, dict[int, int]] = {}
            for r in runs:
                rows: list[Bucket] = getattr(r.trace, part) if r.valid and r.trace is not None else []
                for row in rows:
                    low, _high, n = row
                    into = counts.setdefault(r.variant, {})
                    into[int(low)] = into.get(int(low), 0) + int(n)
            used = [low for low in TRACE_BUCKETS if any(c.get(low) for c in counts.values())]
            if not used:
                continue
            # Every bucket between the first and the last, empty ones too: the x axis is a log scale.
            lows = TRACE_BUCKETS[TRACE_BUCKETS.index(used[0]): TRACE_BUCKETS.index(used[-1]) + 1]
            shares = {v: [100.0 * counts[v].get(low, 0) / max(1, sum(counts[v].values())) for low in lows]
                      for v in labels if v in counts}
            out.append(TraceHistogram(part, lows, shares, {v: sum(counts[v].values()) for v in shares}, workload))
    return out


def _bucket_label(low: int) -> str:
    """A bucket's lower bound in µs, as powers of two read: 512, 1k (1024), 2k, … 1M."""
    if low == 0:
        return "<1"
    return str(low) if low < 1024 else f"{low >> 10}k" if low < 1 << 20 else f"{low >> 20}M"


def draw_trace(fig: PlotextFigure, data: TraceHistogram, color: bool = False, width: int | None = None) -> str:
    labels = [_bucket_label(low) for low in data.lows]
    variants = list(data.shares)
    fig.multiple_bar(labels, [data.shares[v] for v in variants], labels=variants,
                     marker=None if color else [BAR_MARKERS[i % len(BAR_MARKERS)] for i in range(len(variants))],
                     color=[COLORS[i % len(COLORS)] for i in range(len(variants))] if color else None)
    fig.ylim(0, max((x for s in data.shares.values() for x in s), default=1.0) * 1.08 or 1.0)
    title = f"{dict(TRACE_PARTS)[data.part]} (block-layer tracing)"
    return _title(fig, f"{data.workload}: {title}" if data.workload else title, ("% of IOs per log2 µs bucket",),
                  width)


def render_trace(data: TraceHistogram, width: int = 100, height: int = 16, color: bool = False) -> str:
    ios = "  ".join(f"{v}: {si(n)} IOs traced" for v, n in data.ios.items())
    with _figure(width, height, color) as fig:
        rest = draw_trace(fig, data, color, width)
        return _under(_finish(color), rest, width) + "\n  " + ios


# --- every chart of a result --------------------------------------------------------------------------------

Chart = BarsData | LatencyChart | CpuData | TraceHistogram  # a SweepData is a BarsData drawn as a sweep


def result_charts(doc: CompareDoc | AlternationDoc | MatrixDoc,
                  judgement: JudgementDoc | MatrixJudgementDoc) -> list[Chart]:
    """Every chart the result supports, in reading order: what both front ends draw, from the judgement the result
    holds (a compare's or a matrix's)."""
    t = table(doc, judgement)
    out: list[Chart] = list(bars_charts(t))
    for metric in dict.fromkeys([t.metric, "mb_s"]):
        out += sweeps_data(doc, t, metric)
    out += [LatencyChart(w, curves) for w, curves in latency_data(doc).items()]
    out += cpu_data(t)
    out += trace_data(doc)
    return out


def render_chart(chart: Chart, width: int = 100, color: bool = False) -> str:
    if isinstance(chart, SweepData):
        return render_sweep(chart, width, color=color)
    if isinstance(chart, BarsData):
        return render_bars(chart, width, color=color)
    if isinstance(chart, LatencyChart):
        return render_latency(chart.workload, chart.curves, width, color=color)
    if isinstance(chart, CpuData):
        return render_cpu(chart, width, color=color)
    return render_trace(chart, width, color=color)


def all_charts(doc: CompareDoc | AlternationDoc | MatrixDoc, judgement: JudgementDoc | MatrixJudgementDoc,
               width: int = 100, color: bool = False) -> list[str]:
    """Every chart the result supports, in reading order, as text ``width`` columns wide (at least 60)."""
    width = max(60, width)
    return [render_chart(c, width, color) for c in result_charts(doc, judgement)]
