"""Plan before running (`compare --plan`): a short pilot's noise, and the runs a difference of 10%, 20% or 30%
would need at it.

The pilot is two runs per variant in the usual balanced order: the smallest number that shows run-to-run
noise. Its noise is the pooled standard deviation of the primary metric's log values within each variant (the
scale the verdict's test works on); the runs needed are ``runs_needed`` at that noise, at the first step of
Holm's correction (alpha over the comparisons with the baseline), for 80% power. A pilot of two runs estimates
noise loosely (a 95% interval for a standard deviation from a few degrees of freedom spans several times), so
the figures are a first guess to choose by, said as such, and ``--until-verdict`` is the way to stop once the
data allow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from iosched.core.documents.document import ExperimentDoc
from iosched.core.statistics.stats import runs_needed

PILOT_RUNS = 2  # per variant
DIFFERENCES = (0.10, 0.20, 0.30)


@dataclass(frozen=True, kw_only=True)
class PlanRow:
    """What one difference would need: runs per variant, runs in all and minutes (None: no practical number)."""

    difference: float
    runs_per_variant: int | None
    runs: int | None
    minutes: float | None


@dataclass(frozen=True, kw_only=True)
class PilotPlan:
    """The pilot's noise and what each difference would need at it (`compare --plan`, and its `--json`)."""

    metric: str
    noise_sd_log: float | None
    df: int
    variants: int
    alpha: float
    seconds_per_run: float | None
    rows: list[PlanRow]


def pilot_noise(doc: ExperimentDoc, metric: str) -> tuple[float | None, int]:
    """The pooled within-variant standard deviation of log(metric) over the valid runs, and its degrees of
    freedom; None when no variant has two positive values."""
    by_variant: dict[str, list[float]] = {}
    for r in doc.runs:
        x = r.metrics.get(metric)
        if r.valid and x is not None and x > 0 and math.isfinite(x):
            by_variant.setdefault(r.variant, []).append(math.log(x))
    ss, df = 0.0, 0
    for xs in by_variant.values():
        if len(xs) >= 2:
            mean = sum(xs) / len(xs)
            ss += sum((x - mean) ** 2 for x in xs)
            df += len(xs) - 1
    if df == 0:
        return None, 0
    return math.sqrt(ss / df), df


def seconds_per_run(doc: ExperimentDoc) -> float | None:
    """What one run took in the pilot, settling and switching included."""
    runs = doc.runs
    if not runs:
        return None
    span = runs[-1].end - runs[0].start
    return span / len(runs) if span > 0 else None


def plan(doc: ExperimentDoc, metric: str, alpha: float = 0.05) -> PilotPlan:
    """The pilot's noise and, per difference, the runs per variant, all runs and minutes it would take."""
    sd, df = pilot_noise(doc, metric)
    k = len(doc.variants)
    per_run = seconds_per_run(doc)
    rows = []
    for d in DIFFERENCES:
        n = runs_needed(sd, 1.0 + d, alpha / max(1, k - 1)) if sd is not None else None
        rows.append(PlanRow(difference=d, runs_per_variant=n, runs=None if n is None else n * k,
                            minutes=None if n is None or per_run is None else n * k * per_run / 60.0))
    return PilotPlan(metric=metric, noise_sd_log=sd, df=df, variants=k, alpha=alpha, seconds_per_run=per_run,
                     rows=rows)
