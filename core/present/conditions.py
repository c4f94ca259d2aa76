"""What a result was measured under, in words: the machine and device beyond their names, the fill level, and the
wait for steady state with the runs that did not reach it (kept, marked: the reader judges them). Shared by the
compare's summary and details, the matrix's table, the advice and its markdown, and the progress lines."""

from __future__ import annotations

from collections.abc import Sequence

from iosched.core.documents.document import MatrixRunDoc, RunDoc
from iosched.core.load.conditions import ConditionsDoc

MAX_LISTED = 3  # runs that did not reach steady state, named one by one before "and N more"


def measured_on(conditions: ConditionsDoc | None, kernel: str) -> list[str]:
    """"measured on: loop0 (…) on Intel Xeon, kernel 6.18; loop0 (256 MiB) filled to 50.0% (…)"; nothing for a
    result saved before conditions were kept."""
    if conditions is None:
        return []
    head, *rest = conditions.words()
    lines = [f"measured on: {head}, kernel {kernel}" + "".join(f"; {w}" for w in rest if not w.startswith("each run"))]
    return lines


def run_name(run: RunDoc) -> str:
    where = f"{run.workload} · {run.variant}" if isinstance(run, MatrixRunDoc) else run.variant
    return f"run {run.index + 1} ({where})"


def steady_lines(conditions: ConditionsDoc | None, runs: Sequence[RunDoc]) -> list[str]:
    """Whether each run's wait reached steady state: how many did, and the ones that did not, by name."""
    wait = conditions.steady if conditions is not None else None
    waited = [r for r in runs if r.steady is not None]
    if wait is None or not waited:
        return []
    missed = [r for r in waited if r.steady is not None and not r.steady.reached]
    lines = [f"steady state: each run waited for {wait.words()}: reached before {len(waited) - len(missed)} of "
             f"{len(waited)} runs" + ("" if not missed else "; the others are kept, marked:")]
    for r in missed[:MAX_LISTED]:
        assert r.steady is not None
        lines.append(f"  {run_name(r)}: {r.steady.sentence()}")
    if len(missed) > MAX_LISTED:
        lines.append(f"  and {len(missed) - MAX_LISTED} more runs (--json: each run's steady)")
    return lines


def summary_condition_lines(conditions: ConditionsDoc | None, runs: Sequence[RunDoc]) -> list[str]:
    """What a summary says of them: the fill level (it changes what an SSD measures) and the wait's misses."""
    fill = [f"fill: {conditions.fill.words()}"] if conditions is not None and conditions.fill is not None else []
    return [*fill, *steady_lines(conditions, runs)]


def condition_lines(conditions: ConditionsDoc | None, kernel: str, runs: Sequence[RunDoc]) -> list[str]:
    """Every line above: the machine, the fill, the wait and its misses."""
    return [*measured_on(conditions, kernel), *steady_lines(conditions, runs)]


def steady_mark(run: RunDoc) -> str:
    """A progress line's mark for a run whose wait did not reach steady state ("" otherwise)."""
    if run.steady is None or run.steady.reached:
        return ""
    return f"  NOT STEADY: {run.steady.sentence()}"
