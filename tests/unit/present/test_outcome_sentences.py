"""The three outcomes in words, one writer for every page (core/present/sentences.py ``outcome_sentence``): a
matrix's cells and its sentence per variant, a fleet's pooled rows and a fleet matrix's cells say "equal within" or
"cannot tell" as compare's summary does, never "no significant difference" (an older file's words, kept for a file
judged before outcomes); and the margin is named as the band it is on the log scale, -9.1% to +10% for 10%."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest
from doc_support import matrix_doc
from hypothesis import given, settings
from hypothesis import strategies as st
from saved_support import saved

from iosched.core.documents.document import ComparisonDoc, PooledRowDoc
from iosched.core.documents.saved import read_fleet_matrix
from iosched.core.present.fleet_report import matrix_lines
from iosched.core.present.sentences import margin_text, pooled_sentence
from iosched.core.present.summary import no_difference
from iosched.core.present.worded import worded_matrix_judgement
from iosched.core.statistics.fleet_verdict import matrix_pooled
from iosched.core.statistics.matrix_judge import judge_matrix
from iosched.core.statistics.outcome import decide

BAND = "-9.1% to +10%"


def test_a_10pct_margin_is_named_as_the_band_it_holds():
    assert margin_text(0.10) == BAND
    assert margin_text(0.10, "higher") == "+10%" and margin_text(0.10, "lower") == "-9.1%"
    assert margin_text(0.10, "lower", minus="−") == "−9.1%"
    assert margin_text(0.20) == "-17% to +20%"


@settings(max_examples=200, deadline=None)
@given(st.floats(0.01, 0.9))
def test_the_band_s_ends_are_where_equal_turns_to_cannot_tell(margin):
    """The words' ends are the outcome's: an interval just inside the printed ends is equal, one that reaches past
    either (by more than the rounding of the words) is not."""
    low, high = (1.0 + float(x.rstrip("%")) / 100.0 for x in margin_text(margin).split(" to "))
    slack = 0.0006 if margin * 100 < 9.95 else 0.006  # the words round to 0.1% below 10%, to 1% above
    assert low == pytest.approx(1.0 / (1.0 + margin), abs=slack) and high == pytest.approx(1.0 + margin, abs=slack)
    inside = (1.0 / (1.0 + margin) * 1.0001, (1.0 + margin) / 1.0001)
    assert decide(False, True, inside, margin, [])[0] == "equal"
    assert decide(False, True, (low - slack * 2, 1.0), margin, [])[0] == "cannot-tell"


def _compare(interval: tuple[float, float], outcome: str, reasons: list[str]) -> ComparisonDoc:
    return ComparisonDoc(metric="clat_p99_us", baseline="none", variant="bfq", ratio=0.97, ci95=(0.85, 1.1),
                         p_value=0.5, p_adjusted=0.5, significant=False, primary=True, verdict="", cannot_judge=None,
                         n=(4, 4), interval=(0.85, 1.1), interval_level=0.95, family=1, outcome=outcome,  # type: ignore[arg-type]
                         reasons=reasons, equal_interval=interval)  # type: ignore[arg-type]


def test_compare_s_cannot_tell_names_the_band_it_reaches_outside():
    """"(90% CI -9.5% to +3.9%) spans past ±10%" read as false: -9.5% is inside ±10%, yet outside 1 / 1.1."""
    (line,) = no_difference([_compare((0.905, 1.039), "cannot-tell", ["too-wide"])], "clat_p99_us", alone=True)
    assert line == ("bfq vs none: cannot tell in p99 latency: -3.0% (90% CI -9.5% to +3.9%) reaches outside "
                    f"{BAND}"), line
    (line,) = no_difference([_compare((0.93, 1.04), "equal", [])], "clat_p99_us", alone=True)
    assert line == f"bfq vs none: equal within {BAND} in p99 latency: -3.0% (90% CI -7.0% to +4.0%)", line


def _matrix(noise: float, effect: float = 1.0, seed: int = 7):
    rnd = random.Random(seed)
    runs = []
    for _ in range(6):
        for w in ("w0", "w1"):
            for lb in ("none", "bfq"):
                x = 150e3 * (effect if lb == "bfq" else 1.0) * math.exp(rnd.gauss(0.0, noise))
                runs.append({"slot": len(runs), "workload": w, "variant": lb, "metrics": {"iops": x}})
    doc = matrix_doc({"variants": [{"label": "none"}, {"label": "bfq"}], "runs": runs, "repeat": 6,
                      "workloads": [{"name": "w0"}, {"name": "w1"}]})
    j = judge_matrix(doc)
    return worded_matrix_judgement(doc, j)


def test_a_matrix_s_cells_and_summary_say_equal_within_the_band():
    j = _matrix(noise=0.005)
    cells = [c for c in j.cells if not c.is_baseline]
    assert [c.outcome for c in cells] == ["equal", "equal"]
    for c in cells:
        assert c.verdict is not None and c.verdict.startswith(f"{c.workload}: bfq vs none: equal within {BAND} in "
                                                              "IOPS: "), c.verdict
        assert "(90% CI " in c.verdict and "significant" not in c.verdict
    assert j.summary == [f"bfq: equal within {BAND} in IOPS on 2 of 2 workloads"]


def test_a_matrix_s_cells_and_summary_say_cannot_tell_where_the_interval_is_wide():
    j = _matrix(noise=0.4)
    cells = [c for c in j.cells if not c.is_baseline]
    assert {c.outcome for c in cells} == {"cannot-tell"}
    for c in cells:
        assert c.verdict is not None and f"reaches outside {BAND}" in c.verdict and "cannot tell in IOPS" in c.verdict
        assert "no significant difference" not in c.verdict
    assert j.summary == ["bfq: cannot tell in IOPS on 2 of 2 workloads"]


def test_a_matrix_s_summary_counts_each_outcome_beside_the_differences():
    j = _matrix(noise=0.005)
    cells = [replace(c, significant=True, outcome="differs", ratio=0.8) if c.workload == "w0" and not c.is_baseline
             else c for c in j.cells]
    from iosched.core.present.sentences import variant_sentence

    assert variant_sentence(cells, "bfq") == f"bfq: fewer IOPS on 1 of 2 workloads (−20%); equal within {BAND} on 1"
    old = [replace(c, outcome=None) for c in j.cells]  # a file judged before outcomes: as it was said
    assert variant_sentence(old, "bfq") == "bfq: no significant difference in IOPS on 2 of 2 workloads"


def _row(outcome: str | None, interval: tuple[float, float] | None, reasons: list[str]) -> PooledRowDoc:
    return PooledRowDoc(variant="bfq", skipped=[], ratio=1.01, ci_low=0.9, ci_high=1.13, p_adjusted=0.7,
                        outcome=outcome, reasons=reasons, equal_interval=interval, sentence="")  # type: ignore[arg-type]


def test_a_pooled_row_says_its_outcome_as_compare_does():
    equal = pooled_sentence(_row("equal", (0.95, 1.07), []), "iops", "none", 0.05, 2)
    assert equal == f"bfq vs none over the hosts: equal within {BAND} in IOPS: +1.0% (90% CI -5.0% to +7.0%)"
    wide = pooled_sentence(_row("cannot-tell", (0.92, 1.11), ["too-wide"]), "iops", "none", 0.05, 2)
    assert wide == ("bfq vs none over the hosts: cannot tell in IOPS: +1.0% (90% CI -8.0% to +11%) reaches outside "
                    f"{BAND}")
    old = pooled_sentence(_row(None, None, []), "iops", "none", 0.05, 2)  # an older file's row
    assert old.startswith("bfq vs none: no significant difference over the hosts: +1.0% (95% CI")


def test_a_fleet_matrix_s_cells_say_their_pooled_row_s_outcome():
    matrix = read_fleet_matrix(saved("fleet_matrix"), "m.json")
    fleets, pooled = matrix_pooled(matrix.fleets, 0.05, None)
    lines = matrix_lines(replace(matrix, fleets=fleets, pooled=pooled))
    at = lines.index(next(line for line in lines if line.startswith("the matrix:")))
    cells = lines[at + 1:]
    assert cells and not any("no significant difference" in line for line in cells), cells
    assert all(" than none " in line or "equal within" in line or "cannot tell in" in line for line in cells), cells
