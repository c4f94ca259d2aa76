"""A matrix that stops when it can decide (`--jobs … --until-verdict`): a group-sequential Holm over its cells.

Each cell (a variant against the baseline on one workload) is one hypothesis with its own Pocock-style boundary
(core/statistics/sequential.py): the matrix looks at complete rounds (every workload under every variant once
more), from 4 runs per cell on, and a cell crosses when its Welch p-value falls below the per-look level that
gives that single comparison, over all its looks, a false-positive rate of alpha / k, where k is the number of
cells not yet decided. A cell that decides hands its share of alpha to the others: Holm's step-down, in the
sequentially rejective form of Maurer & Bretz (2013), which keeps the matrix-wide rate at alpha whatever the
correlation between cells (variants of one workload share its baseline runs).

A decided cell takes no more runs; a workload whose cells have all decided stops, baseline included; the rest
go on to `--max-runs`. Decisions are a pure function of the saved runs and the boundary, so `--resume` and
`report` find the same ones. The per-look levels are read from one seeded simulation per look schedule and
saved with the matrix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from iosched.core.documents.document import MatrixDoc, MatrixRunDoc, MatrixSequentialDoc
from iosched.core.statistics.sequential import look_schedule, quantile_level
from iosched.core.statistics.stats import CannotJudge, RatioEstimate, log_ratio_welch


def matrix_sequential_plan(max_per_arm: int, alpha: float, comparisons: int) -> MatrixSequentialDoc:
    """The boundary of a sequential matrix, fixed before the first run: looks (runs per cell) and ``levels[r]``,
    the per-look level once ``r`` cells have decided."""
    looks = look_schedule(max_per_arm)
    if not looks or comparisons < 1:
        raise ValueError("a sequential matrix needs at least 2 runs per cell and one comparison")
    levels = [quantile_level(looks, alpha / (comparisons - r)) for r in range(comparisons)]
    return MatrixSequentialDoc(looks=list(looks), max_per_arm=max_per_arm, alpha=alpha, levels=levels,
                               ci_level=1.0 - quantile_level(looks, 0.05), method="")


@dataclass(frozen=True)
class Decided:
    """A cell that crossed: at which look (runs per cell), with which p-value, under which level."""

    look: int
    p_value: float
    level: float


@dataclass(frozen=True)
class State:
    """Where a sequential matrix stands: its decided cells and the last look reached (0: none yet)."""

    decided: dict[tuple[str, str], Decided]
    last_look: int

    def skips(self, workload: str, variant: str, labels: list[str], round_: int) -> bool:
        """Whether the slot of round ``round_`` (0-based) for this cell is left out: its cell decided at a look
        before that round (the baseline: every cell of its workload did)."""
        if variant != labels[0]:
            d = self.decided.get((workload, variant))
            return d is not None and d.look <= round_
        return all((d := self.decided.get((workload, v))) is not None and d.look <= round_ for v in labels[1:])


def _valid(run: MatrixRunDoc, metric: str) -> float | None:
    x = run.metrics.get(metric)
    if not run.valid or x is None or not math.isfinite(x):
        return None
    return float(x)


def cell_values(doc: MatrixDoc, workload: str, variant: str, metric: str, before_round: int | None) -> list[float]:
    """The valid values of one cell from rounds before ``before_round`` (all rounds: None)."""
    per_round = len(doc.workloads) * len(doc.variants)
    out = []
    for r in doc.runs:
        if r.workload != workload or r.variant != variant:
            continue
        if before_round is not None and r.slot // per_round >= before_round:
            continue
        x = _valid(r, metric)
        if x is not None:
            out.append(x)
    return out


def cell_estimate(doc: MatrixDoc, workload: str, variant: str, metric: str, before_round: int | None,
                  level: float = 0.95) -> RatioEstimate | CannotJudge:
    base = doc.variants[0].label
    return log_ratio_welch(cell_values(doc, workload, base, metric, before_round),
                           cell_values(doc, workload, variant, metric, before_round), level)


def state(doc: MatrixDoc, metric_of: dict[str, str]) -> State:
    """Replay the looks over the finished runs: which cells have decided, and the last look reached."""
    seq = doc.sequential
    assert seq is not None
    workloads = [w.name for w in doc.workloads]
    labels = [v.label for v in doc.variants]
    per_round = len(workloads) * len(labels)
    done = {r.slot for r in doc.runs}
    order = doc.order
    by_cell: dict[tuple[str, str, str], list[tuple[int, float]]] = {}  # (workload, variant, metric): (round, value)
    for r in doc.runs:
        w = r.workload
        if w in metric_of:
            x = _valid(r, metric_of[w])
            if x is not None:
                by_cell.setdefault((w, r.variant, metric_of[w]), []).append((r.slot // per_round, x))

    def upto(w: str, v: str, look: int) -> list[float]:
        return [x for rnd, x in by_cell.get((w, v, metric_of[w]), []) if rnd < look]

    decided: dict[tuple[str, str], Decided] = {}
    last = 0
    cells = len(workloads) * (len(labels) - 1)
    for look in seq.looks:
        if len(decided) == cells:  # every later slot is skipped: no further look is ever reached
            break
        partial = State(decided, last)
        complete = all(s in done or partial.skips(w, v, labels, s // per_round)
                       for s, (w, v) in enumerate(order[: look * per_round]))
        if not complete:
            break
        last = look
        open_ = {}
        for w in workloads:
            for v in labels[1:]:
                if (w, v) not in decided:
                    e = log_ratio_welch(upto(w, labels[0], look), upto(w, v, look))
                    if isinstance(e, RatioEstimate):
                        open_[(w, v)] = e.p_value
        # Holm's step-down at this look: the smallest p first, each against the level its rank earns.
        for cell, p in sorted(open_.items(), key=lambda kv: kv[1]):
            level = seq.levels[len(decided)]
            if p >= level:
                break
            decided[cell] = Decided(look, p, level)
    return State(decided, last)
