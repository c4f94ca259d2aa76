"""plotext charts of a matrix: the numbers handed to plotext are the numbers in the table; one fixed snapshot."""

import json
import math
import os
import random
import statistics
from dataclasses import replace
from pathlib import Path

import plotext
import pytest
from doc_support import matrix_doc
from matrix_support import fake_matrix

from iosched.cli.chart_page import charts_html
from iosched.core.base.encode import encode
from iosched.core.base.units import si
from iosched.core.documents.saved import read_matrix
from iosched.core.present import charts
from iosched.core.present.matrix import matrix_text
from iosched.core.statistics.matrix_judge import judge_matrix

# Kept outside __snapshots__: that folder belongs to the SVG snapshot plugin, which fails on files it does not own.
SNAPSHOT = Path(__file__).resolve().parents[2] / "expected" / "matrix_bars_80x20.txt"


def judged(workloads=("4k", "16k", "64k"), labels=("none", "bfq"), seed=5):
    rng = random.Random(seed)
    vals = {(w, v): [round(1000 * (i + 1) * (1 + 0.3 * j) * (1 + rng.gauss(0, 0.05)), 1) for _ in range(3)]
            for i, w in enumerate(workloads) for j, v in enumerate(labels)}
    doc = replace(fake_matrix(vals, list(workloads), list(labels)), repeat=3)
    return doc, judge_matrix(doc)


class Recorder:
    """Stands in for plotext's public functions that take data, and keeps what they were given."""

    def __init__(self, monkeypatch):
        self.calls = []
        for name in ("bar", "error", "plot", "stacked_bar", "scatter"):
            real = getattr(plotext, name)

            def record(*args, _name=name, _real=real, **kw):
                self.calls.append((_name, args, kw))
                return _real(*args, **kw)
            monkeypatch.setattr(plotext, name, record)


def test_bars_hand_plotext_the_table_numbers(monkeypatch):
    doc, j = judged()
    rec = Recorder(monkeypatch)
    charts.render_bars(charts.bars_data(charts.table(doc, j)), 100)
    table = matrix_text(doc, j)
    j = encode(j)
    bars = [(args, kw) for name, args, kw in rec.calls if name == "bar"]
    assert [kw["label"] for _, kw in bars] == ["none", "bfq"]
    for (args, _kw), v in zip(bars, ("none", "bfq")):
        cells = [c for c in j["cells"] if c["variant"] == v]
        assert list(args[1]) == [c["mean"] for c in cells]
        for c in cells:  # the table prints the geometric means its ratios are of; the bars, as titled, the means
            assert si(c["geomean"]) in table
    whiskers = [(args, kw) for name, args, kw in rec.calls if name == "error"]
    for (args, kw), v in zip(whiskers, ("none", "bfq")):
        cells = [c for c in j["cells"] if c["variant"] == v]
        lows = [m - e for m, e in zip(args[1], kw["yerr"])]
        highs = [m + e for m, e in zip(args[1], kw["yerr"])]
        assert lows == pytest.approx([c["mean_ci95"][0] for c in cells])
        assert highs == pytest.approx([c["mean_ci95"][1] for c in cells])


def test_cpu_chart_hands_plotext_the_cell_means(monkeypatch):
    doc, j = judged()
    rec = Recorder(monkeypatch)
    (first, *_) = charts.cpu_data(charts.table(doc, j))
    charts.render_cpu(first, 100)
    (stack,) = [args for name, args, _ in rec.calls if name == "stacked_bar"]
    cell = next(c for c in encode(j)["cells"] if c["workload"] == "4k" and c["variant"] == "bfq")
    assert [row[1] for row in stack[1]] == [cell["secondary"][k]["mean"] for k, _ in charts.CPU_PARTS]


def test_sweeps_follow_request_size_on_a_log_axis(monkeypatch):
    doc, j = judged(workloads=("64k", "4k", "16k"))
    (sweep,) = charts.sweeps_data(doc, charts.table(doc, j), "iops")
    assert sweep.groups == ["4K", "16K", "64K"]
    assert sweep.series[0].x == [4096.0, 16384.0, 65536.0]
    cells = {(c["workload"], c["variant"]): c for c in encode(j)["cells"]}
    assert sweep.series[1].y == [cells[(w, "bfq")]["mean"] for w in ("4k", "16k", "64k")]
    text = charts.render_sweep(sweep, 90)
    assert "request size" in text and "16K" in text


def test_a_sweeps_axis_follows_the_means_and_says_when_whiskers_are_clipped():
    means = charts.Series("none", [4096.0, 65536.0], [100.0, 50.0], [90.0, 45.0], [110.0, 55.0])
    top, clipped = charts.sweep_top([means])
    assert top == 125.0 and not clipped
    wide = charts.Series("bfq", [4096.0, 65536.0], [80.0, 40.0], [1.0, 2.0], [900.0, 60.0])  # n=2: a huge CI
    top, clipped = charts.sweep_top([means, wide])
    assert top == 125.0 and clipped  # the lines keep their height; the whisker is cut
    text = charts.render_sweep(charts.BarsData("IOPS by request size", ["4K", "64K"], [means, wide]), 90)
    assert "IOPS by request size, whiskers clipped at the top" in text and "900" not in text


def test_latency_curves_and_percentiles_from_bins():
    # 90 IOs at 100 µs, 9 at 1 ms, 1 at 10 ms: p50 100 µs, p99 1 ms, p99.9 10 ms.
    bins = {"100000": 90, "1000000": 9, "10000000": 1}
    doc = {"variants": [{"label": "none"}], "workloads": [{"name": "w"}],
           "runs": [{"workload": "w", "variant": "none", "fio": {"jobs": [{"read": {"clat_ns": {"bins": bins}}}]}}]}
    ((curve,),) = charts.latency_data(matrix_doc(doc)).values()
    assert curve.us == [100.0, 1000.0, 10000.0] and curve.cdf == pytest.approx([90.0, 99.0, 100.0])
    assert curve.marks == {"p50": 100.0, "p99": 1000.0, "p99.9": 10000.0}
    text = charts.render_latency("w", [curve], 80)
    assert "p99 1 ms" in text and "p99.9 10 ms" in text


@pytest.mark.parametrize("count", [1e308, 2.0**64 + 4096, 10**30, -5, float("nan"), "7", True])
def test_counts_no_fio_could_write_are_left_out_of_the_curve(count):
    """A bin count of 1e308 made plotext overflow (`report --plot`): such a count is no count of IOs."""
    bins = {"100000": 90, "1000000": count, "10000000": 1, "1" + "0" * 400: 5}
    doc = {"variants": [{"label": "none"}], "workloads": [{"name": "w"}],
           "runs": [{"workload": "w", "variant": "none", "fio": {"jobs": [{"read": {"clat_ns": {"bins": bins}}}]}}]}
    ((curve,),) = charts.latency_data(matrix_doc(doc)).values()
    assert curve.us == [100.0, 10000.0] and curve.cdf == pytest.approx([90 / 91 * 100, 100.0])
    assert "w: completion latency CDF" in charts.render_latency("w", [curve], 80)


def test_the_largest_counts_fio_can_write_are_drawn():
    bins = {"100000": 2**64, "1000000": 2**64, "18446744073709551615": 2**64}
    runs = [{"workload": "w", "variant": "none", "fio": {"jobs": [{"read": {"clat_ns": {"bins": bins}}}]}}] * 50
    doc = {"variants": [{"label": "none"}], "workloads": [{"name": "w"}], "runs": runs}
    ((curve,),) = charts.latency_data(matrix_doc(doc)).values()
    assert curve.cdf == pytest.approx([100 / 3, 200 / 3, 100.0])
    assert "p50 1 ms" in charts.render_latency("w", [curve], 80)


def test_each_chart_owns_its_figure():
    doc, j = judged()
    a = charts.render_bars(charts.bars_data(charts.table(doc, j)), 80, 20)
    charts.render_bars(charts.bars_data(charts.table(*judged(labels=("x", "y", "z"), seed=9))), 120, 30)
    assert charts.render_bars(charts.bars_data(charts.table(doc, j)), 80, 20) == a


def test_bar_chart_snapshot_at_80_columns():
    doc, j = judged()
    text = charts.render_bars(charts.bars_data(charts.table(doc, j)), 80, 20, color=False)
    assert "\x1b" not in text
    if os.environ.get("IOSCHED_UPDATE_SNAPSHOTS"):
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(text)
    assert text == SNAPSHOT.read_text()


def test_colour_and_html():
    doc, j = judged()
    coloured = charts.render_bars(charts.bars_data(charts.table(doc, j)), 80, 20, color=True)
    assert "\x1b[" in coloured
    html = charts_html([coloured], 80)
    assert html.startswith("<!DOCTYPE html>") and "IOPS" in html


def test_the_table_aligns_the_ratios_of_a_column_whatever_the_means_widths():
    # Figures of 1.0k and 210 differ in width: the "×" of a column still starts at one place.
    rng = random.Random(3)
    vals = {(w, v): [scale * (1 + 0.3 * j) * (1 + rng.gauss(0, noise)) for _ in range(3)]
            for w, scale, noise in (("4k", 1000, 0.01), ("1m", 33000, 0.05), ("64k", 210, 0.5))
            for j, v in enumerate(("none", "bfq", "kyber"))}
    doc = replace(fake_matrix(vals, ["4k", "1m", "64k"], ["none", "bfq", "kyber"]), repeat=3)
    rows = [line for line in matrix_text(doc, judge_matrix(doc)).splitlines() if line.split()[:1] in
            (["4k"], ["1m"], ["64k"])]
    assert len(rows) == 3
    for k in (1, 2):  # the bfq and kyber columns
        starts = {[i for i, ch in enumerate(row) if ch == "×"][k - 1] for row in rows}
        assert len(starts) == 1, "\n".join(rows)


def _traced_doc() -> dict:
    """Two variants, two valid traced runs each and an invalid one: none's scheduler time under 1 µs, bfq's at
    8-16 µs and 16-32 µs."""
    runs = []
    for i, (v, valid) in enumerate([("none", True), ("bfq", True), ("bfq", True), ("none", True),
                                    ("bfq", False)]):
        sched = [[0, 1, 100]] if v == "none" else [[8, 16, 60], [16, 32, 40]]
        runs.append({"index": i, "variant": v, "valid": valid,
                     "trace": {"ios": 100, "sched_us": sched if valid else [[1024, 2048, 999]],
                               "device_us": [[64, 128, 100]], "total_us": [[64, 128, 100]]}})
    return {"variants": [{"label": "none"}, {"label": "bfq"}], "runs": runs}


def test_traced_times_become_one_histogram_per_part_with_every_bucket_between():
    sched, device = charts.trace_data(matrix_doc(_traced_doc()))
    assert sched.part == "sched_us" and device.part == "device_us"
    assert sched.lows == [0, 1, 2, 4, 8, 16]  # empty buckets between kept: the axis is log2
    assert sched.shares["none"] == [100.0, 0, 0, 0, 0, 0]
    assert sched.shares["bfq"] == [0, 0, 0, 0, 60.0, 40.0]  # the invalid run's 999 IOs left out
    assert sched.ios == {"none": 200, "bfq": 200} and device.lows == [64]
    text = charts.render_trace(sched, 80)
    assert "time in the scheduler (block-layer tracing)" in text and "bfq: 200 IOs traced" in text
    assert charts.trace_data(matrix_doc({"variants": [{"label": "none"}],
                                         "runs": [{"variant": "none", "metrics": {}}]})) == []


# --- real saved results: every chart's title at every width; a study's charts -----------------------------

SAVED = Path(__file__).resolve().parents[2] / "data" / "saved"  # written by `compare --save` on a loop device


def saved_judged(name: str):
    """A saved matrix as `report` reads and judges it."""
    doc = read_matrix(json.loads((SAVED / name).read_text()), name)
    return doc, judge_matrix(doc)


@pytest.mark.parametrize("width", [60, 72, 79, 99, 120, 180])
def test_every_chart_of_a_size_sweep_has_its_title_at_any_width(width):
    """plotext leaves out a title wider than its canvas: 3 of 8 sweep charts had none at 99 columns, and every one
    in a file (drawn at the terminal's width, not the file's)."""
    doc, j = saved_judged("sweep.json")
    drawn = charts.all_charts(doc, j, width)
    sweeps = [c for c in drawn if "against request size" in c.splitlines()[0]]
    assert len(sweeps) == 8  # IOPS and MB/s for randread, read, randwrite, write
    for text in drawn:
        first = text.splitlines()[0]
        halves = [first[: width // 2], first[width // 2:]] if "CPU µs per IO" in first else [first]
        assert all(h.strip() for h in halves), text
        assert len(first) == width  # drawn at the width asked
    # What a narrow title left out is said under its chart, never lost.
    if width < 80:
        assert any("\n  whiskers the 95% CI" in c for c in sweeps)
    assert max(len(line) for c in drawn for line in c.splitlines()) <= width


def test_charts_keep_the_width_asked_for_whatever_the_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "50")  # plotext shrank every figure to the terminal: a file's charts too
    doc, j = saved_judged("sweep.json")
    (bars, *_) = charts.all_charts(doc, j, 120)
    assert max(len(line) for line in bars.splitlines()) == 120
    html = charts_html(charts.all_charts(doc, j, 120, color=True), 120)
    assert html.count("against request size") == 8


def test_a_title_too_wide_is_cut_at_a_word_and_said_whole_under_the_chart():
    title = "sweep-randread-128k: completion latency CDF (µs, log)"
    assert charts.fit_title(title, ("@ at p50",), 100) == (f"{title}, @ at p50", "")
    assert charts.fit_title(title, ("@ at p50",), 70) == (title, "@ at p50")
    shown, rest = charts.fit_title(title, ("@ at p50",), 60)
    assert shown == "sweep-randread-128k: completion latency CDF…" and rest == f"{title}, @ at p50"
    assert charts.fit_title("cmd: tar-xzf-/a/very/long/path", (), 30)[0] == "cmd: tar-xzf-/a/ver…"


def test_a_study_charts_each_workload_on_its_own_metric_and_the_commands_wall_time():
    """A study of a fio job (judged on IOPS) and a command (judged on a figure it prints): no empty IOPS slot
    for the command, and its wall time charted."""
    doc, j = saved_judged("study.json")
    bars = charts.bars_charts(charts.table(doc, j))
    assert [(b.title, b.groups) for b in bars] == [("IOPS: mean per workload", ["4k-randread"]),
                                                  ("value: mean per workload", ["urandom"]),
                                                  ("wall time (s): mean per workload", ["urandom"])]
    assert not [y for b in bars for s in b.series for y in s.y if math.isnan(y)]
    runs = [r.metrics["wall_s"] for r in doc.runs if r.workload == "urandom" and r.variant == "bfq" and r.valid]
    assert bars[2].series[1].y == [pytest.approx(statistics.mean(runs))]
    drawn = charts.all_charts(doc, j, 79)
    assert "wall time (s): mean per workload" in drawn[2]
    (command_cpu,) = [c for c in drawn if c.splitlines()[0].strip().startswith("urandom: CPU %")]
    assert "CPU µs per IO" not in command_cpu  # a command counts no IOs: its CPU stack alone
    (job_cpu,) = [c for c in drawn if "4k-randread: CPU %" in c.splitlines()[0]]
    assert "CPU µs per IO" in job_cpu


def test_a_traced_matrix_has_its_histograms_per_workload():
    plain = _traced_doc()
    plain["workloads"] = [{"name": "a"}, {"name": "b"}]
    for r in plain["runs"]:
        r["workload"] = "a" if r["index"] < 2 else "b"
    doc = matrix_doc(plain)
    got = [(t.workload, t.part, t.ios) for t in charts.trace_data(doc)]
    assert got == [("a", "sched_us", {"none": 100, "bfq": 100}), ("a", "device_us", {"none": 100, "bfq": 100}),
                   ("b", "sched_us", {"none": 100, "bfq": 100}), ("b", "device_us", {"none": 100, "bfq": 100})]
    assert "b: device time (block-layer tracing)" in charts.render_trace(charts.trace_data(doc)[3], 100)

