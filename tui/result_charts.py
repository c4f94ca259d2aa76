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
    bars_data,
    cpu_data,
    draw_bars,
    draw_cpu_per_io,
    draw_cpu_stack,
    draw_latency,
    draw_sweep,
    latency_data,
    percentile_lines,
    sweeps_data,
)
from iosched.core.statistics.matrix_judge import as_matrix, judge_matrix


class ResultChart(PlotextPlot):
    """One chart: ``draw`` puts it on this widget's own plot object."""

    DEFAULT_CSS = "ResultChart { height: 18; }"

    def __init__(self, draw: Callable[..., None], *args: object) -> None:
        super().__init__()
        self.draw, self.args = draw, args

    def render(self) -> RenderResult:
        # plotext 5.3 cannot build a log-scale figure twice: start from a clean figure at each (rare) render.
        self.plt.clear_figure()
        self.draw(self.plt, *self.args, True)
        return super().render()


class ResultCharts(Vertical):
    """Every chart a saved experiment or matrix supports, in reading order."""

    DEFAULT_CSS = "ResultCharts { height: auto; } ResultCharts Horizontal { height: 16; }"

    def __init__(self, doc: CompareDoc | AlternationDoc | MatrixDoc, alpha: float = 0.05) -> None:
        super().__init__()
        self.doc = doc if isinstance(doc, MatrixDoc) else as_matrix(doc)
        self.judgement = judge_matrix(self.doc, alpha)

    def compose(self) -> ComposeResult:
        j, doc = self.judgement, self.doc
        yield ResultChart(draw_bars, bars_data(j))
        for metric in dict.fromkeys([j.primary_metric, "mb_s"]):
            for sweep in sweeps_data(doc, j, metric):
                yield ResultChart(draw_sweep, sweep)
        for workload, curves in latency_data(doc).items():
            yield ResultChart(draw_latency, workload, curves)
            yield Static("\n".join(percentile_lines(curves)))
        for cpu in cpu_data(j):
            with Horizontal():
                yield ResultChart(draw_cpu_stack, cpu)
                yield ResultChart(draw_cpu_per_io, cpu)
