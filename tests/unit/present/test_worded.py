"""A document's sentence fields are written once, by the one writer (core/present/worded.py): a judgement fresh from
the judges holds numbers and reason codes only; worded, every field is filled from them, the same sentences the text
pages print (a saved file holds them and reads back with them: test_result_file.py)."""

from __future__ import annotations

import random
from dataclasses import replace

from doc_support import experiment_doc, matrix_doc

from iosched.core.present.matrix import matrix_text
from iosched.core.present.report import text_report
from iosched.core.present.worded import worded
from iosched.core.statistics.matrix_judge import judge_matrix
from iosched.core.statistics.verdict import judge

LABELS = ["none", "bfq"]


def _compare():
    rnd = random.Random(5)
    runs = [{"variant": lb, "metrics": {"iops": (100e3 if lb == "none" else 60e3) * rnd.uniform(0.95, 1.05),
                                        "clat_p99_us": 900.0 * rnd.uniform(0.9, 1.1)}}
            for _ in range(3) for lb in LABELS]
    doc = experiment_doc({"kind": "compare", "variants": [{"label": lb} for lb in LABELS], "runs": runs,
                          "workload": {"job": {"name": "4k-randread"}}, "device": {"name": "loop0"}})
    return replace(doc, judgement=judge(doc))


def test_a_fresh_judgement_holds_numbers_and_worded_it_holds_the_pages_sentences():
    doc = _compare()
    assert doc.judgement is not None and doc.judgement.method == ""
    assert all(c.verdict == "" for c in doc.judgement.comparisons)
    said = worded(doc)
    assert said.judgement is not None and said.judgement.method.startswith("Welch")
    primary = next(c for c in said.judgement.comparisons if c.primary)
    assert primary.verdict.startswith("bfq: ") and primary.ratio == next(
        c for c in doc.judgement.comparisons if c.primary).ratio  # the numbers as they were
    assert primary.verdict in text_report(doc, doc.judgement, details=True)  # the one writer, on the page too
    assert worded(said) == said


def test_a_matrix_cells_and_summary_are_worded_as_its_page_prints_them():
    runs = [{"slot": i, "workload": "4k-read", "variant": lb,
             "metrics": {"iops": (100e3 if lb == "none" else 50e3) * (1 + 0.01 * (i % 3))}}
            for i, lb in enumerate(LABELS * 3)]
    doc = matrix_doc({"variants": [{"label": lb} for lb in LABELS], "workloads": [{"name": "4k-read"}],
                      "runs": runs, "repeat": 3})
    j = judge_matrix(doc)
    assert j.summary == [] and all(c.verdict in ("", None) for c in j.cells)
    said = worded(replace(doc, judgement=j)).judgement
    assert said is not None and said.summary and said.summary[0].startswith("bfq: fewer IOPS")
    page = matrix_text(doc, j)
    assert all(line in page for line in said.summary)
