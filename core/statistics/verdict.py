"""What a compare's (or a live alternation's) document keeps of the one judge's numbers (judge.py), and where a
compare stands while it runs.

What is tested (see docs/statistics.md, "How the verdict is reached"):
- The primary metric (IOPS for fio jobs, wall time for a command, or chosen) of every variant against the
  baseline (the first variant): Welch's t-test on log values (batch runs) or a one-sample t-test on the
  paired log differences, one per block of turns (live alternation). Holm's correction across the variants.
  Under `--until-verdict` the level is the boundary's per-look level (core/statistics/sequential.py).
- Secondary metrics are always shown with their ratio and CI. They may be called significant only through
  a serial gatekeeper: once every primary comparison is significant, Holm across all secondary comparisons;
  their adjusted p-value is the larger of the two, so the whole verdict's false-positive rate stays at alpha.
- Values that admit no honest p-value (fewer than 2 runs, NaN, zero or negative, no variance) give a
  "cannot judge" result with its reason code, and take no part in any correction.

Numbers and reason codes only: a judgement's sentences (each comparison's ``verdict``, the notes, the method) are
written from them by core/present (sentences.py), in the text and at encode time (worded.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from iosched.core.documents.document import (
    AlternationDoc,
    ComparisonDoc,
    ExperimentDoc,
    JudgementDoc,
    PlanningDoc,
    RunDoc,
    SequentialDoc,
    Status,
)
from iosched.core.statistics.judge import (
    Compared,
    Judgement,
    Sample,
    block_log_ratios,
    compared_primary,
    cut_at_last_look,
    estimates_of,
    valid_values,
)
from iosched.core.statistics.judge import judge as the_judge
from iosched.core.statistics.outcome import MARGIN, comparison_outcome
from iosched.core.statistics.stats import CannotJudge, RatioEstimate, detectable_ratio, runs_needed

PLANNING_RATIO = 1.10  # the difference the planning figure is stated for
DETECT_POWER = 0.8  # the power the smallest detectable difference is stated at


def judge(doc: ExperimentDoc, alpha: float = 0.05, primary: str | None = None, status: Status | None = None,
          planning: bool = True, margin: float = MARGIN) -> JudgementDoc:
    """A compare's (or a live alternation's) judgement, from its valid runs (re-judgeable): the one judge's
    (judge.py), as the document keeps it. ``planning=False`` leaves out the planning figure (simulations and a
    fleet's hosts need none)."""
    return judgement_doc(doc, the_judge(doc, alpha, primary), status, planning, margin)


def comparison_doc(c: Compared) -> ComparisonDoc:
    """One comparison as a document holds it: its numbers, and a reason code where it cannot be judged (its words,
    ``verdict``, are written from them: core/present/worded.py)."""
    e = c.estimate
    if isinstance(e, CannotJudge):
        doc = ComparisonDoc(metric=c.metric, baseline=c.baseline, variant=c.variant, ratio=None, ci95=None,
                            p_value=None, p_adjusted=c.p_adjusted, significant=c.significant, primary=c.primary,
                            verdict="", cannot_judge=e.reason, n=None)
    else:
        doc = ComparisonDoc(metric=c.metric, baseline=c.baseline, variant=c.variant, ratio=e.ratio,
                            ci95=(e.ci_low, e.ci_high), p_value=e.p_value, p_adjusted=c.p_adjusted,
                            significant=c.significant, primary=c.primary, verdict="", cannot_judge=None, n=e.n)
    if c.interval is not None and c.interval_level is not None:
        doc = replace(doc, interval=c.interval, interval_level=c.interval_level, family=c.family)
    return replace(doc, rank=c.rank) if c.rank is not None else doc


def judgement_doc(doc: ExperimentDoc, j: Judgement, status: Status | None = None,
                  planning: bool = True, margin: float = MARGIN) -> JudgementDoc:
    """What a compare's document keeps of its judgement: each variant's summaries, the primary metric's
    comparisons, then every other metric's, the runs that disagree, the smallest detectable difference and what a
    10% difference would need."""
    (workload,) = j.workloads
    metric, alpha = j.metric_of[workload], j.alpha
    labels = j.variants
    split = {g.variant for g in j.run_groups if g.metric == metric and g.kind == "two groups"}
    behind = any(r.replay is not None and r.replay.lag_s > r.replay.bound_s for r in doc.runs)
    comps = [comparison_outcome(comparison_doc(c), c.estimate, alpha, margin, bool(split & {c.variant, c.baseline}),
                                behind) for c in j.primary]
    comps += [comparison_doc(c) for c in j.secondary]
    primaries = comps[: len(labels) - 1]
    prim = {c.variant: c.estimate for c in j.primary}
    cancelled = doc.status == "cancelled" or doc.cancelled  # "cancelled": older saves
    undecided = not all(c.significant for c in primaries)
    detectable = (smallest_detectable(primaries, prim, len(labels), alpha, j.alternate)
                  if planning and undecided else None)
    plan = planning_of(doc, prim, alpha, undecided) if planning else None
    return JudgementDoc(alpha=alpha, primary_metric=metric, status="cancelled" if cancelled else (status or "final"),
                        method="", summaries={c.variant: c.summaries for c in j.cells}, comparisons=comps,
                        invalid=[], notes=[], run_groups=j.run_groups, detectable=detectable, planning=plan,
                        left_out=j.left_out, margin=margin)


def planning_of(doc: ExperimentDoc, prim: dict[str, RatioEstimate | CannotJudge], alpha: float,
                undecided: bool) -> PlanningDoc:
    """What a 10% difference would need, at the largest noise among the primary comparisons, at Holm's first step
    (alpha / (variants - 1)); no noise when every comparison was significant or none could be judged."""
    sds = [e.sd_log for e in prim.values() if isinstance(e, RatioEstimate)]
    if not undecided or not sds:
        return PlanningDoc(difference=PLANNING_RATIO - 1.0, noise=None, runs=None)
    sd = max(sds)
    alternate = isinstance(doc, AlternationDoc)
    n = runs_needed(sd, PLANNING_RATIO, alpha / max(1, len(doc.variants) - 1),
                    design="paired" if alternate else "two-sample")
    return PlanningDoc(difference=PLANNING_RATIO - 1.0, noise=sd, runs=n)


def smallest_detectable(primary: Sequence[ComparisonDoc], prim: dict[str, RatioEstimate | CannotJudge], arms: int,
                        alpha: float, paired: bool) -> float | None:
    """The smallest ratio the primary comparisons had 80% power to find, at Holm's first step (alpha / comparisons),
    from the largest noise and the fewest runs among them; None when none could be judged."""
    est = [e for c in primary if isinstance(e := prim[c.variant], RatioEstimate)]
    if not est:
        return None
    n = min(min(e.n) for e in est)
    return detectable_ratio(n, max(e.sd_log for e in est), alpha / max(1, arms - 1), DETECT_POWER,
                            "paired" if paired else "two-sample")


def cmd_metrics_of(doc: ExperimentDoc) -> dict[str, str | None]:
    """The figures read from a command's output (--cmd-metric), in order, and which way each is better."""
    return {m.name: m.better for m in doc.workload.cmd_metrics or []}


# --- while it runs ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InterimEstimate:
    """One variant against the baseline so far: its ratio and interval, or why it cannot be judged yet (a code)."""

    variant: str
    ratio: float | None
    low: float | None
    high: float | None
    reason: str | None = None


@dataclass(frozen=True)
class Standing:
    """Where a compare stands after a run: the complete runs per variant (or blocks) so far, each variant's interim
    estimate at ``level``, and under a boundary its looks and, once crossed, the comparisons at that look."""

    metric: str
    baseline: str
    count: int
    alternate: bool
    level: float
    estimates: tuple[InterimEstimate, ...]
    looks: tuple[int, ...] = ()  # the boundary's (none: fixed runs)
    decided_at: int | None = None
    looked: tuple[ComparisonDoc, ...] = ()  # at the look where it was crossed, with the boundary's intervals


class RunningVerdict:
    """The primary metric so far, as runs or turns end: interim estimates, and the boundary when sequential.

    ``standing()`` never calls a difference significant unless the boundary has been crossed at a planned look (only
    in sequential mode); otherwise its estimates are interim ones, each with its interval.
    """

    def __init__(self, labels: list[str], alpha: float = 0.05, metric: str = "iops", kind: str = "compare",
                 sequential: SequentialDoc | None = None) -> None:
        self.labels = labels
        self.alpha = alpha
        self.metric = metric
        self.sequential = sequential
        self.alternate = kind == "alternate"
        self.runs: list[RunDoc] = []
        self.decided_at: int | None = None
        self._checked: set[int] = set()

    def _sample(self, sequential: SequentialDoc | None = None) -> Sample:
        return Sample(self.labels, self.runs, self.alternate, sequential)

    def _count(self) -> int:
        if self.alternate:
            diffs = block_log_ratios(self._sample(), self.metric)
            return min((len(d) for d in diffs.values()), default=0)
        values = valid_values(self._sample())
        return min(len(values[lb].get(self.metric, [])) for lb in self.labels)

    def _looked(self) -> list[Compared]:
        looked = cut_at_last_look(self._sample(self.sequential), self.metric)
        return compared_primary(looked, self.metric, self.alpha)

    def add(self, run: RunDoc) -> None:
        if self.decided_at is not None:
            return
        self.runs.append(run)
        if self.sequential is None:
            return
        n = self._count()
        if n in self.sequential.looks and n not in self._checked:
            self._checked.add(n)
            if any(c.significant for c in self._looked()):
                self.decided_at = n

    def should_stop(self, run: RunDoc) -> bool:
        """Add a finished run; True once the boundary is crossed (always False in fixed-n mode)."""
        self.add(run)
        return self.decided_at is not None

    def add_and_continue(self, run: RunDoc) -> bool:
        """Fixed-n: record the run for the interim estimates; never stops the experiment."""
        self.add(run)
        return False

    @property
    def decided(self) -> bool:
        return self.decided_at is not None

    @property
    def count(self) -> int:
        """Complete runs per variant (or blocks of turns) so far."""
        return self._count()

    def _level(self) -> float:
        """The interim intervals' confidence: Bonferroni's over the variants (95% for one comparison), as the final
        verdict's intervals are when it finds nothing, so the last interim estimate and the verdict agree."""
        base = self.sequential.ci_level if self.sequential is not None else 0.95
        return 1.0 - (1.0 - base) / max(1, len(self.labels) - 1)

    def standing(self) -> Standing:
        """Where the compare stands now: no estimate under two runs (or blocks) each."""
        n, level = self._count(), self._level()
        estimates: tuple[InterimEstimate, ...] = ()
        if n >= 2:
            estimates = tuple(InterimEstimate(v, e.ratio, e.ci_low, e.ci_high) if isinstance(e, RatioEstimate)
                              else InterimEstimate(v, None, None, None, e.reason)
                              for v, e in estimates_of(self._sample(), self.metric, level).items())
        looked = tuple(comparison_doc(c) for c in self._looked()) if self.decided_at is not None else ()
        looks = tuple(self.sequential.looks) if self.sequential is not None else ()
        return Standing(self.metric, self.labels[0], n, self.alternate, level, estimates, looks, self.decided_at,
                        looked)


def sequential_plan(max_per_arm: int, alpha: float, arms: int, alternate: bool) -> SequentialDoc:
    """The boundary for `--until-verdict`, fixed before the first run and saved with the experiment.

    ``max_per_arm`` counts runs per variant (batch: looks at 4, 6, 8 ...) or, with ``alternate``, blocks of
    two passes (looks at every block from the third). Its ``method`` is written from the design
    (core/present/sentences.py ``sequential_method``).
    """
    from iosched.core.statistics.sequential import look_schedule, pocock_level

    design: Literal["paired", "two-sample"] = "paired" if alternate else "two-sample"
    looks = look_schedule(max_per_arm, first=3, step=1) if alternate else look_schedule(max_per_arm)
    if not looks:
        raise ValueError("a sequential experiment needs at least 2 runs per variant")
    level = pocock_level(looks, alpha, arms, design)
    # The interval that goes with one comparison under the same boundary: 95% over all looks together.
    ci_alpha = pocock_level(looks, 0.05, 2, design)
    return SequentialDoc(looks=list(looks), max_per_arm=max_per_arm, alpha=alpha, level=level,
                         ci_level=1.0 - ci_alpha, design=design, method="")
