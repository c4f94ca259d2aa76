"""Judging a matrix: one primary metric, each variant against the baseline per workload, Holm over the matrix.

A matrix of W workloads and V variants makes W x (V - 1) comparisons at once; each is an effect ratio
(variant / baseline) estimated on the log scale with Welch's t (core/statistics/stats.py log_ratio_welch, as a single
experiment's verdict), and the whole family is Holm-adjusted so an A/A matrix comes out "no significant
difference" everywhere in at least 1 - alpha of experiments. Values that admit no honest p-value are
"cannot judge" with the reason and take no part in the correction.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from iosched.core.documents.document import (
    CatalogJobDoc,
    CellDoc,
    CmdJobSpec,
    CompareDoc,
    ExperimentDoc,
    MatrixDoc,
    MatrixJudgementDoc,
    MatrixRunDoc,
    MatrixSequentialDoc,
    SecondaryDoc,
)
from iosched.core.documents.metrics import metric_words
from iosched.core.statistics.holm_intervals import LogComparison, holm_intervals
from iosched.core.statistics.matrix_sequential import METHOD, cell_estimate, state
from iosched.core.statistics.stats import CannotJudge, RatioEstimate, holm, log_ratio_welch, runs_needed, summarize
from iosched.core.statistics.verdict import (
    PLANNING_RATIO,
    agreeing_interval,
    effect_words,
    fmt_p,
    level_text,
    summary_doc,
)

Estimates = dict[tuple[str, str], RatioEstimate | CannotJudge]


def _pct(r: float) -> str:
    return f"{(r - 1) * 100:+.0f}%".replace("-", "−")


def primaries(doc: MatrixDoc, metric: str | None = None) -> dict[str, str]:
    """Workload -> the metric its cells are judged on: ``metric`` when named, else the workload's own (a contention
    job names its own: ``primary_metrics``), else the matrix's."""
    default: str = metric or doc.primary_metric or "iops"
    own: dict[str, str] = {} if metric else (doc.primary_metrics or {})
    return {w.name: own.get(w.name) or default for w in doc.workloads}


def _compared(cell: CellDoc, e: RatioEstimate | CannotJudge) -> CellDoc:
    """A cell off the baseline with its estimate (not yet corrected: p_adjusted None, not significant)."""
    if isinstance(e, CannotJudge):
        return replace(cell, ratio=None, ci95=None, p_value=None, p_adjusted=None, significant=False,
                       cannot_judge=e.reason)
    return replace(cell, ratio=e.ratio, ci95=(e.ci_low, e.ci_high), p_value=e.p_value, p_adjusted=None,
                   significant=False, cannot_judge=None)


def judge_matrix(doc: MatrixDoc, alpha: float = 0.05, metric: str | None = None,
                 planning: bool = True) -> MatrixJudgementDoc:
    """Cells (workload x variant) with the primary metric's summary, ratio to the baseline, and the verdict.

    ``planning=False`` leaves out the planning lines (the only costly part; simulations need no words)."""
    metric_of = primaries(doc, metric)
    labels = [v.label for v in doc.variants]
    workloads = [w.name for w in doc.workloads]
    base = labels[0]
    values: dict[tuple[str, str], dict[str, list[float]]] = {(w, v): {} for w in workloads for v in labels}
    for r in doc.runs:
        got = values.get((r.workload, r.variant))
        if got is None or not r.valid:
            continue
        for key, x in r.metrics.items():
            if x is not None and math.isfinite(x):
                got.setdefault(key, []).append(float(x))
    cells: list[CellDoc] = []
    estimates: Estimates = {}
    for w in workloads:
        primary = metric_of[w]
        for v in labels:
            xs = values[(w, v)]
            summaries = {k: summary_doc(summarize(x)) for k, x in xs.items()}
            secondary = {}
            for key, s in summaries.items():
                if key == primary:
                    continue
                entry = SecondaryDoc(mean=s.mean, mean_ci95=s.ci95 if s.n >= 2 else None, n=s.n)
                if v != base:
                    e = log_ratio_welch(values[(w, base)].get(key, []), xs.get(key, []))
                    if isinstance(e, RatioEstimate):
                        entry = replace(entry, ratio=e.ratio, ci95=(e.ci_low, e.ci_high))
                secondary[key] = entry
            own = summaries.get(primary)
            cell = CellDoc(workload=w, variant=v, baseline=base, metric=primary, primary=True,
                           n=own.n if own else 0, mean=own.mean if own else None,
                           mean_ci95=own.ci95 if own and own.n >= 2 else None, secondary=secondary)
            if v != base:
                est = log_ratio_welch(values[(w, base)].get(primary, []), xs.get(primary, []),
                                      names=(f"{base} on {w}", f"{v} on {w}"))
                estimates[(w, v)] = est
                cell = _compared(cell, est)
            cells.append(cell)
    seq = doc.sequential
    if seq is not None and metric_of != primaries(doc):
        seq = None  # another metric than the boundary's: judged as a fixed matrix, and said so below
    if seq is not None:
        cells = _sequential_cells(doc, cells, estimates, metric_of, seq)
        tested = [c for c in cells if not c.is_baseline and c.p_value is not None]
        alpha = seq.alpha
    else:
        tested = [c for c in cells if not c.is_baseline and c.p_value is not None]
        adjusted = dict(zip([id(c) for c in tested], holm([c.p_value for c in tested if c.p_value is not None])))
        # Each interval at the level Holm tested its cell at: a cell is marked significant exactly when it leaves out 1.
        consistent = dict(zip([id(c) for c in tested], holm_intervals(
            [LogComparison.of(_judged(estimates[(c.workload, c.variant)])) for c in tested], alpha), strict=True))
        cells = [replace(c, p_adjusted=adjusted[id(c)], significant=adjusted[id(c)] < alpha,
                         interval=agreeing_interval(consistent[id(c)], adjusted[id(c)] < alpha),
                         interval_level=consistent[id(c)].level)
                 if id(c) in adjusted else c for c in cells]
        tested = [c for c in cells if not c.is_baseline and c.p_value is not None]
    cells = [c if c.is_baseline else replace(c, verdict=_cell_verdict(c, c.metric, metric_words(c.metric)[0],
                                                                       estimates[(c.workload, c.variant)]))
             for c in cells]
    judged = set(metric_of.values())  # one metric for all workloads, or each workload its own
    shared = judged.pop() if len(judged) == 1 else (metric or doc.primary_metric or "iops")
    method = None
    if seq is not None:
        method = (f"{METHOD}; looks at {', '.join(map(str, seq.looks))} runs per cell, "
                  f"per-look level {seq.levels[0]:.4f} rising to {seq.levels[-1]:.4f} as cells decide")
    elif doc.sequential is not None:
        method = "Holm over the cells at a fixed level: the sequential boundary was for another metric"
    return MatrixJudgementDoc(
        alpha=alpha, primary_metric=shared, baseline=base,
        comparisons=len(cells) - len(workloads) if seq is not None else len(tested),
        correction="sequential holm" if seq is not None else "holm", method=method, workloads=workloads,
        variants=labels, cells=cells, summary=[variant_sentence(cells, v) for v in labels[1:]],
        planning=planning_lines(cells, estimates, alpha, len(tested), len(labels)) if planning else [],
        invalid=[f"run {r.slot + 1} ({r.workload}, {r.variant}): {r.invalid_reason}" for r in doc.runs
                 if not r.valid])


def _sequential_cells(doc: MatrixDoc, cells: list[CellDoc], estimates: Estimates, metric_of: dict[str, str],
                      seq: MatrixSequentialDoc) -> list[CellDoc]:
    """The cells of a sequential matrix judged by its boundary: each on the runs up to the look where it decided
    (undecided: the last look reached), significant exactly when it crossed. The adjusted p-value is scaled by
    alpha / the level it faced, so it still compares with alpha."""
    st = state(doc, metric_of)
    out = []
    for c in cells:
        w, v = c.workload, c.variant
        if c.is_baseline:
            out.append(c)
            continue
        d = st.decided.get((w, v))
        if d is None and st.last_look == 0:
            why = f"the first look ({seq.looks[0]} runs per cell) was not reached"
            estimates[(w, v)] = CannotJudge(why)
            out.append(replace(_compared(c, CannotJudge(why)), decided_at=None))
            continue
        e = cell_estimate(doc, w, v, metric_of[w], d.look if d else st.last_look, seq.ci_level)
        estimates[(w, v)] = e
        if isinstance(e, CannotJudge):
            out.append(replace(_compared(c, e), decided_at=None))
            continue
        level = d.level if d else seq.levels[min(len(st.decided), len(seq.levels) - 1)]
        # Its interval at the level it faced, so that it leaves out 1 exactly when the cell crossed.
        h = holm_intervals([LogComparison.of(e)], level)[0]
        out.append(replace(c, ratio=e.ratio, ci95=(e.ci_low, e.ci_high), p_value=e.p_value,
                           p_adjusted=min(1.0, e.p_value * seq.alpha / level), significant=d is not None,
                           cannot_judge=None, decided_at=d.look if d else None,
                           interval=agreeing_interval(h, d is not None), interval_level=h.level))
    return out


def _judged(e: RatioEstimate | CannotJudge) -> RatioEstimate:
    assert isinstance(e, RatioEstimate)  # a cell with a p-value has an estimate
    return e


def planning_lines(cells: list[CellDoc], estimates: Estimates, alpha: float, comparisons: int,
                   variants: int) -> list[str]:
    """What the undecided cells would need: runs per variant to detect a 10% difference at each one's noise, at
    Holm's first step over the whole matrix (alpha / comparisons), 80% power; the matrix's figure is the largest.
    Empty when every cell decided (or none could be judged)."""
    need: list[tuple[str, str, int | None, float]] = []
    for c in cells:
        e = estimates.get((c.workload, c.variant))
        if c.significant or not isinstance(e, RatioEstimate):
            continue
        n = runs_needed(e.sd_log, PLANNING_RATIO, alpha / max(1, comparisons))
        need.append((c.workload, c.variant, n, e.sd_log))
    if not need:
        return []
    diff = f"{(PLANNING_RATIO - 1) * 100:.0f}%"
    lines = []
    for w, v, n, sd in need:
        what = "no practical number of runs" if n is None else f"about {n} runs per variant"
        lines.append(f"{w}, {v}: {what} would detect a {diff} difference at its noise ({sd * 100:.1f}% per run)")
    known = [n for *_, n, _ in need if n is not None]
    if known:
        most = max(known)
        lines.insert(0, f"planning: about {most} runs per variant ({most * variants} per workload) would detect a "
                        f"{diff} difference in every undecided cell at the noise seen (80% power, Holm over "
                        f"{comparisons}); --until-verdict stops as soon as the data allow")
    return lines


def _cell_verdict(c: CellDoc, metric: str, label: str, e: RatioEstimate | CannotJudge) -> str:
    if isinstance(e, CannotJudge):
        return f"{c.workload}: cannot judge {label} ({e.reason})"
    assert c.p_adjusted is not None
    p = fmt_p(c.p_adjusted, adjusted=True)
    if c.significant:
        at = f", decided at {c.decided_at} runs" if c.decided_at else ""
        return f"{c.workload}: {effect_words(metric, c.baseline, c.variant, e)}, {p}{at}"
    # The 95% CI where it holds no change; else the interval that carries the matrix's correction (a judgement of
    # today's, which holds it) or, in an older one without it, what holds.
    shown = (*c.interval, c.interval_level) if c.interval is not None and c.interval_level is not None else None
    lo, hi, level = e.ci_low, e.ci_high, 0.95
    if not lo <= 1.0 <= hi and shown is not None:
        lo, hi, level = shown
    if not lo <= 1.0 <= hi:
        return (f"{c.workload}: {label} {_pct(e.ratio)} before correcting for the matrix's comparisons "
                f"(95% CI {_pct(lo)} to {_pct(hi)}); not significant after, {p}")
    return (f"{c.workload}: no significant difference in {label} ({_pct(e.ratio)}, "
            f"{level_text(level)} CI {_pct(lo)} to {_pct(hi)}), {p}")


def variant_sentence(cells: list[CellDoc], variant: str) -> str:
    """"bfq: fewer IOPS on 3 of 5 workloads (−8% to −37%); no significant difference on 2"; when each workload is
    judged on its own metric (a contention group), each difference is named with its workload:
    "bfq: lower foreground p50 latency on interactive-under-writes (−100%); no significant difference on 5 other
    of 6 workloads"."""
    mine = [c for c in cells if c.variant == variant]
    metrics = list(dict.fromkeys(c.metric for c in mine))
    if len(metrics) == 1:
        return f"{variant}: " + _clauses(mine, metrics[0])
    # Each workload its own metric: the differences by workload, then how many showed none.
    parts = []
    for c in mine:
        if c.significant and c.ratio is not None:
            label, _unit, more, fewer = metric_words(c.metric)
            parts.append(f"{more if c.ratio > 1 else fewer} {label} on {c.workload} ({_pct(c.ratio)})")
    same = sum(1 for c in mine if not c.significant and not c.cannot_judge)
    if same:
        parts.append(f"no significant difference on {same}{' other' if parts else ''} of {len(mine)} workloads")
    unjudged = sum(1 for c in mine if c.cannot_judge)
    if unjudged:
        parts.append(f"cannot judge {unjudged} of {len(mine)} workloads")
    return f"{variant}: " + "; ".join(parts)


def _ratio(c: CellDoc) -> float:
    assert c.ratio is not None  # a significant cell has one
    return c.ratio


def _clauses(mine: list[CellDoc], metric: str) -> str:
    label, _unit, more, fewer = metric_words(metric)
    n = len(mine)
    parts: list[str] = []
    picks: tuple[tuple[str, Callable[[CellDoc], bool]], ...] = (
        (more, lambda c: _ratio(c) > 1), (fewer, lambda c: _ratio(c) < 1))
    for word, pick in picks:
        sig = [c for c in mine if c.significant and pick(c)]
        if sig:
            lo = _ratio(min(sig, key=lambda c: abs(_ratio(c) - 1)))
            hi = _ratio(max(sig, key=lambda c: abs(_ratio(c) - 1)))
            span = _pct(lo) if len(sig) == 1 else f"{_pct(lo)} to {_pct(hi)}"
            parts.append(f"{word} {label} on {len(sig)} of {n} workload{'s' if n > 1 else ''} ({span})")
    same = sum(1 for c in mine if not c.significant and not c.cannot_judge)
    if same:
        parts.append(f"no significant difference on {same}" if parts else
                     f"no significant difference in {label} on {same} of {n} workload{'s' if n > 1 else ''}")
    unjudged = [c for c in mine if c.cannot_judge]
    if unjudged:
        parts.append(f"cannot judge {label} on {len(unjudged)} of {n} workload{'s' if n > 1 else ''} "
                     f"({unjudged[0].cannot_judge}{', …' if len(unjudged) > 1 else ''})")
    return "; ".join(parts)


def as_matrix(doc: ExperimentDoc) -> MatrixDoc:
    """A one-workload experiment seen as a matrix of one row, so it judges and plots the same way."""
    wl = doc.workload
    name = wl.job.name if wl.job is not None else f"cmd: {wl.cmd}"
    workload = wl.job if wl.job is not None else CmdJobSpec(name=name, cmd=wl.cmd or "", cmd_metrics=[])
    own = wl.job.primary if isinstance(wl.job, CatalogJobDoc) else None
    primary = doc.primary_metric or ("wall_s" if wl.cmd else own or "iops")
    batch = doc if isinstance(doc, CompareDoc) else None  # a live alternation has no repeats of its own
    runs = [MatrixRunDoc(index=r.index, variant=r.variant, start=r.start, end=r.end, valid=r.valid,
                         invalid_reason=r.invalid_reason, config=r.config, metrics=r.metrics, fio=r.fio,
                         trace=r.trace, replay=r.replay, slot=r.index, workload=name) for r in doc.runs]
    # A compare's own boundary (one level) is no matrix boundary: the row is charted as a fixed matrix.
    return MatrixDoc(started=doc.started, finished=doc.finished, kernel=doc.kernel, machine=doc.machine,
                     host=doc.host, device=doc.device, variants=doc.variants, notes=doc.notes, status=doc.status,
                     switches=doc.switches, kind="matrix", jobs=[], workloads=[workload],
                     repeat=batch.repeat if batch else 1, drop_caches=batch.drop_caches if batch else False,
                     settle_s=batch.settle_s if batch else 0.0, job_runtime_s=wl.runtime, primary_metric=primary,
                     order=[(name, label) for label in doc.order], target=wl.target, original=doc.original, runs=runs)
