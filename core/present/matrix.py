"""A matrix's result as text and CSV: one row per workload, one column per variant, then one sentence per
variant; shared by `iosched compare --jobs`, `iosched report` and the TUI's compare screen."""

from __future__ import annotations

import csv
import io
import math

from iosched.core.base.units import si
from iosched.core.documents.document import CatalogJobDoc, CellDoc, MatrixDoc, MatrixJudgementDoc
from iosched.core.documents.metrics import metric_words, ordered_metrics, split_metric
from iosched.core.present.conditions import condition_lines
from iosched.core.present.report import device_words
from iosched.core.present.worded import worded_matrix_judgement


def _cell_parts(c: CellDoc, geometric: bool) -> tuple[str, str]:
    """A cell's figure, and its comparison with the baseline ("" for the baseline itself). ``geometric``: the
    geometric mean its ratio is of (an older judgement without them: the mean with half its CI, and the header says
    the ratio is not of these)."""
    if c.mean is None:
        return "-", ""
    ci = c.mean_ci95
    if geometric:  # a cell with a value not positive has none (nor a ratio): its arithmetic mean, named
        text = si(c.geomean) if c.geomean is not None else f"{si(c.mean)} (mean)"
    else:
        text = si(c.mean) + (f" ± {si((ci[1] - ci[0]) / 2)}" if ci else "")
    if c.is_baseline:
        return text, ""
    if c.cannot_judge or c.ratio is None or c.ci95 is None:
        return text, "(cannot judge)"
    lo, hi = c.interval or c.ci95  # the interval that carries the matrix's correction, where the judgement has it
    return text, f"×{_ratio(c.ratio)} ({_ratio(lo)}–{_ratio(hi)}){'*' if c.significant else ' '}"


def _ratio(x: float) -> str:
    """A ratio to two places; beyond 999 (an interval of two runs at Holm's strictest level) just that."""
    return "999+" if not x < 999.995 else f"{x:.2f}"


def geometric_means(judgement: MatrixJudgementDoc) -> bool:
    """Whether the cells have the geometric means their ratios are of (a judgement of today's; an older iosched's
    kept none)."""
    return any(c.geomean is not None for c in judgement.cells)


def corrected(judgement: MatrixJudgementDoc) -> bool:
    """Every compared cell's interval carries the correction (a judgement of today's; an older one's do not)."""
    return all(c.interval is not None for c in judgement.cells if not c.is_baseline and c.ratio is not None)


def matrix_text(doc: MatrixDoc, judgement: MatrixJudgementDoc) -> str:
    """One row per workload, one column per variant; then one sentence per variant."""
    judgement = worded_matrix_judgement(doc, judgement)
    metric_of = {c.workload: c.metric for c in judgement.cells}
    mixed = len(set(metric_of.values())) > 1  # a contention group: each workload judged on its own metric
    label, unit, *_ = metric_words(judgement.primary_metric)
    what = "each workload's own metric (after its name)" if mixed else f"{label}{' (' + unit + ')' if unit else ''}"
    sequential = judgement.correction == "sequential holm"
    runs = (f"until a verdict (at most {doc.repeat} runs per cell)" if sequential
            else f"{doc.repeat} run(s) each")
    star = (f"* crossed the sequential boundary (Holm over {judgement.comparisons} cells as they decide)"
            if sequential else f"* significant after Holm over {judgement.comparisons} comparisons")
    if corrected(judgement):  # each interval at the level its cell was tested at: * exactly when it leaves out 1
        interval = ("its interval at the level the boundary tested it at" if sequential else
                    "its interval at the level Holm tested it at")
    else:
        interval = f"its {'repeated ' if sequential else ''}95% CI before correction"
    geometric = geometric_means(judgement)
    if geometric:
        figures = f"geometric mean of the valid runs; against {judgement.baseline}: the ratio of these means"
        if sequential:
            figures += " (a cell decided before the last look: of the baseline's runs to its look)"
    else:  # a judgement kept by an older iosched: its ratios are of geometric means it did not keep
        figures = (f"mean ± half the 95% CI; against {judgement.baseline}: the ratio of the geometric means (not of "
                   "these)")
    lines = [f"{device_words(doc)}: matrix of "
             f"{len(judgement.workloads)} workload(s) x {len(judgement.variants)} variants, "
             f"{runs}{', caches dropped before each run' if doc.drop_caches else ''}",
             f"{what}: {figures} and {interval}, {star} (alpha {judgement.alpha:g})",
             *condition_lines(doc.conditions, doc.kernel, doc.runs),
             ""]
    parts = {(c.workload, c.variant): _cell_parts(c, geometric) for c in judgement.cells}
    cells = {}
    for v in judgement.variants:  # the ratios of a column start at one column, whatever the means' widths
        column = [parts[(w, v)] for w in judgement.workloads]
        mean_w = max(len(m) for m, _ in column)
        for w, (mean, against) in zip(judgement.workloads, column):
            cells[(w, v)] = f"{mean:<{mean_w}}  {against}" if against else mean
    ns: dict[str, set[int]] = {}
    for c in judgement.cells:
        ns.setdefault(c.workload, set()).add(c.n)
    names = {w: f"{w} [{metric_of.get(w, '')}]" if mixed else w for w in judgement.workloads}
    wl_w = max(len("workload"), *(len(names[w]) for w in judgement.workloads))
    widths = [max(len(v), *(len(cells[(w, v)]) for w in judgement.workloads)) for v in judgement.variants]
    lines.append(f"{'workload':<{wl_w}}  " + "  ".join(f"{v:<{wd}}" for v, wd in zip(judgement.variants, widths))
                 + "  n")
    for w in judgement.workloads:
        n = "/".join(str(x) for x in sorted(ns[w]))
        lines.append(f"{names[w]:<{wl_w}}  " + "  ".join(f"{cells[(w, v)]:<{wd}}"
                                                  for v, wd in zip(judgement.variants, widths)) + f"  {n}")
    lines.append("")
    lines += judgement.summary
    if sequential:
        decided = [f"{c.workload} · {c.variant} at {c.decided_at}" for c in judgement.cells if c.decided_at]
        lines.append(f"  decided (runs per cell): {', '.join(decided)}" if decided else "  no cell decided")
        lines.append(f"  method: {judgement.method}")
    planning = judgement.planning or []
    lines += [f"  {line}" for line in planning[:1]] + [f"    {line}" for line in planning[1:9]]
    if len(planning) > 9:
        lines.append(f"    … and {len(planning) - 9} more undecided cells (--json has them all)")
    lines += [f"  invalid: {bad}" for bad in judgement.invalid]
    lines += [f"  note: {note}" for note in doc.notes]
    if doc.status == "cancelled":
        lines.append(f"  cancelled: {len(doc.runs)} of {len(doc.order)} runs finished")
    roles = role_table(doc, judgement)
    if roles:
        lines += ["", "Each role's means:", *roles]
    return "\n".join(lines) + "\n"


_ROLE_HEADS = {"clat_p50_us": "p50 ms", "clat_p99_us": "p99 ms", "clat_mean_us": "mean ms", "clat_p999_us": "p99.9 ms",
               "mb_s": "MB/s", "iops": "IOPS", "share": "share"}


def role_columns(doc: MatrixDoc, judgement: MatrixJudgementDoc) -> list[str]:
    """The figures a matrix of jobs with roles is about: each such job's own metric and trade-off, the other
    percentile of a role's latency beside the one judged, and how evenly the roles shared the device."""
    have = {k for c in judgement.cells for k in (c.metric, *c.secondary)}
    wanted: list[str] = []
    for w in doc.workloads:
        if not isinstance(w, CatalogJobDoc) or not w.roles:
            continue
        mine = [c.metric for c in judgement.cells if c.workload == w.name][:1]
        for k in (*mine, w.tradeoff or ""):
            role, base = split_metric(k)
            if role is not None and base in ("clat_p50_us", "clat_p99_us"):
                wanted += [f"{role}:clat_p50_us", f"{role}:clat_p99_us"]
            if role is not None or k in ("fairness_jain", "share_min_max"):
                wanted.append(k)
        wanted.append("fairness_jain")
    ordered = [k for k in ordered_metrics(dict.fromkeys(wanted)) if k in have]
    # Each role's figures first, how evenly they shared after them (the table docs/contention.md shows).
    return sorted(ordered, key=lambda k: split_metric(k)[0] is None)


def role_table(doc: MatrixDoc, judgement: MatrixJudgementDoc) -> list[str]:
    """Per job with roles and variant, the mean of each role figure its group is about (blank where a job has
    none): what a contention group shows beside its verdicts."""
    columns = role_columns(doc, judgement)
    if not columns:
        return []
    jobs = [w.name for w in doc.workloads if isinstance(w, CatalogJobDoc) and w.roles]
    cells = {(c.workload, c.variant): c for c in judgement.cells}
    heads = ["job", "scheduler", *(_role_head(k) for k in columns)]
    rows = []
    for w in jobs:
        for n, v in enumerate(judgement.variants):
            c = cells.get((w, v))
            vals = []
            for k in columns:
                mean = None if c is None else c.mean if c.metric == k else (
                    e.mean if (e := c.secondary.get(k)) is not None else None)
                vals.append("" if mean is None or math.isnan(mean) else _role_value(k, mean))
            rows.append([w if n == 0 else "", v, *vals])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]

    def row(cols: list[str]) -> str:
        return "  ".join(x.ljust(wd) if i < 2 else x.rjust(wd) for i, (x, wd) in enumerate(zip(cols, widths))).rstrip()

    return [row(heads), *(row(r) for r in rows)]


def _role_head(key: str) -> str:
    role, base = split_metric(key)
    if role is None:
        return {"fairness_jain": "Jain index", "share_min_max": "min/max share"}.get(key, metric_words(key)[0])
    return f"{role} {_ROLE_HEADS.get(base, base)}"


def _role_value(key: str, x: float) -> str:
    """Latency in ms, throughput whole, shares and indices to two places."""
    if key.endswith("_us"):
        return f"{x / 1000:.2f}"
    if key.endswith(("mb_s", "iops")):
        return f"{x:.0f}"
    return f"{x:.2f}"


CSV_FIELDS = ["workload", "variant", "baseline", "metric", "n", "mean", "mean_ci95_low", "mean_ci95_high", "ratio",
              "ci95_low", "ci95_high", "p_value", "p_adjusted", "significant", "cannot_judge", "verdict", "decided_at",
              "geomean"]


def matrix_csv(doc: MatrixDoc, judgement: MatrixJudgementDoc) -> str:
    """One row per cell with the verdict fields; secondary metrics as mean columns after them."""
    judgement = worded_matrix_judgement(doc, judgement)
    secondary = sorted({k for c in judgement.cells for k in c.secondary})
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(CSV_FIELDS + [f"{k}_mean" for k in secondary])
    for c in judgement.cells:
        ci, rci = c.mean_ci95 or (None, None), c.ci95 or (None, None)
        row = [c.workload, c.variant, c.baseline, c.metric, c.n, c.mean, *ci, c.ratio,
               *rci, c.p_value, c.p_adjusted, "" if c.is_baseline else int(c.significant),
               c.cannot_judge, c.verdict, c.decided_at, c.geomean]
        row += [e.mean if (e := c.secondary.get(k)) is not None else None for k in secondary]
        w.writerow([_csv(x) for x in row])
    return buf.getvalue()


def _csv(x: object) -> str:
    if x is None:
        return ""
    if isinstance(x, float):
        return "" if math.isnan(x) else f"{x:.6g}"
    return str(x)
