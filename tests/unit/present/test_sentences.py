"""Every sentence the result pages write about a difference agrees with the interval beside it: none says "no
significant difference" (or "no difference we could see") beside an interval that leaves out no change unless it
says that interval is before correction; none calls a difference significant beside one that holds it unless it
says so. Over generated judgements: compare's comparisons (primary and secondary, old files' bare 95% CI), the
summary's verdict lines, the details page, the judge's own (--json), a matrix's page and cells, the fleet's
pooled rows and a fleet matrix's cells."""

from __future__ import annotations

import math
import random
import re
from dataclasses import replace

from doc_support import experiment_doc, matrix_doc, run_doc
from hypothesis import given, settings
from hypothesis import strategies as st

from iosched.core.documents.document import CellVerdictDoc, ComparisonDoc, ExperimentDoc, MatrixDoc, PooledRowDoc
from iosched.core.present.fleet_report import cell_sentence
from iosched.core.present.matrix import matrix_text
from iosched.core.present.report import text_report
from iosched.core.present.sentences import Shown, comparison_sentence, pooled_sentence, shown_interval
from iosched.core.present.summary import no_difference, summary_lines
from iosched.core.statistics.matrix_judge import judge_matrix
from iosched.core.statistics.verdict import judge

NOTHING = ("no significant difference", "no difference we could see")
METRICS = ["iops", "mb_s", "clat_p99_us", "cpu_us_per_io", "fg:clat_p50_us", "bg:mb_s", "wall_s"]
ratios = st.floats(0.02, 50.0)


@st.composite
def comparisons(draw: st.DrawFn, variant: str | None = None) -> ComparisonDoc:
    """A comparison as a judgement (of today, or an older file's without its own interval) may hold it: the
    interval around the ratio at any level, significance not tied to it (a secondary's is before correction)."""
    ratio = draw(ratios)
    low = ratio / draw(st.floats(1.0, 20.0))
    high = ratio * draw(st.floats(1.0, 20.0))
    primary = draw(st.booleans())
    own = draw(st.booleans())  # a judgement of today: an interval of its own, its level, its family
    level = draw(st.sampled_from([0.95, 0.975, 0.9833, 0.99, 0.995]))
    p = draw(st.floats(0.0, 1.0))
    return ComparisonDoc(metric=draw(st.sampled_from(METRICS)), baseline="none",
                         variant=variant or draw(st.sampled_from(["bfq", "kyber", "mq-deadline"])),
                         ratio=ratio, ci95=(ratio / draw(st.floats(1.0, 20.0)), ratio * draw(st.floats(1.0, 20.0))),
                         p_value=p, p_adjusted=min(1.0, p * draw(st.floats(1.0, 10.0))),
                         significant=draw(st.booleans()), primary=primary, verdict="", cannot_judge=None, n=(3, 3),
                         interval=(low, high) if own else None, interval_level=level if own else None,
                         family=draw(st.integers(1, 40)) if own else None)


def _ends(sentence: str) -> list[tuple[float, float]]:
    """The intervals a sentence shows, as ratios: "(95% CI -53% to -30%)" and "(95% CI 15–63%)" (fewer/more)."""
    found = []
    for lo, hi in re.findall(r"CI ([-+]\d+(?:\.\d+)?)% to ([-+]\d+(?:\.\d+)?)%", sentence):
        found.append((1 + float(lo) / 100, 1 + float(hi) / 100))
    for word, lo, hi in re.findall(r"(\w+) [^()]*\((?:\d+(?:\.\d+)?)% CI (\d+(?:\.\d+)?)–(\d+(?:\.\d+)?)%\)", sentence):
        sign = -1 if word in ("fewer", "lower", "less") else 1
        found.append(tuple(sorted((1 + sign * float(lo) / 100, 1 + sign * float(hi) / 100))))  # type: ignore[arg-type]
    return found


def holds_consistent(sentence: str, shown: Shown) -> None:
    """The rule (core/present/sentences.py) for one sentence and the interval it shows."""
    says_nothing = any(w in sentence for w in NOTHING)
    if says_nothing and not shown.holds_no_change:
        assert "before correct" in sentence, sentence
    if says_nothing and shown.holds_no_change:  # and the interval printed holds it too
        assert all(lo <= 1.0 <= hi for lo, hi in _ends(sentence)), sentence
    if "not significant after" in sentence:
        assert not shown.holds_no_change and "before correct" in sentence, sentence
    if "significant after correction" in sentence:
        assert shown.holds_no_change and "this interval holds no change" in sentence, sentence
    if not says_nothing and "significant" not in sentence and "cannot judge" not in sentence:
        # Called a difference in words ("44% fewer IOPS than none"): its interval is on one side of 1.
        assert not shown.holds_no_change, sentence


@settings(max_examples=400, deadline=None)
@given(comparisons(), st.sampled_from([None, "higher", "lower"]), st.sampled_from([None, True, False]))
def test_a_comparison_sentence_never_says_nothing_beside_an_interval_that_leaves_out_no_change(c, better, adjusted):
    shown = shown_interval(c)
    assert shown is not None
    for p_value in (True, False):
        sentence = comparison_sentence(c, better, adjusted, p_value)
        holds_consistent(sentence, shown)


@settings(max_examples=200, deadline=None)
@given(st.lists(comparisons(), min_size=1, max_size=3, unique_by=lambda c: c.variant), st.booleans())
def test_the_summarys_no_difference_lines_follow_the_same_rule(same, alone):
    same = [c for c in same if not c.significant] or [same[0]]
    lines = no_difference(same, same[0].metric, alone)
    assert lines
    for line in lines:
        if not any(w in line for w in NOTHING):
            continue
        mentioned = [c for c in same if f"{c.variant} " in line]
        for c in mentioned:
            shown = shown_interval(c)
            assert shown is not None
            if not shown.holds_no_change:
                assert "before correct" in line, line


@st.composite
def pooled_rows(draw: st.DrawFn) -> PooledRowDoc:
    ratio = draw(ratios)
    return PooledRowDoc(variant="bfq", skipped=[], ratio=ratio, ci_low=ratio / draw(st.floats(1.0, 20.0)),
                        ci_high=ratio * draw(st.floats(1.0, 20.0)), p_adjusted=draw(st.floats(0.0, 1.0)),
                        sentence="")


@settings(max_examples=300, deadline=None)
@given(pooled_rows(), st.sampled_from(METRICS), st.sampled_from([0.01, 0.05, 0.1]), st.integers(1, 12))
def test_a_pooled_sentence_and_a_fleet_cells_follow_the_same_rule(row, metric, alpha, family):
    assert row.ci_low is not None and row.ci_high is not None and row.p_adjusted is not None
    shown = Shown(row.ci_low, row.ci_high, 0.95, False)
    holds_consistent(pooled_sentence(row, metric, "none", alpha, family), shown)
    cell = CellVerdictDoc(job="randread-q16t2", metric=metric, baseline="none", variant="bfq", ratio=row.ratio,
                          ci_low=row.ci_low, ci_high=row.ci_high, p_adjusted=row.p_adjusted,
                          significant=row.p_adjusted < alpha, sentence="")
    holds_consistent(cell_sentence(cell, alpha, family), shown)


def test_the_issues_sentence_is_written_as_what_holds():
    """"bfq vs none: no significant difference in MB/s: -42% (95% CI -53% to -30%), adjusted p=0.08" was the
    sentence: its interval before correction, its p-value after. Now it says which is which."""
    c = ComparisonDoc(metric="mb_s", baseline="none", variant="bfq", ratio=0.58, ci95=(0.47, 0.70), p_value=0.008,
                      p_adjusted=0.08, significant=False, primary=False, verdict="", cannot_judge=None, n=(3, 3),
                      interval=(0.47, 0.70), interval_level=0.95, family=10)
    assert comparison_sentence(c) == ("bfq vs none, MB/s: -42% before correcting for 10 comparisons (95% CI -53% to "
                                      "-30%); not significant after, adjusted p=0.08")


@st.composite
def judged(draw: st.DrawFn) -> ExperimentDoc:
    """A compare of 2-3 variants, 2-5 runs each, judged as `compare` judges one: effects from none to several-fold
    on each metric, noise from 1% to 60%, so comparisons land on every side of the correction."""
    labels = ["none", "mq-deadline", "bfq"][: draw(st.integers(2, 3))]
    n = draw(st.integers(2, 5))
    base = {"iops": 150e3, "mb_s": 600.0, "clat_mean_us": 210.0, "clat_p99_us": 900.0, "cpu_us_per_io": 18.0}
    effect = {(lb, k): draw(st.floats(0.3, 3.0)) if lb != labels[0] else 1.0 for lb in labels for k in base}
    noise = draw(st.floats(0.01, 0.6))
    seed = draw(st.integers(0, 2**32 - 1))
    rnd = random.Random(seed)
    runs = []
    for i in range(n * len(labels)):
        lb = labels[i % len(labels)]
        m = {k: v * effect[(lb, k)] * math.exp(rnd.gauss(0.0, noise)) for k, v in base.items()}
        runs.append({"index": i, "variant": lb, "metrics": m})
    doc = experiment_doc({"variants": [{"label": lb} for lb in labels], "runs": runs, "repeat": n, "kind": "compare",
                          "order": [r["variant"] for r in runs], "device": {"name": "loop0"}, "kernel": "6.18",
                          "workload": {"job": {"name": "randread-q16t2"}}})
    return replace(doc, judgement=judge(doc, alpha=draw(st.sampled_from([0.01, 0.05, 0.1]))))


def no_nothing_beside_an_interval_without_no_change(line: str) -> None:
    if any(w in line for w in NOTHING) and "before correct" not in line:
        assert all(lo <= 1.0 <= hi for lo, hi in _ends(line)), line


@settings(max_examples=60, deadline=None)
@given(judged())
def test_every_line_of_a_judged_compare_holds_the_rule(doc):
    """The judge's own sentences (--json's `verdict`), the summary and the details page, on judged runs."""
    j = doc.judgement
    assert j is not None
    for c in j.comparisons:
        no_nothing_beside_an_interval_without_no_change(c.verdict)
        if not c.significant and c.ratio is not None and any(w in c.verdict for w in NOTHING):
            assert _ends(c.verdict), c.verdict  # it shows the interval it speaks of
    for line in [*summary_lines(doc, j), *text_report(doc, j, details=True).splitlines()]:
        no_nothing_beside_an_interval_without_no_change(line)


@st.composite
def judged_matrix(draw: st.DrawFn) -> MatrixDoc:
    """A matrix of 2-4 workloads x 2-3 variants, 2-4 runs a cell, judged as `compare --jobs` judges one."""
    labels = ["none", "mq-deadline", "bfq"][: draw(st.integers(2, 3))]
    names = [f"w{k}" for k in range(draw(st.integers(2, 4)))]
    n = draw(st.integers(2, 4))
    effect = {(w, lb): draw(st.floats(0.3, 3.0)) if lb != labels[0] else 1.0 for w in names for lb in labels}
    noise = draw(st.floats(0.01, 0.6))
    rnd = random.Random(draw(st.integers(0, 2**32 - 1)))
    runs = []
    for _ in range(n):
        for w in names:
            for lb in labels:
                m = {k: v * effect[(w, lb)] * math.exp(rnd.gauss(0.0, noise))
                     for k, v in (("iops", 150e3), ("clat_p99_us", 900.0))}
                runs.append({"slot": len(runs), "workload": w, "variant": lb, "metrics": m})
    doc = matrix_doc({"variants": [{"label": lb} for lb in labels], "runs": runs, "repeat": n,
                      "workloads": [{"name": w} for w in names]})
    return replace(doc, judgement=judge_matrix(doc, alpha=draw(st.sampled_from([0.01, 0.05, 0.1]))))


@settings(max_examples=40, deadline=None)
@given(judged_matrix())
def test_every_line_of_a_judged_matrix_holds_the_rule(doc):
    """A matrix's cells' sentences (--json's), and its page: a sentence with no interval says nothing the table
    beside it contradicts, since a cell's interval carries the matrix's correction (* exactly when it leaves out 1)."""
    j = doc.judgement
    assert j is not None
    for c in j.cells:
        if c.verdict is not None:
            no_nothing_beside_an_interval_without_no_change(c.verdict)
        if not c.is_baseline and c.interval is not None:
            assert c.significant == (not c.interval[0] <= 1.0 <= c.interval[1]), c
    for line in matrix_text(doc, j).splitlines():
        no_nothing_beside_an_interval_without_no_change(line)


def test_an_interim_interval_too_wide_to_draw_says_so():
    """"so far: bfq -53% (-100 to +157449023876870880)" (#48 item 2): an interval past ×100 either way is not a
    number a reader can use, on the live line as on the run lines."""
    from iosched.core.present.sentences import interim_lines, interim_words
    from iosched.core.statistics.verdict import RunningVerdict

    rv = RunningVerdict(["none", "bfq"])
    for label, x in (("none", 100.0), ("bfq", 1.0), ("none", 101.0), ("bfq", 90.0)):
        rv.add(run_doc({"variant": label, "metrics": {"iops": x}}))
    standing = rv.standing()
    (estimate,) = standing.estimates
    assert estimate.high is not None and estimate.high > 1e6  # two runs a side this far apart: an absurd interval
    (line,) = interim_lines(standing)
    assert line.endswith("(95% CI too wide to say yet)") and line.startswith("interim, 2 runs per variant: bfq vs")
    words = interim_words(standing)
    assert words.startswith("so far: bfq -") and words.endswith("(too wide to say yet)")
    assert not re.search(r"\d{5}", line + words)
