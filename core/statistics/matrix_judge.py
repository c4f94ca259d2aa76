"""What a matrix's document keeps of its judgement: one primary metric, each variant against the baseline per
workload, Holm over the matrix.

A matrix of W workloads and V variants makes W x (V - 1) comparisons at once; the one judge (judge.py) estimates
each as an effect ratio (variant / baseline) on the log scale with Welch's t, as a compare's, and corrects the whole
family (Holm), so an A/A matrix comes out "no significant difference" everywhere in at least 1 - alpha of
experiments. Values that admit no honest p-value are "cannot judge" with the reason and take no part in the
correction.
"""

from __future__ import annotations

from dataclasses import replace

from iosched.core.documents.document import (
    CellDoc,
    MatrixDoc,
    MatrixJudgementDoc,
    MatrixSequentialDoc,
    PlanningDoc,
    SecondaryDoc,
)
from iosched.core.statistics.judge import Judgement, judge
from iosched.core.statistics.outcome import MARGIN, decide, equal_interval, standing
from iosched.core.statistics.stats import CannotJudge, RatioEstimate, runs_needed
from iosched.core.statistics.verdict import PLANNING_RATIO


def _compared(cell: CellDoc, e: RatioEstimate | CannotJudge) -> CellDoc:
    """A cell off the baseline with its estimate (not yet corrected: p_adjusted None, not significant)."""
    if isinstance(e, CannotJudge):
        return replace(cell, ratio=None, ci95=None, p_value=None, p_adjusted=None, significant=False,
                       cannot_judge=e.reason)
    return replace(cell, ratio=e.ratio, ci95=(e.ci_low, e.ci_high), p_value=e.p_value, p_adjusted=None,
                   significant=False, cannot_judge=None)


def judge_matrix(doc: MatrixDoc, alpha: float = 0.05, metric: str | None = None,
                 planning: bool = True, margin: float = MARGIN) -> MatrixJudgementDoc:
    """A matrix's judgement: the one judge's (judge.py), as the document keeps it. ``planning=False`` leaves out the
    planning lines (the only costly part; simulations need no words)."""
    return matrix_judgement(doc, judge(doc, alpha, metric), planning, margin)


def matrix_judgement(doc: MatrixDoc, j: Judgement, planning: bool = True,
                     margin: float = MARGIN) -> MatrixJudgementDoc:
    """What a matrix's document keeps of its judgement: cells (workload x variant) with the primary metric's summary,
    the ratio to the baseline, every other metric's mean and ratio, and what an undecided cell would need (its words,
    the summary per variant and the planning lines, are written from them: core/present/worded.py)."""
    base = j.baseline
    others = {(c.workload, c.variant, c.metric): c.estimate for c in j.secondary}
    seq = j.sequential if isinstance(j.sequential, MatrixSequentialDoc) else None
    alpha = seq.alpha if seq is not None else j.alpha
    comparisons = sum(1 for c in j.primary if not isinstance(c.estimate, CannotJudge))
    cells: list[CellDoc] = []
    for cell in j.cells:
        w, v, primary = cell.workload, cell.variant, cell.metric
        secondary = {}
        for key, s in cell.summaries.items():
            if key == primary:
                continue
            entry = SecondaryDoc(mean=s.mean, mean_ci95=s.ci95 if s.n >= 2 else None, n=s.n)
            e = others.get((w, v, key))
            if v != base and isinstance(e, RatioEstimate):
                entry = replace(entry, ratio=e.ratio, ci95=(e.ci_low, e.ci_high))
            secondary[key] = entry
        own = cell.summaries.get(primary)
        out = CellDoc(workload=w, variant=v, baseline=base, metric=primary, primary=True, n=own.n if own else 0,
                      mean=own.mean if own else None, mean_ci95=own.ci95 if own and own.n >= 2 else None,
                      secondary=secondary, geomean=cell.geomean)
        c = j.compared(w, v)
        if c is not None:
            out = _compared(out, c.estimate)
            if isinstance(c.estimate, RatioEstimate) and c.estimate.means is not None:
                out = replace(out, geomean=c.estimate.means[1])  # a cell decided at a look: its runs to it
            if not isinstance(c.estimate, CannotJudge):
                out = replace(out, p_adjusted=c.p_adjusted, significant=c.significant, interval=c.interval,
                              interval_level=c.interval_level)
                if planning and not c.significant:
                    out = replace(out, planning=cell_planning(c.estimate, alpha, comparisons))
            interval = equal_interval(c.estimate, alpha) if isinstance(c.estimate, RatioEstimate) else None
            outcome, reasons = decide(c.significant, isinstance(c.estimate, RatioEstimate), interval, margin,
                                      standing(c.estimate, False, False))
            out = replace(out, decided_at=c.decided_at, verdict="", outcome=outcome, reasons=reasons,
                          equal_interval=interval)
        cells.append(out)
    return MatrixJudgementDoc(
        alpha=alpha, primary_metric=j.metric(doc.primary_metric), baseline=base, comparisons=j.comparisons,
        correction="sequential holm" if seq is not None else "holm", method=None, workloads=j.workloads,
        variants=j.variants, cells=cells, summary=[], planning=[], invalid=[])


def cell_planning(e: RatioEstimate | CannotJudge, alpha: float, comparisons: int) -> PlanningDoc:
    """What an undecided cell would need: runs per variant to detect a 10% difference at its noise, at Holm's first
    step over the whole matrix (alpha / comparisons), 80% power."""
    assert isinstance(e, RatioEstimate)
    n = runs_needed(e.sd_log, PLANNING_RATIO, alpha / max(1, comparisons))
    return PlanningDoc(difference=PLANNING_RATIO - 1.0, noise=e.sd_log, runs=n)
