"""The summary's notes: what matters to the verdict, one line each, a busy machine said once."""

from __future__ import annotations

from dataclasses import replace

import pytest
from doc_support import experiment_doc
from service_support import compare, run

from iosched.core.documents.document import ComparisonDoc, RankDoc
from iosched.core.experiment.simulated import Simulation
from iosched.core.present.summary import note_lines, rank_words, summary_lines
from iosched.core.statistics.verdict import judge

BUSY = [f"busy machine: another iosched loads loop{k} (pid {100 + k}, matrix) during run {k}; its IO and CPU compete "
        "with this experiment's" for k in range(1, 5)]


def _raw(notes: list[str] | None = None) -> dict:
    runs = [{"index": i, "variant": lb, "metrics": {"iops": x, "clat_p99_us": 900.0 * (1 + i / 50)}}
            for i, (lb, x) in enumerate([("none", 100e3), ("bfq", 70e3), ("bfq", 72e3), ("none", 103e3),
                                         ("none", 98e3), ("bfq", 69e3)])]
    return {"variants": [{"label": "none"}, {"label": "bfq"}], "runs": runs, "repeat": 3,
            "order": [r["variant"] for r in runs], "kind": "compare", "notes": notes or [],
            "device": {"name": "loop0"}, "kernel": "6.18", "workload": {"job": {"name": "randread-q16t2"}}}


def _doc(notes: list[str]):
    doc = experiment_doc(_raw(notes))
    return replace(doc, judgement=judge(doc))


def test_a_busy_machine_is_one_note_however_many_loads_were_seen():
    doc = _doc(BUSY)
    assert doc.judgement is not None
    lines = note_lines(doc, doc.judgement)
    assert lines == [f"note: {BUSY[0]}", "note: busy machine: and 3 more such notes (--details)"]
    assert len(summary_lines(doc, doc.judgement)) <= 30


def test_one_busy_note_and_others_are_kept_as_they_are():
    doc = _doc([BUSY[0], "ended early: the device vanished"])
    assert doc.judgement is not None
    assert note_lines(doc, doc.judgement) == [f"note: {BUSY[0]}", "note: ended early: the device vanished"]


def test_the_summary_shows_the_rank_check_only_where_a_test_finds_something():
    """Two differences neither test finds, pointing opposite ways, are noise in a summary; --details says them."""
    def comp(disagrees):
        rank = RankDoc(u=4.0, p_value=1.0, ratio=1.007, ci95=None, disagrees=disagrees)
        return ComparisonDoc(metric="iops", baseline="none", variant="mq-deadline", ratio=0.94, ci95=(0.3, 3.0),
                             p_value=0.79, p_adjusted=0.79, significant=False, primary=True, verdict="",
                             cannot_judge=None, n=(3, 3), rank=rank)

    quiet = comp(["opposite directions"])
    assert rank_words(quiet, directions=False) == ""
    assert rank_words(quiet).endswith("the two point opposite ways")
    loud = comp(["rank test only", "opposite directions"])
    assert rank_words(loud, directions=False).startswith("mq-deadline vs none by ranks: +0.7% (Hodges-Lehmann)")


def test_a_startups_heading_names_its_background_once():
    """"py42 beside seq-writers-1 under seq-writers-1" named the load twice (#48 item 9)."""
    doc = _doc([])
    background = {"name": "seq-writers-1", "group": "flood", "description": "", "writes": True, "options": {}}
    workload = {"job": {"name": "py42 beside seq-writers-1"}, "background": background}
    startup = replace(doc, workload=experiment_doc({**_raw(), "workload": workload}).workload)
    assert summary_lines(startup, doc.judgement)[0].startswith("py42 beside seq-writers-1 on loop0, kernel 6.18:")
    cmd = replace(doc, workload=experiment_doc({**_raw(), "workload": {"cmd": "make", **workload}}).workload)
    cmd = replace(cmd, workload=replace(cmd.workload, job=None))
    assert summary_lines(cmd, doc.judgement)[0].startswith("cmd: make under seq-writers-1 on loop0")


@pytest.mark.parametrize(("noise", "said"), [
    (0.1, "until a verdict: none within --max-runs 4, at the noise seen; about --max-runs 30 would decide a 10% "
          "difference"),
    (0.5, "a 10% difference would take about 715 runs per variant, past the most a compare runs (200): quieter runs "
          "first"),
])
def test_until_a_verdict_that_used_every_run_says_so_and_what_would_decide(tree, noise, said):
    outcome, _ = run(compare(tree, Simulation({"bfq": {"iops": 1.0}}, noise=noise, seed=3), until_verdict=4))
    doc = outcome.doc
    lines = summary_lines(doc, doc.judgement)
    assert len(doc.runs) == 8 and doc.judgement.comparisons[0].outcome == "cannot-tell", lines
    (line,) = [ln for ln in lines if "until a verdict" in ln]
    assert said in line, line
    decided, _ = run(compare(tree, Simulation({"bfq": {"iops": 0.5}}, noise=0.02), until_verdict=4))
    assert not [ln for ln in summary_lines(decided.doc, decided.doc.judgement) if "until a verdict" in ln]
