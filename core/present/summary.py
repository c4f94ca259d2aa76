"""A compare's result, the answer first: what ran, the verdict in words, one table of the figures that decide the
trade-off with every run drawn as a dot, the significant trade-offs one line each, the notes that matter.

The same lines in `compare`, `report` and the TUI's result view (and any front end that shows a judgement:
``summary_lines``); everything else (every metric, every comparison, the charts, "cannot judge") is the details
page (core/present/report.py ``text_report(..., details=True)``).

The runs strip: each variant's valid runs of one metric as dots on a log axis shared by the block's rows, its ends
printed once above it, so two groups of runs, or one run apart, are seen before any mean is read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from iosched.core.base.units import si
from iosched.core.documents.document import (
    AlternationDoc,
    CatalogJobDoc,
    ComparisonDoc,
    ExperimentDoc,
    JudgementDoc,
    RunSplitDoc,
)
from iosched.core.documents.metrics import ROLE_WORDS, metric_label, metric_words, roles_of, split_metric
from iosched.core.documents.params import MOST_PER_ARM
from iosched.core.load.replay_lag import seconds_text
from iosched.core.load.replay_latency import latency_note
from iosched.core.present.conditions import summary_condition_lines
from iosched.core.present.sentences import (
    PLANNING_NOTES,
    Shown,
    background_named,
    better_way,
    comparison_sentence,
    equal_shown,
    margin_text,
    outcome_sentence,
    shown_interval,
    signed_interval,
    signed_percent,
)
from iosched.core.present.worded import worded_judgement
from iosched.core.statistics.judge import at_last_look
from iosched.core.statistics.outcome import MARGIN
from iosched.core.statistics.verdict import cmd_metrics_of

STRIP = 30  # cells of a runs strip
MAX_BLOCKS = 4  # metrics in the table
MAX_TRADEOFFS = 5  # trade-off lines before "and N more"
MAX_INVALID = 3
MORE = ("--details: every metric, every comparison and the charts; --json: all of it as data; "
        "report FILE (of --save) shows it again")


@dataclass(frozen=True)
class Ways:
    """How a reader of a summary asks for more, in the words of the face showing it: the command line's flags
    (``CLI_WAYS``), or a screen's keys and fields."""

    details: str = "--details"  # where the rest of a list is: "and 3 more (--details)"
    runs: str = "--max-runs {n}"  # the most runs per variant until a verdict
    duration: str = "--duration {s}"  # a live alternation's length, in seconds
    runtime: str = "a longer --runtime"


CLI_WAYS = Ways()


def summary_lines(doc: ExperimentDoc, judgement: JudgementDoc, more: str | None = MORE,
                  ways: Ways = CLI_WAYS) -> list[str]:
    """A judged experiment's summary (see the module's docstring); ``more``: the last line, saying where the rest is
    (None: no such line); ``ways``: the face's words for asking for more."""
    judgement = worded_judgement(doc, judgement)
    lines = verdict_lines(doc, judgement, ways)
    table = runs_table(doc, judgement)
    if table:
        lines += ["", *table]
    trade = tradeoff_lines(doc, judgement, ways)
    if trade:
        lines += ["", *trade]
    tail = note_lines(doc, judgement, ways)
    if tail or more:
        lines.append("")
    lines += tail
    if more:
        lines.append(more)
    return lines


# --- the verdict in words -------------------------------------------------------------------------------------


def heading(doc: ExperimentDoc, judgement: JudgementDoc) -> str:
    """What ran: the workload, the device, runs per variant, the baseline and what it is judged on."""
    what = doc.workload.name
    if (background := background_named(doc.workload)) is not None:
        what += f" under {background}"
    device = doc.device.name if doc.device is not None else "an unknown device"
    if isinstance(doc, AlternationDoc):
        runs = f"live alternation every {doc.every_s:g} s for {doc.duration_s:g} s"
    else:
        made: dict[str, int] = {}
        for r in doc.runs:
            made[r.variant] = made.get(r.variant, 0) + 1
        per = sorted(set(made.values())) or [0]
        valid = {lb: s.n for lb, m in judgement.summaries.items() if (s := m.get(judgement.primary_metric))}
        runs = f"{'/'.join(map(str, per))} run{'' if per == [1] else 's'} per variant"
        if any(valid.get(lb, 0) < n for lb, n in made.items()):
            runs += f" ({sum(valid.values())} of {len(doc.runs)} valid)"
    base = doc.variants[0].label if doc.variants else "?"
    state = {"cancelled": " (cancelled: the runs that finished)", "interim": " (interim)"}.get(judgement.status, "")
    return (f"{what} on {device}, kernel {doc.kernel}: {runs}, each against {base}, judged on "
            f"{metric_label(judgement.primary_metric)}{state}")


def verdict_lines(doc: ExperimentDoc, judgement: JudgementDoc, ways: Ways = CLI_WAYS) -> list[str]:
    """The heading, then the verdict on the primary metric (winners first), the runs that disagree, the rank test
    where it disagrees, and what "no difference" could have missed."""
    judgement = worded_judgement(doc, judgement)
    metric = judgement.primary_metric
    primary = [c for c in judgement.comparisons if c.primary]
    better = better_way(metric, cmd_metrics_of(doc))
    lines = [heading(doc, judgement)]
    won = [c for c in primary if c.significant and c.ratio is not None]
    if better is not None:
        won.sort(key=lambda c: -(c.ratio or 1.0) if better == "higher" else (c.ratio or 1.0))
    same = [c for c in primary if not c.significant and c.ratio is not None]
    cannot = [c for c in primary if c.ratio is None]
    for c in won:
        lines.append(comparison_sentence(c, better if metric in cmd_metrics_of(doc) else None, p_value=False)
                     + role_cost(doc, judgement, c.variant))
    lines += no_difference(same, metric, alone=not won and not cannot, margin=judgement.margin, alpha=judgement.alpha)
    lines += [comparison_sentence(c) for c in cannot]
    splits = [g for g in judgement.run_groups if g.metric == metric]
    base = doc.variants[0].label if doc.variants else ""
    lines += [f"  {split_words(g, base)}" for g in splits]
    lines += [f"  {line}" for c in primary if (line := rank_words(c, directions=False))]
    if same and not splits and judgement.detectable is not None:
        r = judgement.detectable
        lines.append(f"  the smallest difference these runs could have shown: +{_pct(r - 1)} or -{_pct(1 - 1 / r)} "
                     "(80% power)")
    lines += [f"  {n}" for n in judgement.notes if n.startswith(PLANNING_NOTES) and (same or splits)]
    seq = doc.sequential
    if seq is not None and doc.status == "final" and any(c.outcome == "cannot-tell" for c in primary) \
            and (isinstance(doc, AlternationDoc) or len(doc.runs) >= seq.max_per_arm * len(doc.variants)):
        lines.append(f"  {ran_out(doc, judgement, ways)}")
    return lines


def ran_out(doc: ExperimentDoc, judgement: JudgementDoc, ways: Ways = CLI_WAYS) -> str:
    """--until-verdict that used its every run without a verdict: said so, with what would decide."""
    planning = judgement.planning
    n = planning.runs if planning is not None and planning.noise is not None else None
    diff = f"a {planning.difference:.0%} difference" if planning is not None else "a difference"
    if isinstance(doc, AlternationDoc):
        said = f"until a verdict: none within {ways.duration.format(s=f'{doc.duration_s:g}')} s, at the noise seen"
        if n is None:
            return f"{said}; no practical length would decide {diff}: quieter turns first (an idle machine)"
        return (f"{said}; about {n} blocks would decide {diff}: "
                f"{ways.duration.format(s=f'{n * 2 * len(doc.variants) * doc.every_s:.0f}')} s")
    assert doc.sequential is not None
    said = f"until a verdict: none within {ways.runs.format(n=doc.sequential.max_per_arm)}, at the noise seen"
    quieter = f"quieter runs first ({ways.runtime}, an idle machine)"
    if n is None:
        return f"{said}; no practical number of runs would decide {diff}: {quieter}"
    most = doc.sequential.max_per_arm
    if n > MOST_PER_ARM:
        return (f"{said}; {diff} would take about {n} runs per variant, past the most a compare runs "
                f"({MOST_PER_ARM}): {quieter}")
    if n <= most:  # enough for a 10% difference: the effect itself lies near the margin
        return (f"{said}; the difference lies near the margin: more runs "
                f"({ways.runs.format(n=min(2 * most, MOST_PER_ARM))}) would narrow it")
    return f"{said}; about {ways.runs.format(n=n)} would decide {diff}"


def _equal_shown(c: ComparisonDoc, alpha: float) -> Shown | None:
    """The one interval an undecided comparison shows: its equivalence interval (at 1 - 2 alpha), else its own."""
    return equal_shown(c.equal_interval, alpha) or shown_interval(c)


def no_difference(same: Sequence[ComparisonDoc], metric: str, alone: bool, margin: float | None = None,
                  alpha: float = 0.05) -> list[str]:
    """The comparisons that are not significant: each shown equal within the margin's band (its 1 - 2 alpha
    interval inside), or cannot tell, with why; one line for all when every one is equal and nothing else was
    said."""
    label = metric_label(metric)
    m = margin if margin is not None else MARGIN
    shown = [(c, s) for c in same if c.ratio is not None and (s := _equal_shown(c, alpha)) is not None]
    if c_old := [c for c, _ in shown if c.outcome is None]:  # a file judged before outcomes: as it was said
        return [comparison_sentence(c, p_value=False) for c in c_old]
    if alone and len(shown) > 1 and all(c.outcome == "equal" for c, _ in shown):
        each = ", ".join(f"{c.variant} {signed_percent(c.ratio or 1.0)} ({signed_interval(s)})" for c, s in shown)
        return [f"equal within {margin_text(m)} in {label}: {each}"]
    return [outcome_sentence(f"{c.variant} vs {c.baseline}", label, c.ratio or 1.0, s, c.outcome or "cannot-tell",
                             c.reasons, m) for c, s in shown]


def role_cost(doc: ExperimentDoc, judgement: JudgementDoc, variant: str) -> str:
    """For a job with roles, what the primary role's gain cost the others (its trade-off metric): "; the background
    lost 99.7% of its MB/s in 2 of 3 runs", when significant or when that variant's runs of it fall in groups."""
    job = doc.workload.job
    tradeoff = job.tradeoff if isinstance(job, CatalogJobDoc) and job.roles else None
    if tradeoff is None or tradeoff == judgement.primary_metric:
        return ""
    base = doc.variants[0].label
    ref = judgement.summaries.get(base, {}).get(tradeoff)
    split = next((g for g in judgement.run_groups if g.variant == variant and g.metric == tradeoff), None)
    if split is not None and ref is not None and ref.mean > 0:
        far = max(split.groups, key=lambda g: abs(math.log(math.sqrt(g.low * g.high) / ref.mean)))
        ratio = math.sqrt(far.low * far.high) / ref.mean
        if abs(math.log(ratio)) >= math.log(2.0):
            return f"; {_cost_words(tradeoff, ratio)} in {len(far.runs)} of {split.n} runs"
    c = next((c for c in judgement.comparisons if c.metric == tradeoff and c.variant == variant), None)
    shown = shown_interval(c) if c is not None else None
    if c is None or not c.significant or c.ratio is None or shown is None or shown.holds_no_change:
        return ""
    lo, hi = sorted((abs(1 - shown.low), abs(1 - shown.high)))
    return f"; {_cost_words(tradeoff, c.ratio)} ({shown.label} {_pct(lo)}–{_pct(hi)})"


def _cost_words(metric: str, ratio: float) -> str:
    role, base = split_metric(metric)
    label = metric_words(base)[0]
    who = f"the {ROLE_WORDS.get(role, f'{role} role')}" if role is not None else "all roles together"
    if ratio < 1:
        return f"{who} lost {_pct(1 - ratio)} of {'its' if role else 'their'} {label}"
    return f"{who} gained {_pct(ratio - 1)} {label}"


def split_words(g: RunSplitDoc, baseline: str) -> str:
    """"bfq: runs fall in two groups — 2 of 6 at 0.06–0.10 ms, 4 at 4.7–5.0 ms; the difference from none is not
    reliable"; one run apart from several: "bfq: 1 run of 6 stands apart — 2.4 ms, the other 5 at …"."""
    low, high = g.groups
    after = ("the differences from it are not reliable" if g.variant == baseline
             else f"the difference from {baseline} is not reliable")
    if g.kind == "outlier" and g.n > 3:
        alone, rest = (low, high) if len(low.runs) == 1 else (high, low)
        return (f"{g.variant}: 1 run of {g.n} stands apart in {metric_label(g.metric)} — "
                f"{range_text(g.metric, alone.low, alone.high)}, the other {len(rest.runs)} at "
                f"{range_text(g.metric, rest.low, rest.high)}; {after}")
    return (f"{g.variant}: runs fall in two groups in {metric_label(g.metric)} — {len(low.runs)} of {g.n} at "
            f"{range_text(g.metric, low.low, low.high)}, {len(high.runs)} at "
            f"{range_text(g.metric, high.low, high.high)}; {after}")


def rank_words(c: ComparisonDoc, directions: bool = True) -> str:
    """The rank cross-check where it parts from the t-test on log values (nothing otherwise); ``directions``:
    False says nothing when all that parts them is the direction of two differences neither test finds (a
    summary's noise; the details page says it)."""
    r = c.rank
    if r is None or not r.disagrees or c.p_value is None:
        return ""
    if not directions and r.disagrees == ["opposite directions"]:
        return ""
    how = {"t-test only": "only the t-test finds a difference", "rank test only": "only the ranks find a difference",
           "opposite directions": "the two point opposite ways"}
    ci = f", 95% CI {signed_percent(r.ci95[0])} to {signed_percent(r.ci95[1])}" if r.ci95 is not None else ""
    return (f"{c.variant} vs {c.baseline} by ranks: {signed_percent(r.ratio)} (Hodges-Lehmann{ci}), Mann-Whitney "
            f"p={_p(r.p_value)}, the t-test on log values p={_p(c.p_value)}, both before correction: "
            f"{'; '.join(how[h] for h in r.disagrees)}")


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}" if p < 0.01 else f"{p:.2f}"


def _pct(fraction: float) -> str:
    x = abs(fraction) * 100.0
    return f"{x:.1f}%" if x < 9.95 else f"{x:.0f}%"


def range_text(metric: str, low: float, high: float) -> str:
    """Runs' range in the metric's unit, latency in ms from a millisecond up: "0.19–0.24 ms", "4.7 ms"."""
    unit = metric_words(metric)[1]
    if unit == "µs" and high >= 1000.0:
        low, high, unit = low / 1000.0, high / 1000.0, "ms"
    a, b = _fig(low), _fig(high)
    text = a if a == b else f"{a}–{b}"
    return f"{text} {unit}" if unit else text


def _fig(x: float) -> str:
    """Two significant digits below 100, else si's."""
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return si(x)
    digits = max(0, 1 - math.floor(math.log10(abs(x))))
    return f"{x:.{digits}f}"


# --- the table of runs --------------------------------------------------------------------------------------


SIBLING = {"clat_p50_us": "clat_p99_us", "clat_p99_us": "clat_p50_us", "total_p50_us": "total_p99_us",
           "total_p99_us": "total_p50_us"}  # a latency's other percentile


def deciding_metrics(doc: ExperimentDoc, judgement: JudgementDoc) -> list[str]:
    """The primary metric and the two or three figures that decide the trade-off: tail latency and CPU per IO; for a
    job with roles, the primary role's other latency, the trade-off the job names and each other role's
    throughput; for a command, its other figures."""
    primary = judgement.primary_metric
    have = {k for s in judgement.summaries.values() for k, x in s.items() if x.n and x.mean and x.mean > 0}
    own = list(cmd_metrics_of(doc))
    roles = roles_of(have)
    if roles:
        role, base = split_metric(primary)
        sibling = SIBLING.get(base)
        job = doc.workload.job
        tradeoff = job.tradeoff if isinstance(job, CatalogJobDoc) else None
        others = [f"{r}:{'mb_s' if f'{r}:mb_s' in have else 'iops'}" for r in roles if r != role]
        wanted = [primary, f"{role}:{sibling}" if role and sibling else "", tradeoff or "", *others]
    elif doc.workload.cmd:
        wanted = [primary, *own, "wall_s", "bg:clat_p99_us", "cpu_us_per_io"]
    else:  # a replay judged on its latency in the block layer: its other percentile there (fio's is left out)
        wanted = [primary, SIBLING.get(primary, "clat_p99_us") if primary.startswith("total_") else "clat_p99_us",
                  "cpu_us_per_io"]
    return [k for k in dict.fromkeys(wanted) if k and k in have][:MAX_BLOCKS]


def runs_table(doc: ExperimentDoc, judgement: JudgementDoc) -> list[str]:
    """Per metric a block: the axis' ends, then per variant its runs as dots on the shared log axis, its mean and,
    when significant, its difference from the baseline."""
    judged = at_last_look(doc, judgement.primary_metric)
    labels = [v.label for v in doc.variants]
    runs: dict[str, dict[str, list[float]]] = {lb: {} for lb in labels}
    for r in judged.runs:
        if r.valid and r.variant in runs:
            for k, x in r.metrics.items():
                if x is not None:
                    runs[r.variant].setdefault(k, []).append(float(x))
    metrics = deciding_metrics(doc, judgement)
    name_w = max(14, *(len(lb) + 4 for lb in labels), *(min(22, len(_block_label(k)) + 2) for k in metrics))
    lines: list[str] = []
    for metric in metrics:
        block = _block(metric, labels, runs, judgement, name_w)
        if block:
            lines += block
    return lines


def _block(metric: str, labels: list[str], runs: dict[str, dict[str, list[float]]], judgement: JudgementDoc,
           name_w: int) -> list[str]:
    values = [x for lb in labels for x in runs[lb].get(metric, [])]
    if not values or min(values) <= 0 or not all(math.isfinite(x) for x in values):
        return []
    lo, hi = min(values), max(values)
    label = _block_label(metric)
    ends = f"{si(lo)}{si(hi):>{STRIP - len(si(lo))}}"
    diffs = {c.variant: c for c in judgement.comparisons if c.metric == metric}
    against = f"vs {labels[0]}" if any(c.significant for c in diffs.values()) else ""
    head = f"{label:<{name_w}}{ends}  {'mean':>7}  {against}".rstrip()
    if len(label) >= name_w:  # a long label on a line of its own, the axis' ends under it
        head = f"{label}\n{'':<{name_w}}{ends}  {'mean':>7}  {against}".rstrip()
    out = head.split("\n")
    for lb in labels:
        xs = runs[lb].get(metric, [])
        s = judgement.summaries.get(lb, {}).get(metric)
        mean = si(s.mean) if s is not None and s.n else "-"
        c = diffs.get(lb)
        diff = signed_percent(c.ratio) if c is not None and c.significant and c.ratio is not None else ""
        out.append(f"  {lb:<{name_w - 2}}{runs_strip(xs, lo, hi)}  {mean:>7}  {diff}".rstrip())
    return out


def _block_label(metric: str) -> str:
    label, unit, *_ = metric_words(metric)
    role, base = split_metric(metric)
    if role is not None:
        label = f"{role} {metric_words(base)[0]}"
    return f"{label} ({unit})" if unit else label


def runs_strip(values: Sequence[float], lo: float, hi: float, width: int = STRIP) -> str:
    """Runs as dots on a log axis from ``lo`` to ``hi`` (positive): "·" an empty cell, "•" one run, a digit for as
    many runs in one cell (+ for ten or more)."""
    cells = [0] * width
    span = math.log(hi) - math.log(lo) if hi > lo else 0.0
    for x in values:
        if not (x > 0 and math.isfinite(x)):
            continue
        at = (width - 1) // 2 if span <= 0 else round((math.log(x) - math.log(lo)) / span * (width - 1))
        cells[min(width - 1, max(0, at))] += 1
    return "".join("·" if n == 0 else "•" if n == 1 else str(n) if n < 10 else "+" for n in cells)


# --- trade-offs and notes -------------------------------------------------------------------------------------


def tradeoff_lines(doc: ExperimentDoc, judgement: JudgementDoc, ways: Ways = CLI_WAYS) -> list[str]:
    """The significant differences in the other metrics, one line each (the primary's twin, MB/s beside IOPS, and a
    role job's trade-off already in its verdict line left out)."""
    primary = judgement.primary_metric
    ratios = {c.variant: c.ratio for c in judgement.comparisons if c.primary}
    job = doc.workload.job
    in_verdict = job.tradeoff if isinstance(job, CatalogJobDoc) and job.roles else None
    shown: list[str] = []
    for c in judgement.comparisons:
        if c.primary or not c.significant or c.ratio is None or c.metric == in_verdict:
            continue
        twin = ratios.get(c.variant)
        if _twins(primary, c.metric) and twin is not None and abs(math.log(c.ratio / twin)) < 0.01:
            continue  # the same figure in other units
        shown.append(comparison_sentence(c, better_way(c.metric, cmd_metrics_of(doc)) if c.metric in
                                         cmd_metrics_of(doc) else None, p_value=False))
    if len(shown) > MAX_TRADEOFFS:
        left = len(shown) - MAX_TRADEOFFS + 1
        shown = [*shown[:MAX_TRADEOFFS - 1], f"and {left} more significant differences ({ways.details})"]
    return shown


def _twins(a: str, b: str) -> bool:
    """IOPS and MB/s of one role (or of all): at one block size, one figure."""
    ra, ba = split_metric(a)
    rb, bb = split_metric(b)
    return ra == rb and {ba, bb} == {"iops", "mb_s"}


def note_lines(doc: ExperimentDoc, judgement: JudgementDoc, ways: Ways = CLI_WAYS) -> list[str]:
    """What matters to the verdict beside it: a busy machine, invalid runs, a timed replay that fell behind, what a
    replay's latency is, one line each."""
    judgement = worded_judgement(doc, judgement)
    notes = [n for n in judgement.notes if not n.startswith(PLANNING_NOTES)]
    timing = replay_timing(doc)
    below = latency_note([r.latency for r in doc.runs if r.latency is not None])  # a replay's latency, and fio's
    said = list(dict.fromkeys([*([timing] if timing else []), *([below] if below else []), *notes, *doc.notes]))
    busy = [n for n in said if n.startswith("busy machine")]
    if len(busy) > 1:  # one is the point (the runs vary with another load); which loads, --details lists
        said = [n for n in said if n not in busy[1:]]
        said.insert(said.index(busy[0]) + 1, f"busy machine: and {len(busy) - 1} more such notes ({ways.details})")
    lines = [*summary_condition_lines(doc.conditions, doc.runs), *(f"note: {n}" for n in said)]
    bad = judgement.invalid
    lines += [f"invalid: {b}" for b in bad[:MAX_INVALID]]
    if len(bad) > MAX_INVALID:
        lines.append(f"invalid: and {len(bad) - MAX_INVALID} more runs ({ways.details})")
    return lines


def replay_timing(doc: ExperimentDoc) -> str | None:
    """A timed replay's runs against the capture's timing in one line (None for anything else): how far behind
    they fell, and how many fell past the bound that makes a run invalid."""
    lags = [r.replay for r in doc.runs if r.replay is not None]
    if not lags:
        return None
    worst = max(x.lag_s for x in lags)
    behind = [x for x in lags if x.lag_s > x.bound_s]
    if not behind:
        return (f"timed replay: every run kept the capture's timing to within {seconds_text(worst)} "
                f"(a run more than {seconds_text(max(x.bound_s for x in lags))} behind would be invalid)")
    return (f"timed replay: {len(behind)} of {len(lags)} run(s) fell behind the capture's timing by more than "
            f"{seconds_text(min(x.bound_s for x in behind))} (up to {seconds_text(worst)}) and are invalid: the "
            "device or this machine could not keep the captured pace")
