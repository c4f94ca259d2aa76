"""The results' plotext charts in the TUI: one textual-plotext widget per chart, each with its own plot."""

from __future__ import annotations

from dataclasses import replace

from matrix_support import fake_matrix
from textual.app import App, ComposeResult

from iosched.core.documents.document import MatrixDoc
from iosched.tui.result_charts import ResultChart, ResultCharts


def doc_with_bins() -> MatrixDoc:
    vals = {(w, v): [1000.0 * (1 + 0.1 * i) * (1.3 if v == "bfq" else 1) for i in range(3)]
            for w in ("4k", "16k", "64k") for v in ("none", "bfq")}
    doc = fake_matrix(vals, ["4k", "16k", "64k"], ["none", "bfq"])
    bins = {"jobs": [{"read": {"clat_ns": {"bins": {"100000": 90, "1000000": 10}}}}]}
    return replace(doc, runs=[replace(r, fio=bins) for r in doc.runs])


class ChartsApp(App[None]):
    def __init__(self, doc: MatrixDoc) -> None:
        super().__init__()
        self.doc = doc

    def compose(self) -> ComposeResult:
        yield ResultCharts(self.doc)


async def test_result_charts_draw_each_chart_on_its_own_plot():
    app = ChartsApp(doc_with_bins())
    async with app.run_test(size=(120, 60)) as pilot:
        await pilot.pause()
        charts = list(app.query(ResultChart))
        # bars, the IOPS sweep (no MB/s in these runs: no MB/s sweep), 3 latency CDFs, 3 x (CPU stack, CPU per IO).
        assert len(charts) == 1 + 1 + 3 + 6
        assert len({id(c.plt) for c in charts}) == len(charts)
        assert "IOPS: mean per workload" in charts[0].render().plain
        assert "request size" in charts[1].render().plain
        assert "completion latency CDF" in charts[2].render().plain
        # Rendering again (a resize) draws the same chart again.
        assert charts[1].render().plain == charts[1].render().plain
