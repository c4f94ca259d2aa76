"""Evidence to share: a result as markdown a tracker comment holds (`report --markdown`, `advise --markdown`).

The answer first, then what it was measured under (the machine, the device's model and firmware, the kernel, the fill
level, whether the runs reached steady state), then the evidence in collapsed ``<details>`` sections: per variant
its valid runs, mean and the mean's 95% interval beside its difference from the baseline, and every run in run
order with its variant and its figures as measured. A tracker takes a comment of 65,536 characters at most (GitHub's
limit; GitLab's is larger), so the page is cut to ``LIMIT``: the runs table first, with a line saying how many runs
were left out and that `--json` has them all.

Every name from outside (a device's model, a label, a workload's name, a note) is made printable
(core/base/terminal_text.py) and escaped for markdown: a pipe cannot open a table cell, a backtick a code span, a
``<`` an HTML tag (a ``</details>`` in a model name closes nothing), and a fenced block is fenced longer than any run
of backticks inside it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from iosched.core.advice.plan import GOAL_WORDS
from iosched.core.base.terminal_text import printable
from iosched.core.documents.document import (
    AdviceDoc,
    ComparisonDoc,
    ExperimentDoc,
    JudgementDoc,
    MatrixDoc,
    MatrixJudgementDoc,
    MatrixRunDoc,
    RunDoc,
)
from iosched.core.documents.metrics import metric_words, split_metric
from iosched.core.load.conditions import ConditionsDoc
from iosched.core.present.conditions import condition_lines
from iosched.core.present.sentences import relative_text
from iosched.core.present.summary import deciding_metrics, heading, summary_lines
from iosched.core.present.worded import worded_judgement, worded_matrix

LIMIT = 60_000  # characters: under the 65,536 a GitHub comment takes, with room for the words a user adds
MAX_CELL = 120  # characters of outside text in one cell or line
MAX_FIGURES = 6  # metric columns of the runs table
MAX_LINES = 80  # lines of a summary shown in the page (its whole is `report --details`)
_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|#~&!])")


def md(text: object, most: int = MAX_CELL) -> str:
    """Outside text for a markdown line or table cell: printable, on one line, at most ``most`` characters, every
    character markdown or HTML would act on escaped."""
    s = printable(str(text))
    if len(s) > most:
        s = s[: most - 1] + "…"
    return _SPECIAL.sub(r"\\\1", s)


def fenced(lines: Sequence[str], info: str = "") -> list[str]:
    """A fenced block holding ``lines`` as they are (printable): its fence longer than any backtick run inside."""
    body = [printable(line) for line in lines]
    longest = max((len(m) for line in body for m in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, *body, fence]


def code(text: str) -> str:
    """Outside text as a code span: printable, its delimiter longer than any backtick run inside it."""
    body = printable(text)
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    tick = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") or longest else ""
    return f"{tick}{pad}{body}{pad}{tick}"


def figure(x: float | None, digits: int = 6) -> str:
    """A figure as measured: whole above 10,000 (below 10^15, every figure iosched keeps), else ``digits``
    significant digits; "–" for none."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–" if x is None else str(x)
    return f"{x:.0f}" if 1e4 <= abs(x) < 1e15 else f"{x:.{digits}g}"


def _mean(x: float | None) -> str:
    return figure(x, 4)


def label(metric: str) -> str:
    """A figure's name with its unit: "p99 latency (µs)"."""
    name, unit, *_ = metric_words(metric)
    role, base = split_metric(metric)
    if role is not None:
        name = f"{role} {metric_words(base)[0]}"
    return md(f"{name} ({unit})" if unit else name)


@dataclass(frozen=True)
class Table:
    """A collapsed table: its summary line (our words), its header, its rows (cells escaped), and what a cut says."""

    summary: str
    header: Sequence[str]
    rows: Sequence[Sequence[str]]
    cut: Callable[[int], str] = field(default=lambda n: f"{n} more rows left out here; `--json` has them all")


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def page(head: Sequence[str], tables: Sequence[Table], limit: int = LIMIT) -> str:
    """``head`` then each table collapsed, at most ``limit`` characters: the answer and the conditions whole (cut
    only past half the limit), then each table's rows while they fit; a cut table ends with a line saying how many
    rows it left out. Every ``<details>`` opened is closed."""
    out: list[str] = []
    used = 0

    def put(line: str) -> None:
        nonlocal used
        out.append(line)
        used += len(line) + 1

    kept, fence = 0, ""
    for line in head:
        if used + len(line) + 1 > limit // 2:
            break
        put(line)
        kept += 1
        ticks = line[: len(line) - len(line.lstrip("`"))]
        if len(ticks) >= 3 and not fence:
            fence = ticks
        elif fence and line == fence:
            fence = ""
    if kept < len(head):
        if fence:
            put(fence)  # a block cut short is closed
        put(f"*{len(head) - kept} more lines left out here; `--json` has them all*")
    room = limit - 200  # what is kept back for the line saying which tables were left out
    skipped = 0
    for t in tables:
        opening = ["", f"<details><summary>{md(t.summary, 200)}</summary>", "", _row(t.header),
                   _row(["---"] * len(t.header))]
        tail = sum(len(x) + 1 for x in ["", "</details>"]) + 200  # and the line saying what was cut
        if skipped or used + sum(len(x) + 1 for x in opening) + tail > room:
            skipped += 1  # tables keep their order: none after one left out
            continue
        for line in opening:
            put(line)
        shown = 0
        for r in t.rows:
            line = _row(r)
            if used + len(line) + 1 + tail > room:
                break
            put(line)
            shown += 1
        if shown < len(t.rows):
            put("")
            put(f"*{t.cut(len(t.rows) - shown)}*")
        put("")
        put("</details>")
    if skipped:
        put("")
        put(f"*{skipped} more table{'s' if skipped > 1 else ''} left out here; `--json` has them all*")
    return "\n".join(out) + "\n"


# --- what the runs were measured under ---------------------------------------------------------------------------


def conditions_markdown(conditions: ConditionsDoc | None, kernel: str, runs: Sequence[RunDoc]) -> list[str]:
    """The conditions as a list: the machine, device, kernel and fill; the wait for steady state and its misses."""
    lines = condition_lines(conditions, kernel, runs)
    if not lines:
        return [f"- measured on: kernel {md(kernel)} (the machine, device and fill were not kept: an older file)"]
    out = [f"- {md(line.strip(), 400)}" for line in lines if not line.startswith("  ")]
    out += [f"  - {md(line.strip(), 400)}" for line in lines if line.startswith("  ")]
    if conditions is not None and conditions.fill is None:
        out.append("- fill: not prepared (the target as found; `--fill PCT` states it)")
    if conditions is not None and conditions.steady is None:
        out.append("- steady state: not waited for (each run counted from its start; `--steady` waits)")
    return out


# --- the tables ---------------------------------------------------------------------------------------------------


def _against(c: ComparisonDoc | None) -> str:
    if c is None:
        return "baseline"
    if c.ratio is None:
        return "cannot judge"
    if c.interval is not None:
        low, high = c.interval
    elif c.ci95 is not None:
        low, high = c.ci95
    else:
        return f"ratio {_mean(c.ratio)}"
    if not all(math.isfinite(x) and x > 0 for x in (c.ratio, low, high)):
        return "cannot judge"
    return relative_text(c.ratio, low, high) + (" *" if c.significant else "")


def variants_table(title: str, labels: Sequence[str], metrics: Sequence[str], judgement: JudgementDoc,
                   runs: Sequence[RunDoc]) -> Table:
    """Per variant and metric: the valid runs of all it made, the mean, the mean's 95% interval and the difference
    from the baseline with its interval (* significant, as the verdict judged it)."""
    made: dict[str, int] = {}
    for r in runs:
        made[r.variant] = made.get(r.variant, 0) + 1
    compared = {(c.variant, c.metric): c for c in judgement.comparisons}
    base = labels[0] if labels else ""
    rows: list[list[str]] = []
    for lb in labels:
        for m in metrics:
            s = judgement.summaries.get(lb, {}).get(m)
            ci = f"{_mean(s.ci95[0])} … {_mean(s.ci95[1])}" if s is not None and s.n >= 2 else "–"
            vs = "baseline" if lb == base else _against(compared.get((lb, m)))
            rows.append([md(lb), label(m), f"{s.n if s else 0} of {made.get(lb, 0)}",
                         _mean(s.mean) if s else "–", ci, vs])
    return Table(f"{title}: per variant, the mean and its 95% interval",
                 ["variant", "figure", "valid runs", "mean", "95% CI of the mean", f"against {md(base)} (95% CI)"],
                 rows, lambda n: f"{n} more rows left out here; `--json` has them all")


def runs_table(title: str, runs: Sequence[RunDoc], metrics: Sequence[str], steady: bool) -> Table:
    """Every run in run order: its variant (and workload, in a matrix), whether it counted, whether it reached
    steady state, and its figures as measured."""
    metrics = list(metrics)[:MAX_FIGURES]
    matrix = any(isinstance(r, MatrixRunDoc) for r in runs)
    header = ["run", *(["workload"] if matrix else []), "variant", "valid", *(["steady"] if steady else []),
              *(label(m) for m in metrics)]
    rows: list[list[str]] = []
    for r in sorted(runs, key=lambda r: r.index):
        valid = "yes" if r.valid else f"no: {md(r.invalid_reason or 'invalid')}"
        st = [] if not steady else ["–" if r.steady is None else "reached" if r.steady.reached else
                                    f"not reached in {r.steady.waited_s:.0f} s"]
        rows.append([str(r.index + 1), *([md(r.workload)] if isinstance(r, MatrixRunDoc) else [""] if matrix else []),
                     md(r.variant), valid, *st, *(figure(r.metrics.get(m)) for m in metrics)])
    return Table(f"{title}: every run in run order ({len(rows)})", header, rows,
                 lambda n: f"{n} more runs left out here (a tracker comment holds {LIMIT // 1000}k characters); "
                           "`--json` has every run")


# --- the documents ------------------------------------------------------------------------------------------------


def experiment_markdown(doc: ExperimentDoc, judgement: JudgementDoc, version: str = "", limit: int = LIMIT) -> str:
    """A judged compare for a tracker: its verdict, its summary as the terminal shows it, the conditions, then per
    variant its means and intervals and every run, collapsed."""
    judgement = worded_judgement(doc, judgement)
    lines = summary_lines(doc, judgement, None)
    device = doc.device.name if doc.device is not None else "an unknown device"
    lines = lines[1:] if lines and lines[0] == heading(doc, judgement) else lines  # the heading is the title
    head = [f"### iosched compare on {md(device)}", "", f"**{md(heading(doc, judgement), 600)}**", "",
            *fenced(lines[:MAX_LINES] + ([f"… {len(lines) - MAX_LINES} more lines: `report --details`"]
                                         if len(lines) > MAX_LINES else []), "text"), "",
            *conditions_markdown(doc.conditions, doc.kernel, doc.runs), *_version(version)]
    labels = [v.label for v in doc.variants]
    metrics = deciding_metrics(doc, judgement) or [judgement.primary_metric]
    steady = any(r.steady is not None for r in doc.runs)
    return page(head, [variants_table("The figures", labels, metrics, judgement, doc.runs),
                       runs_table("The runs", doc.runs, _run_metrics(doc.runs, metrics), steady)], limit)


def matrix_markdown(doc: MatrixDoc, judgement: MatrixJudgementDoc, version: str = "", limit: int = LIMIT) -> str:
    """A judged matrix for a tracker: its sentences per variant, the conditions, then per cell its mean, interval
    and ratio, and every run, collapsed."""
    judgement = worded_matrix(replace(doc, judgement=judgement)).judgement or judgement
    device = doc.device.name if doc.device is not None else "an unknown device"
    head = [f"### iosched matrix on {md(device)}: {len(judgement.workloads)} workloads × "
            f"{len(judgement.variants)} variants, kernel {md(doc.kernel)}", "",
            *(f"- **{md(s, 600)}**" for s in judgement.summary[:MAX_LINES]), "",
            *conditions_markdown(doc.conditions, doc.kernel, doc.runs), *_version(version)]
    rows = []
    for c in judgement.cells:
        ci = f"{_mean(c.mean_ci95[0])} … {_mean(c.mean_ci95[1])}" if c.mean_ci95 is not None else "–"
        if c.is_baseline:
            vs = "baseline"
        elif c.ratio is None or (c.interval is None and c.ci95 is None):
            vs = "cannot judge"
        else:
            low, high = c.interval if c.interval is not None else c.ci95  # type: ignore[misc]
            vs = (f"×{_mean(c.ratio)} ({_mean(low)} … {_mean(high)})" + (" *" if c.significant else "")
                  if all(math.isfinite(x) for x in (c.ratio, low, high)) else "cannot judge")
        rows.append([md(c.workload), md(c.variant), label(c.metric), str(c.n), _mean(c.mean), ci, vs])
    cells = Table("The figures: per cell, the mean and its 95% interval", ["workload", "variant", "figure",
                  "valid runs", "mean", "95% CI of the mean", f"against {md(judgement.baseline)} (interval)"], rows)
    metrics = list(dict.fromkeys(c.metric for c in judgement.cells))
    steady = any(r.steady is not None for r in doc.runs)
    return page(head, [cells, runs_table("The runs", doc.runs, metrics, steady)], limit)


def advice_tables(doc: AdviceDoc) -> list[Table]:
    """Per test: its variants' means and intervals on its figure and what it costs, then every run of the test."""
    tables: list[Table] = []
    runs: list[Table] = []
    for t in doc.tests:
        r = t.result
        if r is None or r.judgement is None:
            continue
        labels = [v.label for v in r.variants]
        metrics = list(dict.fromkeys([t.metric, *t.costs]))[:MAX_FIGURES]
        title = f"The {GOAL_WORDS[t.goal]} test"
        tables.append(variants_table(title, labels, metrics, r.judgement, r.runs))
        runs.append(runs_table(title, r.runs, metrics, any(x.steady is not None for x in r.runs)))
    return tables + runs


def _run_metrics(runs: Sequence[RunDoc], first: Sequence[str]) -> list[str]:
    """The runs table's figures: those the summary shows, then the rest of the usual ones the runs carry."""
    have = {k for r in runs for k, x in r.metrics.items() if x is not None}
    return [k for k in dict.fromkeys([*first, "iops", "mb_s", "clat_p99_us", "cpu_us_per_io"]) if k in have]


def _version(version: str) -> list[str]:
    return [f"- iosched {md(version)}"] if version else []
