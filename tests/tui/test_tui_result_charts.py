"""The results' plotext charts in the TUI: one textual-plotext widget per chart, each with its own plot."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from matrix_support import fake_matrix
from textual.app import App, ComposeResult

from iosched.core.documents.document import MatrixDoc
from iosched.core.documents.saved import read_matrix
from iosched.core.statistics.matrix_judge import judge_matrix
from iosched.tui.result_charts import ResultChart, ResultCharts

SAVED = Path(__file__).resolve().parents[1] / "data" / "saved"  # written by `compare --save` on a loop device


def doc_with_bins() -> MatrixDoc:
    vals = {(w, v): [1000.0 * (1 + 0.1 * i) * (1.3 if v == "bfq" else 1) for i in range(3)]
            for w in ("4k", "16k", "64k") for v in ("none", "bfq")}
    doc = fake_matrix(vals, ["4k", "16k", "64k"], ["none", "bfq"])
    bins = {"jobs": [{"read": {"clat_ns": {"bins": {"100000": 90, "1000000": 10}}}}]}
    return replace(doc, runs=[replace(r, fio=bins) for r in doc.runs])


class ChartsApp(App[None]):
    def __init__(self, doc: MatrixDoc) -> None:
        super().__init__()
        self.doc = replace(doc, judgement=judge_matrix(doc))  # a result is shown judged: its charts read that

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


async def test_a_study_in_the_tui_charts_the_commands_wall_time_and_every_title_fits():
    """The saved study (a fio job and a command): at 80 columns each chart keeps a title, what it leaves out is
    the chart's tooltip, and the command has its wall time charted and no CPU-per-IO chart."""
    doc = read_matrix(json.loads((SAVED / "study.json").read_text()), "study.json")
    app = ChartsApp(doc)
    async with app.run_test(size=(80, 60)) as pilot:
        await pilot.pause()
        charts = list(app.query(ResultChart))
        firsts = [c.render().plain.splitlines()[0] for c in charts]
        assert all(first.strip() for first in firsts), firsts
        assert [f.strip() for f in firsts[:3]] == ["IOPS: mean per workload, whiskers the 95% CI",
                                                   "value: mean per workload, whiskers the 95% CI",
                                                   "wall time (s): mean per workload, whiskers the 95% CI"]
        assert sum("CPU µs per IO" in f for f in firsts) == 1  # the fio job's; the command counts no IOs
        per_io = next(c for c, f in zip(charts, firsts) if "CPU µs per IO" in f)
        assert per_io.tooltip == "whiskers the 95% CI"  # a half-width chart: said on hover
