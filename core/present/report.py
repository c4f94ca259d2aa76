"""Experiment results as text, CSV and simple charts: shared by `iosched compare/report` and the TUI."""

from __future__ import annotations

import csv
import io

from iosched.core.base.encode import encode
from iosched.core.base.textcharts import error_bar, log_bar
from iosched.core.base.units import si
from iosched.core.documents.document import (
    AlternationDoc,
    CatalogJobDoc,
    ComparisonDoc,
    ExperimentDoc,
    JudgementDoc,
    MatrixDoc,
    SummaryDoc,
)
from iosched.core.documents.metrics import METRICS, metric_label, metric_words, ordered_metrics, roles_of
from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.present.conditions import condition_lines
from iosched.core.present.sentences import background_named, comparison_sentence, relative_text
from iosched.core.present.summary import (
    CLI_WAYS,
    MORE,
    Ways,
    rank_words,
    replay_timing,
    split_words,
    summary_lines,
)
from iosched.core.present.worded import worded, worded_judgement
from iosched.core.statistics.verdict import cmd_metrics_of


def runs_csv(doc: ExperimentDoc) -> str:
    return hosts_runs_csv([(None, doc)])


def hosts_runs_csv(docs: list[tuple[str | None, ExperimentDoc]], jobs: list[str] | None = None) -> str:
    """Every run of each document, one row each; with host names (a fleet), a host column first, and with
    ``jobs`` (each document's job: a fleet matrix), a job column before it."""
    keys = ordered_metrics((k for _, d in docs for r in d.runs for k in r.metrics),
                           [m for _, d in docs for m in cmd_metrics_of(d)])
    hosts = any(h is not None for h, _ in docs)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow([*(["job"] if jobs else []), *(["host"] if hosts else []), "run", "variant", "scheduler", "valid",
                "start_s", "end_s", *keys])
    for n, (host, doc) in enumerate(docs):
        for r in doc.runs:
            w.writerow([*([jobs[n]] if jobs else []), *([host] if hosts else []), r.index + 1, r.variant,
                        r.config.get("scheduler"), int(r.valid), f"{r.start:.3f}", f"{r.end:.3f}",
                        *(_csv_num(r.metrics.get(k)) for k in keys)])
    return buf.getvalue()


def experiment_json(doc: ExperimentDoc, verdict_last: bool = False) -> dict[str, object]:
    """An experiment as `--json` prints it: its saved form with the runs last, the verdict before them (after them,
    ``verdict_last``, for a file saved without one: an older iosched's, a fleet host's); its sentences written
    (core/present/worded.py)."""
    out: dict[str, object] = encode(worded(doc))
    last = ("runs", "judgement") if verdict_last else ("runs",)
    moved = {k: out.pop(k) for k in last if k in out}
    return {**out, **moved}


def _csv_num(x: float | None) -> str:
    return "" if x is None else f"{x:.6g}"


def device_words(doc: ExperimentDoc | MatrixDoc) -> str:
    """"loop3 (QEMU HARDDISK, kernel 6.12)": the device a result was made on, as its document says."""
    dev = doc.device
    model = dev.model if isinstance(dev, DeviceDoc) else None
    return f"{dev.name if dev is not None else None} ({model or 'no model'}, kernel {doc.kernel})"


def text_report(doc: ExperimentDoc, verdict: JudgementDoc, verdict_first: bool = False, details: bool = False,
                more: str | None = MORE, ways: Ways = CLI_WAYS) -> str:
    """The result: its summary (core/present/summary.py; ``more`` its last line, ``ways`` the face's words for
    asking for more), or with ``details`` the whole of it: what ran, a table of means with their 95% CI, charts and
    every comparison in words (``verdict_first``: the verdict before the tables, as a screen shows its top first)."""
    if not details:
        return "\n".join(summary_lines(doc, verdict, more, ways)) + "\n"
    verdict = worded_judgement(doc, verdict)
    wl = doc.workload
    what = (wl.job.name if wl.job is not None else None) or f"cmd: {wl.cmd}"
    for m in wl.cmd_metrics or []:
        better = f", {m.better} is better" if m.better else ""
        what += f"; {m.name} read from its output ({m.pattern}{better})"
    if (background := background_named(wl)) is not None:
        what += f" under background job {background} (its figures: bg:METRIC)"
    lines = [f"{device_words(doc)}: {what}"]
    if isinstance(doc, AlternationDoc):
        lines.append(f"live alternation every {doc.every_s:g} s for {doc.duration_s:g} s; "
                     f"first {doc.discard_s:g} s after each switch discarded; one sample per segment")
    else:
        lines.append(f"{doc.repeat} run(s) per variant, order {' '.join(doc.order)}")
    if (timing := replay_timing(doc)) is not None:
        lines.append(timing)
    lines += condition_lines(doc.conditions, doc.kernel, doc.runs)
    summaries = verdict.summaries
    own = list(cmd_metrics_of(doc))
    keys = [k for k in ordered_metrics((k for s in summaries.values() for k in s), own)
            if any((x := s.get(k)) is not None and x.mean for s in summaries.values())]
    shown: list[str] = [k for k in (*own, "iops", "wall_s", "mb_s", "clat_mean_us", "clat_p99_us", "cpu_us_per_io",
                                    "cpu_us_per_io_task", "cpu_us_per_io_workers", "cpu_sys", "dev_r_await",
                                    "dev_w_await", "sched_p50_us", "sched_p99_us", "device_p50_us", "device_p99_us",
                                    "total_p50_us", "total_p99_us")
                        if k in keys]
    roles = roles_of(keys)
    if roles:  # a workload with roles: each role's own figures first, the primary metric before all
        primary = verdict.primary_metric
        per_role = [f"{r}:{m}" for r in roles for m in ("iops", "mb_s", "clat_p50_us", "clat_p99_us")]
        extra = [k for k in ("fairness_jain", "share_min_max", "cpu_us_per_io", "cpu_us_per_io_task",
                             "cpu_us_per_io_workers") if k in keys]
        shown = [k for k in dict.fromkeys([primary, *per_role, *extra]) if k in keys]
    labels = {k: _column_label(k) for k in shown}
    base = next(iter(summaries), "")
    against = f"  vs {base}"
    differences = relative_cells(verdict)
    width = max(len(lb) for lb in summaries) + 2
    col = 20
    for i in range(0, len(shown), 3):  # three metrics a block: fits 80 columns
        block = shown[i:i + 3]
        lines.append("")
        lines.append(" " * width + "".join(f"{labels[k]:>{col}}" for k in block))
        for lb, s in summaries.items():
            cells = []
            for k in block:
                x = s.get(k)
                if x is None:
                    cells.append(f"{'-':>{col}}")
                    continue
                half = (x.ci95[1] - x.ci95[0]) / 2
                spread = " ± " + si(half) if x.n >= 2 else " (n=1)"  # one run has no interval
                cells.append(f"{si(x.mean) + spread:>{col}}")
            n = max((s[k].n for k in s), default=0)
            lines.append(f"{lb:<{width}}" + "".join(cells) + (f"  n={n}" if i == 0 else ""))
            if lb != base:
                diffs = [f"{differences.get((lb, k), '-'):>{col}}" for k in block]
                # "  vs mq-deadline" may be wider than the names: it borrows the first cell's blanks.
                over = len(against) - width
                if over > 0 and not diffs[0].startswith(" " * (over + 1)):
                    diffs[0] = f"{diffs[0].strip().replace(' … ', '…'):>{col}}"
                if over > 0 and diffs[0].startswith(" " * (over + 1)):
                    diffs[0] = diffs[0][over:]
                lines.append(f"{against:<{width}}" + "".join(diffs))
    lines.append("  mean ± half-width of its 95% CI; vs rows: the difference from the baseline")
    lines.append("  with its 95% CI, from the ratio on the log scale as in the verdict")
    if "cpu_us_per_io_workers" in shown:
        lines += WORKERS_NOTE
    lines.append("")
    lines += bar_charts(verdict)
    verdict_lines = verdict_text(doc, verdict)
    if verdict_first:  # a screen shows its top first: the verdict, then what ran
        lines[0:0] = [*verdict_lines, ""]
    else:
        lines += verdict_lines
    return "\n".join(lines) + "\n"


# kblockd serves every disk: its workers' time cannot be told apart per device from /proc.
WORKERS_NOTE = ["  all kworkers: every kernel block worker on this machine during the run (kblockd's, whatever",
                "  disk it served, and the device's own workqueue), per IO of the run; a lower bound of theirs"]
_SHORT = {"fairness_jain": "Jain index", "share_min_max": "min/max share", "cpu_us_per_io_task": "task CPU µs/IO",
          "cpu_us_per_io_workers": "all kworkers µs/IO", "total_p50_us": "block p50 (µs)",
          "total_p99_us": "block p99 (µs)"}


def _column_label(key: str) -> str:
    """A column's head, in at most 19 characters."""
    if key in _SHORT:
        return _SHORT[key]
    role, _, base = key.rpartition(":")
    if role and base in _SHORT:
        return f"{role} {_SHORT[base]}"
    label, unit, *_ = metric_words(key)
    if ":" in key:  # a role's metric: its role name is short enough for a column
        label = f"{key.split(':')[0]} {metric_words(key.split(':')[1])[0]}"
    return f"{label} ({unit})" if unit else label


def relative_cells(verdict: JudgementDoc) -> dict[tuple[str, str], str]:
    """(variant, metric) -> its difference from the baseline as the verdict has it, e.g. "-37% (-43 … -30)"."""
    cells = {}
    for c in verdict.comparisons:
        if c.ratio is None or not c.ci95:
            text = "cannot judge"
        else:
            text = relative_text(c.ratio, *c.ci95)
            if len(text) > 19:  # a large effect: keep the column
                text = text.replace(" … ", "…")
        cells[(c.variant, c.metric)] = text
    return cells


def verdict_text(doc: ExperimentDoc, verdict: JudgementDoc) -> list[str]:
    """The primary metric's verdict first, then every secondary metric (significant or not), then notes."""
    head = {"final": "Verdict", "interim": "Interim estimate", "cancelled": "Verdict (cancelled: partial runs)"}
    label = metric_label(verdict.primary_metric)
    lines = [f"{head.get(verdict.status, 'Verdict')} on {label}: {verdict.method}"]
    comps = verdict.comparisons
    own = cmd_metrics_of(doc)
    primary = [c for c in comps if c.primary]
    adjusted = len(primary) > 1 or doc.sequential is not None
    lines += [f"  {comparison_sentence(c, own.get(c.metric), adjusted)}" for c in primary]
    base = doc.variants[0].label if doc.variants else ""
    lines += [f"  {split_words(g, base)}" for g in verdict.run_groups if g.metric == verdict.primary_metric]
    lines += [f"  {line}" for c in primary if (line := rank_words(c))]
    secondary: list[ComparisonDoc] = [c for c in comps if not c.primary]
    left_out = 0
    if roles_of(c.metric for c in secondary):
        # Roles multiply the metrics: the trade-off the job names and every significant difference are shown.
        job = doc.workload.job
        tradeoff = job.tradeoff if isinstance(job, CatalogJobDoc) else None
        keep = [c for c in secondary if c.significant or c.metric == tradeoff]
        left_out, secondary = len(secondary) - len(keep), keep
    if secondary or left_out:
        lines.append("Secondary metrics (tested only once the primary metric differs; Holm-corrected):")
        lines += [f"  {comparison_sentence(c, own.get(c.metric))}" for c in secondary]
    others = [g for g in verdict.run_groups if g.metric != verdict.primary_metric]
    if others:
        lines.append("Runs that disagree in other metrics:")
        lines += [f"  {split_words(g, base)}" for g in others]
    if left_out:
        lines.append(f"  {left_out} other comparison(s): no significant difference (all of them: --json or --csv)")
    lines += [f"  note: {note}" for note in verdict.notes]
    lines += [f"  invalid: {bad}" for bad in verdict.invalid]
    lines += [f"  note: {note}" for note in doc.notes]
    return lines


def bar_charts(verdict: JudgementDoc, width: int = 78) -> list[str]:
    """Per variant, the headline metrics as bars with their 95% CI, and latency percentiles on a log scale."""
    summaries: dict[str, dict[str, SummaryDoc]] = verdict.summaries
    if not summaries:
        return []
    name_w = max(len(lb) for lb in summaries) + 1
    bar_w = max(10, width - name_w - 20)
    lines: list[str] = []
    labels = {k: (lb, unit) for k, lb, unit, *_ in METRICS}
    primary = verdict.primary_metric
    if primary and primary not in labels:  # a command's own figure (--cmd-metric): its name is its label
        labels[primary] = metric_words(primary)[:2]
    for key in dict.fromkeys([primary, "iops", "wall_s", "cpu_us_per_io"] if primary in labels else
                             ["iops", "wall_s", "cpu_us_per_io"]):
        stats = {lb: s[key] for lb, s in summaries.items() if key in s and s[key].n}
        if not stats or not any(x.mean for x in stats.values()):
            continue
        top = max(max(x.ci95[1], x.mean) for x in stats.values()) * 1.05
        label, unit = labels[key]
        lines.append(f"{label}{' (' + unit + ')' if unit else ''}, bars to the mean, ├─┤ the 95% CI:")
        for lb, x in stats.items():
            half = (x.ci95[1] - x.ci95[0]) / 2
            bar = error_bar(x.mean, x.ci95[0], x.ci95[1], top, bar_w)
            lines.append(f"  {lb:<{name_w}}{bar} {si(x.mean)} ± {si(half)}")
        lines.append("")
    # fio's completion latency beside the device's own await: the gap is time spent above the block layer.
    pct = [("p50", "clat_p50_us"), ("p99", "clat_p99_us"), ("p99.9", "clat_p999_us")]
    rows: dict[str, list[tuple[str, float]]] = {}
    for lb, s in summaries.items():
        rows[lb] = [(name, s[k].mean) for name, k in pct if k in s and s[k].mean]
        if rows[lb]:
            rows[lb] += [(f"dev {d[4]}_await", s[d].mean * 1000.0) for d in ("dev_r_await", "dev_w_await")
                         if d in s and s[d].mean]
    values = [v for r in rows.values() for _, v in r]
    if values:
        lo, hi = min(values) / 2, max(values) * 1.2
        lines.append(f"latency per scheduler (µs, log scale {si(lo)}..{si(hi)}): fio clat percentiles,")
        lines.append("and the device's mean await from the sampler (block-layer time only):")
        for lb, r in rows.items():
            for i, (name, v) in enumerate(r):
                head = lb if i == 0 else ""
                lines.append(f"  {head:<{name_w}}{name:>11} {log_bar(v, lo, hi, bar_w - 13)} {si(v)}")
        lines.append("")
    return lines
