"""The result's charts in the TUI: the same plotext charts as `--plot`, each in its own textual-plotext widget.

Drawn once, when the result arrives (plotext costs tens of ms a chart: never on a timer).
"""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult, RenderResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static
from textual_plotext import PlotextPlot

from iosched.core.documents.document import AlternationDoc, CompareDoc, MatrixDoc
from iosched.core.present.charts import (
    BarsData,
    CpuData,
    LatencyChart,
    SweepData,
    draw_bars,
    draw_cpu_per_io,
    draw_cpu_stack,
    draw_latency,
    draw_sweep,
    draw_trace,
    percentile_lines,
    result_charts,
)
from iosched.tui.plain import plain


class ResultChart(PlotextPlot):
    """One chart: ``draw`` puts it on this widget's own plot object, its title fitted to the widget's width (what
    the title leaves out is the widget's tooltip)."""

    DEFAULT_CSS = "ResultChart { height: 18; }"

    def __init__(self, draw: Callable[..., str], *args: object) -> None:
        super().__init__()
        self.draw, self.args = draw, args
        self.left_out = ""

    def render(self) -> RenderResult:
        # plotext 5.3 cannot build a log-scale figure twice: start from a clean figure at each (rare) render.
        self.plt.clear_figure()
        left_out = self.draw(self.plt, *self.args, True, width=self.size.width)
        if left_out != self.left_out:
            self.left_out = left_out
            self.tooltip = plain(left_out) if left_out else None
        return super().render()


class ResultCharts(Vertical):
    """Every chart a saved experiment or matrix supports, in reading order (core/present/charts.py's)."""

    DEFAULT_CSS = "ResultCharts { height: auto; } ResultCharts Horizontal { height: 16; }"

    def __init__(self, doc: CompareDoc | AlternationDoc | MatrixDoc) -> None:
        super().__init__()
        self.doc = doc  # judged: its charts read its own judgement

    def compose(self) -> ComposeResult:
        if self.doc.judgement is None:
            return
        for chart in result_charts(self.doc, self.doc.judgement):
            if isinstance(chart, SweepData):
                yield ResultChart(draw_sweep, chart)
            elif isinstance(chart, BarsData):
                yield ResultChart(draw_bars, chart)
            elif isinstance(chart, LatencyChart):
                yield ResultChart(draw_latency, chart.workload, chart.curves)
                yield Static(plain("\n".join(percentile_lines(chart.curves))))
            elif isinstance(chart, CpuData):
                with Horizontal():
                    yield ResultChart(draw_cpu_stack, chart)
                    if chart.has_ios:
                        yield ResultChart(draw_cpu_per_io, chart)
            else:
                yield ResultChart(draw_trace, chart)
