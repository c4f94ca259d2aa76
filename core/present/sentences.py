"""Every sentence about a difference, written from its numbers: the one writer of words the judges' numbers and
reason codes are said in (core/statistics returns numbers and codes only; tests/unit/statistics/test_no_sentences.py
holds it to that). A compare's comparisons, a matrix's cells and its summary per variant, a fleet's pooled rows, the
interim estimates while runs go on, a matrix's looks, the planning figures, the methods and why something cannot be
judged: the text pages (summary.py, report.py, matrix.py, fleet_report.py), the TUI, and `--json` and a saved file's
sentence fields (worded.py, at encode time) all say them here.

One rule holds them together: a sentence never calls a difference not significant beside an interval that leaves
out no change, nor significant beside one that holds it. An interval that carries the correction its p-value
carries (the primary metric's Holm-consistent interval, a matrix cell's) agrees with it by construction; one that
does not (a secondary metric's, a pooled one's) is called what it is: "before correcting for N comparisons".
tests/unit/present/test_sentences.py holds every sentence of the compare, matrix and fleet pages to it over
generated judgements.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from iosched.core.advice.plan import duration_words
from iosched.core.documents.document import (
    AlternationDoc,
    CellDoc,
    ComparisonDoc,
    ExperimentDoc,
    MatrixDoc,
    MatrixSequentialDoc,
    PlanningDoc,
    PooledRowDoc,
    SequentialDoc,
    WorkloadDoc,
)
from iosched.core.documents.metrics import metric_label, metric_words, split_metric
from iosched.core.experiment.events import LookReached
from iosched.core.statistics.outcome import MARGIN
from iosched.core.statistics.planning import PilotPlan
from iosched.core.statistics.verdict import Standing

# Which way is better, where the metric says it by itself (a command's own figure says it with --cmd-metric).
HIGHER_IS_BETTER = {"iops", "mb_s", "fairness_jain", "share_min_max", "share"}
# How the notes that plan the next experiment begin (a front end shows them beside the verdict, not among the notes).
PLANNING_NOTES = ("planning: ", "at this noise ", "no planning figure")


# --- numbers ------------------------------------------------------------------------------------------------------


def _num(x: float) -> str:
    return f"{x:.1f}" if abs(x) < 9.95 else f"{x:.0f}"


def signed_percent(ratio: float) -> str:
    d = (ratio - 1.0) * 100.0
    return ("+" if d >= 0 else "-") + _num(abs(d)) + "%"


def relative_text(ratio: float, ci_low: float, ci_high: float) -> str:
    """A ratio as a signed difference with its 95% CI, the interval taken from the log scale as the verdict's:
    "-37% (-43 … -30)". Asymmetric, and never below -100% (a ratio is positive)."""
    def pct(r: float) -> str:
        return signed_percent(r)[:-1]

    return f"{signed_percent(ratio)} ({pct(ci_low)} … {pct(ci_high)})"


def fmt_p(p: float, adjusted: bool) -> str:
    text = "p<0.001" if p < 0.001 else f"p={p:.3f}" if p < 0.01 else f"p={p:.2f}"
    return ("adjusted " + text) if adjusted else text


def level_text(level: float) -> str:
    """A confidence as a person reads it: "95%", "97.5%", "99.88%" (never rounded up to 100%)."""
    pct = level * 100.0
    digits = 1
    while round(pct, digits) >= 100.0 and digits < 6:
        digits += 1
    text = f"{pct:.{digits}f}".rstrip("0").rstrip(".")
    return f"{text}%"


def minus_percent(r: float) -> str:
    """A matrix's ratio as a signed whole percent, with a true minus: "−8%"."""
    return f"{(r - 1) * 100:+.0f}%".replace("-", "−")


# --- why something cannot be judged ---------------------------------------------------------------------------------

REASONS: dict[str, str] = {
    "few-runs": "fewer than 2 valid runs of {who}",
    "not-finite": "{who} has a value that is not a finite number",
    "not-positive": "{who} has a zero or negative value, so a ratio is undefined",
    "no-variance": "no run-to-run variance (identical values), so the noise cannot be estimated",
    "too-wide": "the values lie too far apart for a ratio and its interval to be a number",
    "few-blocks": "fewer than 2 complete blocks of turns",
    "turn-not-positive": "a turn has a value that is not a finite positive number",
    "no-turn-variance": "no turn-to-turn variance (identical differences), so the noise cannot be estimated",
    "same-values": "every run has the same value, so ranks cannot order them",
    "few-runs-to-split": "fewer than 3 runs, too few to tell groups apart",
    "run-not-positive": "a run has a value that is not a finite positive number",
    "first-look": "the first look ({first} runs per cell) was not reached",
    "no-estimate": "no estimate",
    "few-hosts": "fewer than two hosts could be judged",
    "not-poolable": "every host needs a finite log ratio and a positive standard error",
    "hosts-apart": "the hosts' ratios are too far apart to pool",
}


def background_named(wl: WorkloadDoc) -> str | None:
    """The background job a heading names after the workload's own name: None without one, or when the name says
    it already (a start-up's "py42 beside seq-writers-1", which is not to read "… under seq-writers-1" again)."""
    if wl.background is None or wl.name.endswith(f" beside {wl.background.name}"):
        return None
    return wl.background.name


def reason_words(code: str | None, baseline: str = "the baseline", variant: str = "the variant",
                 first: int | None = None) -> str:
    """A reason code in words, its side ("few-runs:variant") named by its label; anything else (an older file's
    words) as it is."""
    if code is None:
        return "no estimate"
    key, _, side = code.partition(":")
    words = REASONS.get(key)
    if words is None or (side and side not in ("baseline", "variant")):
        return code
    return words.format(who=baseline if side == "baseline" else variant, first=first if first is not None else "?")


# --- one comparison -----------------------------------------------------------------------------------------------


def better_way(metric: str, own: dict[str, str | None] | None = None) -> str | None:
    """"higher" or "lower": which way the metric is better; None when nobody said (a command's own figure)."""
    if own is not None and metric in own:
        return own[metric]
    base = split_metric(metric)[1]
    if base in HIGHER_IS_BETTER:
        return "higher"
    if base.startswith(("clat_", "sched_", "device_", "total_", "dev_", "cpu_", "tracer_")) or base == "wall_s":
        return "lower"
    return None


@dataclass(frozen=True)
class Shown:
    """The interval a sentence shows: its ends (ratios), its confidence, and whether it carries the correction."""

    low: float
    high: float
    level: float
    corrected: bool

    @property
    def holds_no_change(self) -> bool:
        return self.low <= 1.0 <= self.high

    @property
    def label(self) -> str:
        return f"{level_text(self.level)} CI"


def shown_interval(c: ComparisonDoc) -> Shown | None:
    """What a comparison's sentence shows: its own interval (a judgement's), else the plain 95% one (a document
    judged before intervals were written), which carries no correction."""
    if c.interval is not None and c.interval_level is not None:
        return Shown(c.interval[0], c.interval[1], c.interval_level, c.primary)
    if c.ci95 is not None:
        return Shown(c.ci95[0], c.ci95[1], 0.95, False)
    return None


def effect_words(metric: str, baseline: str, variant: str, ratio: float, low: float, high: float,
                 ci: str = "95% CI") -> str:
    """'bfq: 37% fewer IOPS than none (95% CI 30–43%)' when the interval is on one side of 1, else signed."""
    label, _unit, more, fewer = metric_words(metric)
    if high < 1.0:
        return (f"{variant}: {_num((1 - ratio) * 100)}% {fewer} {label} than {baseline} "
                f"({ci} {_num((1 - high) * 100)}–{_num((1 - low) * 100)}%)")
    if low > 1.0:
        return (f"{variant}: {_num((ratio - 1) * 100)}% {more} {label} than {baseline} "
                f"({ci} {_num((low - 1) * 100)}–{_num((high - 1) * 100)}%)")
    return (f"{variant} vs {baseline}: {label} {signed_percent(ratio)} "
            f"({ci} {signed_percent(low)} to {signed_percent(high)})")


def signed_interval(shown: Shown) -> str:
    return f"{shown.label} {signed_percent(shown.low)} to {signed_percent(shown.high)}"


def before_correction(family: int | None) -> str:
    return (f"before correcting for {family} comparisons" if family is not None and family > 1
            else "before correction")


def _judged(c: ComparisonDoc, better: str | None) -> str:
    return "" if better is None or c.ratio is None else (": better" if (c.ratio > 1) == (better == "higher")
                                                         else ": worse")


def comparison_sentence(c: ComparisonDoc, better: str | None = None, adjusted: bool | None = None,
                        p_value: bool = True) -> str:
    """One comparison in words, as its numbers allow (see the module's rule), with the interval that carries its
    correction. ``better``: which way is better, for a figure whose judgement should say "better" or "worse" (a
    command's own, when the user said); ``adjusted``: the p-value carries a correction (default: any but a lone
    primary comparison); ``p_value``: False leaves it out (a summary line)."""
    label = metric_label(c.metric)
    v, b = c.variant, c.baseline
    shown = shown_interval(c)
    if c.ratio is None or shown is None:
        return f"{v} vs {b}, {label}: cannot judge ({reason_words(c.cannot_judge, b, v)})"
    if adjusted is None:
        adjusted = not c.primary or (c.family or 1) > 1
    p = "" if c.p_adjusted is None or not p_value else f", {fmt_p(c.p_adjusted, adjusted)}"
    if c.significant:
        if not shown.holds_no_change:
            words = effect_words(c.metric, b, v, c.ratio, shown.low, shown.high, shown.label)
            return f"{words}{p}{_judged(c, better)}"
        return (f"{v} vs {b}: {label} {signed_percent(c.ratio)} ({signed_interval(shown)}){p}: significant after "
                "correction, though this interval holds no change")
    if shown.holds_no_change:
        return (f"{v} vs {b}: no significant difference in {label}: {signed_percent(c.ratio)} "
                f"({signed_interval(shown)}){p}")
    return (f"{v} vs {b}, {label}: {signed_percent(c.ratio)} {before_correction(c.family)} "
            f"({signed_interval(shown)}); not significant after{p}")


def verdict_sentence(c: ComparisonDoc, adjusted: bool, better: str | None = None) -> str:
    """The sentence a comparison's ``verdict`` field holds: its 95% (or repeated 95%) interval, or where that leaves
    out no change and the comparison is a primary one not called significant, the interval that carries its
    correction; a secondary comparison's, before the correction its p-value carries."""
    label = metric_label(c.metric)
    v, b = c.variant, c.baseline
    if c.ratio is None or c.ci95 is None or c.p_adjusted is None:
        return f"{v} vs {b}, {label}: cannot judge ({reason_words(c.cannot_judge, b, v)})"
    p_text = fmt_p(c.p_adjusted, adjusted)
    lo, hi = c.ci95
    if c.significant:
        return f"{effect_words(c.metric, b, v, c.ratio, lo, hi)}, {p_text}{_judged(c, better)}"
    shown = (lo, hi, 0.95)
    family = c.family if not c.primary else None
    if c.primary and c.interval is not None and c.interval_level is not None and not lo <= 1 <= hi:
        shown, family = (*c.interval, c.interval_level), None
    low, high, level = shown
    interval = f"({level_text(level)} CI {signed_percent(low)} to {signed_percent(high)})"
    if low <= 1.0 <= high:
        return f"{v} vs {b}: no significant difference in {label}: {signed_percent(c.ratio)} {interval}, {p_text}"
    before = f"before correcting for {family} comparisons" if family is not None and family > 1 else "before correction"
    return f"{v} vs {b}, {label}: {signed_percent(c.ratio)} {before} {interval}; not significant after, {p_text}"


# --- the three outcomes ---------------------------------------------------------------------------------------------

OUTCOME_REASONS = {"two-groups": "its runs disagree (two groups, below)", "too-few-runs": "too few valid runs",
                   "unjudged": "it could not be judged", "replay-behind": "a replay fell behind its capture"}


def margin_text(margin: float, better: str | None = None, minus: str = "-") -> str:
    """A margin as the band it stands for, on the log scale as the outcome decides it (core/statistics/outcome.py):
    "-9.1% to +10%" for 10%; ``better`` ("higher" or "lower"): only the end a change must pass the better way to
    matter, "+10%" or "-9.1%"; ``minus``: the sign a page writes below no change ("−" on advise's)."""
    low = signed_percent(1.0 / (1.0 + margin)).replace("-", minus)
    high = signed_percent(1.0 + margin)
    return high if better == "higher" else low if better == "lower" else f"{low} to {high}"


def equal_shown(interval: tuple[float, float] | None, alpha: float) -> Shown | None:
    """An equivalence interval as a sentence shows it: at 1 - 2 alpha, uncorrected."""
    return None if interval is None else Shown(interval[0], interval[1], 1.0 - 2.0 * alpha, False)


def outcome_sentence(who: str, label: str, ratio: float, shown: Shown, outcome: str, reasons: Sequence[str],
                     margin: float, uncorrected: str = "") -> str:
    """A comparison that is not significant, as every page says one (compare's summary, a matrix's cell, a fleet's
    pooled row): "bfq vs none: equal within -9.1% to +10% in IOPS: +1.2% (90% CI -3.0% to +5.1%)", or "… cannot
    tell in IOPS: +4.0% (90% CI -8.0% to +18%) reaches outside -9.1% to +10%", with why; ``uncorrected``: where
    the test's interval leaves out no change before the correction its p-value carries, that said after it."""
    iv = f"({signed_interval(shown)})"
    m = margin_text(margin)
    tail = f"; {uncorrected}" if uncorrected else ""
    if outcome == "equal":
        return f"{who}: equal within {m} in {label}: {signed_percent(ratio)} {iv}{tail}"
    why = [f"reaches outside {m}" if r == "too-wide" else OUTCOME_REASONS.get(r, r) for r in reasons]
    return (f"{who}: cannot tell in {label}: {signed_percent(ratio)} {iv}" + (f" {'; '.join(why)}" if why else "")
            + tail)


# --- a compare's judgement ------------------------------------------------------------------------------------------


def method_line(doc: ExperimentDoc, alpha: float) -> str:
    seq = doc.sequential
    test = ("paired t-test on log ratios within A B B A blocks of turns" if isinstance(doc, AlternationDoc)
            else "Welch's t-test on log values")
    text = f"{test}, each variant against the baseline {doc.variants[0].label}, Holm-corrected, alpha {alpha:g}"
    if seq is not None:
        looks = f"{len(seq.looks)} look{'' if len(seq.looks) == 1 else 's'}"
        text += (f"; sequential: {looks}, boundary p<{seq.level:.4f} at each "
                 f"(Pocock-style, overall alpha {alpha:g})")
    return text


def sequential_method(seq: SequentialDoc | MatrixSequentialDoc) -> str:
    """A boundary's method, as its document says it."""
    if isinstance(seq, MatrixSequentialDoc):
        return MATRIX_SEQUENTIAL_METHOD
    return "Pocock constant per-look level, calibrated by seeded simulation of the look schedule"


MATRIX_SEQUENTIAL_METHOD = ("group-sequential Holm over the cells (Maurer & Bretz): each cell a Pocock constant "
                            "per-look level for alpha / (cells undecided), calibrated by seeded simulation of the look "
                            "schedule")


def invalid_lines(doc: ExperimentDoc | MatrixDoc) -> list[str]:
    """Each invalid run, with why: "run 3 (bfq): fio exited 1"; a matrix's with its workload."""
    if isinstance(doc, MatrixDoc):
        return [f"run {r.slot + 1} ({r.workload}, {r.variant}): {r.invalid_reason}" for r in doc.runs if not r.valid]
    return [f"run {r.index + 1} ({r.variant}): {r.invalid_reason}" for r in doc.runs if not r.valid]


def judgement_notes(doc: ExperimentDoc, metric: str, planning: PlanningDoc | None, split: Sequence[str],
                    left_out: int) -> list[str]:
    """A compare's notes: runs left out after its last look, what more runs would show (or why no figure can say:
    ``split``, the variants whose runs disagree on ``metric``). An odd number of runs is no note: the default three
    would warn about itself (plan_order keeps its A B B A blocks whole as far as they go)."""
    notes: list[str] = []
    if planning is not None and planning.noise is not None and not split:
        notes.append(planning_note(doc, metric, planning))
    if split:  # more runs of the same would only show the same groups again: no planning figure then
        notes.append(f"no planning figure: the runs of {', '.join(dict.fromkeys(split))} disagree among themselves, "
                     "and more runs would not settle which of them is typical; what differs between them would")
    if left_out:
        notes.insert(0, f"judged at the last planned look: {left_out} later run(s) left out of the statistics")
    return notes


def planning_note(doc: ExperimentDoc, metric: str, planning: PlanningDoc) -> str:
    """"planning: about 12 runs per variant would detect a 10% difference in IOPS with 80% power …"."""
    assert planning.noise is not None
    alternate = isinstance(doc, AlternationDoc)
    sd, n, label = planning.noise, planning.runs, metric_label(metric)
    unit = "blocks (A B B A)" if alternate else "runs per variant"
    per = "block" if alternate else "run"
    diff = f"{planning.difference * 100:.0f}%"
    if n is None:
        return (f"at this noise ({sd * 100:.0f}% per {per}) no practical number of {unit} would detect a {diff} "
                f"difference in {label}")
    extra = ""
    if isinstance(doc, AlternationDoc) and doc.every_s:
        extra = f" (about {n * 2 * len(doc.variants) * doc.every_s:.0f} s of alternation)"
    return (f"planning: about {n} {unit}{extra} would detect a {diff} difference in {label} with 80% power at the "
            f"noise seen here ({sd * 100:.1f}% per {per}, on the log scale)")


# --- a matrix's judgement -------------------------------------------------------------------------------------------


def cell_sentence(c: CellDoc, first_look: int | None = None, alpha: float = 0.05) -> str:
    """A matrix cell's verdict: "4k-read: bfq: 8% fewer IOPS than none (95% CI 3–12%), adjusted p=0.01"; one not
    significant as compare's summary says it, equal within the margin or cannot tell ("4k-read: bfq vs none: equal
    within -9.1% to +10% in IOPS: …"), an older file's (no outcome) as it was said."""
    label = metric_words(c.metric)[0]
    if c.ratio is None or c.ci95 is None or c.p_adjusted is None:
        why = reason_words(c.cannot_judge, f"{c.baseline} on {c.workload}", f"{c.variant} on {c.workload}",
                           first_look)
        return f"{c.workload}: cannot judge {label} ({why})"
    p = fmt_p(c.p_adjusted, adjusted=True)
    lo, hi = c.ci95
    if c.significant:
        at = f", decided at {c.decided_at} runs" if c.decided_at else ""
        return f"{c.workload}: {effect_words(c.metric, c.baseline, c.variant, c.ratio, lo, hi)}, {p}{at}"
    shown = equal_shown(c.equal_interval, alpha)
    if c.outcome in ("equal", "cannot-tell") and shown is not None:
        after = ("" if lo <= 1.0 <= hi else f"before correcting for the matrix's comparisons (95% CI "
                 f"{signed_percent(lo)} to {signed_percent(hi)}), not significant after, {p}")
        return outcome_sentence(f"{c.workload}: {c.variant} vs {c.baseline}", metric_label(c.metric), c.ratio, shown,
                                c.outcome, c.reasons, MARGIN, after)
    # The 95% CI where it holds no change; else the interval that carries the matrix's correction (a judgement of
    # today's, which holds it) or, in an older one without it, what holds.
    level = 0.95
    if not lo <= 1.0 <= hi and c.interval is not None and c.interval_level is not None:
        (lo, hi), level = c.interval, c.interval_level
    if not lo <= 1.0 <= hi:
        return (f"{c.workload}: {label} {minus_percent(c.ratio)} before correcting for the matrix's comparisons "
                f"(95% CI {minus_percent(lo)} to {minus_percent(hi)}); not significant after, {p}")
    return (f"{c.workload}: no significant difference in {label} ({minus_percent(c.ratio)}, "
            f"{level_text(level)} CI {minus_percent(lo)} to {minus_percent(hi)}), {p}")


def variant_sentence(cells: Sequence[CellDoc], variant: str) -> str:
    """"bfq: fewer IOPS on 3 of 5 workloads (−8% to −37%); equal within -9.1% to +10% on 1; cannot tell on 1"; when
    each workload is judged on its own metric (a contention group), each difference is named with its workload:
    "bfq: lower foreground p50 latency on interactive-under-writes (−100%); cannot tell on 5 other of 6
    workloads"."""
    mine = [c for c in cells if c.variant == variant]
    metrics = list(dict.fromkeys(c.metric for c in mine))
    if len(metrics) == 1:
        return f"{variant}: " + _clauses(mine, metrics[0])
    # Each workload its own metric: the differences by workload, then how many showed none.
    parts = []
    for c in mine:
        if c.significant and c.ratio is not None:
            label, _unit, more, fewer = metric_words(c.metric)
            parts.append(f"{more if c.ratio > 1 else fewer} {label} on {c.workload} ({minus_percent(c.ratio)})")
    for outcome, count in _undecided(mine):
        parts.append(f"{outcome} on {count}{' other' if parts else ''} of {len(mine)} workloads")
    unjudged = sum(1 for c in mine if c.cannot_judge)
    if unjudged:
        parts.append(f"cannot judge {unjudged} of {len(mine)} workloads")
    return f"{variant}: " + "; ".join(parts)


def _undecided(mine: Sequence[CellDoc]) -> list[tuple[str, int]]:
    """The judged cells not significant, counted by outcome as compare's summary words them: "equal within -9.1% to
    +10%", "cannot tell" (outside the band, or why); an older file's cells (no outcome): "no significant
    difference"."""
    words = {"equal": f"equal within {margin_text(MARGIN)}", "cannot-tell": "cannot tell", None: NO_DIFFERENCE}
    counts: dict[str, int] = {}
    for c in mine:
        if not c.significant and not c.cannot_judge:
            key = words.get(c.outcome, NO_DIFFERENCE)
            counts[key] = counts.get(key, 0) + 1
    order = list(words.values())
    return sorted(counts.items(), key=lambda kv: order.index(kv[0]))


NO_DIFFERENCE = "no significant difference"  # an older file's words, judged before outcomes


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
            span = minus_percent(lo) if len(sig) == 1 else f"{minus_percent(lo)} to {minus_percent(hi)}"
            parts.append(f"{word} {label} on {len(sig)} of {n} workload{'s' if n > 1 else ''} ({span})")
    for outcome, count in _undecided(mine):
        parts.append(f"{outcome} on {count}" if parts else
                     f"{outcome} in {label} on {count} of {n} workload{'s' if n > 1 else ''}")
    unjudged = [c for c in mine if c.cannot_judge]
    if unjudged:
        first = reason_words(unjudged[0].cannot_judge, f"{unjudged[0].baseline} on {unjudged[0].workload}",
                             f"{unjudged[0].variant} on {unjudged[0].workload}")
        parts.append(f"cannot judge {label} on {len(unjudged)} of {n} workload{'s' if n > 1 else ''} "
                     f"({first}{', …' if len(unjudged) > 1 else ''})")
    return "; ".join(parts)


def matrix_planning_lines(cells: Sequence[CellDoc], variants: int) -> list[str]:
    """What the undecided cells would need: runs per variant to detect a 10% difference at each one's noise, at
    Holm's first step over the whole matrix, 80% power; the matrix's figure is the largest. Empty when every cell
    decided (or none could be judged)."""
    need = [(c, c.planning) for c in cells if c.planning is not None and c.planning.noise is not None]
    if not need:
        return []
    comparisons = sum(1 for c in cells if not c.is_baseline and c.p_value is not None)
    diff = f"{need[0][1].difference * 100:.0f}%"
    lines = []
    for c, p in need:
        assert p.noise is not None
        what = "no practical number of runs" if p.runs is None else f"about {p.runs} runs per variant"
        lines.append(f"{c.workload}, {c.variant}: {what} would detect a {diff} difference at its noise "
                     f"({p.noise * 100:.1f}% per run)")
    known = [p.runs for _, p in need if p.runs is not None]
    if known:
        most = max(known)
        lines.insert(0, f"planning: about {most} runs per variant ({most * variants} per workload) would detect a "
                        f"{diff} difference in every undecided cell at the noise seen (80% power, Holm over "
                        f"{comparisons}); --until-verdict stops as soon as the data allow")
    return lines


def matrix_method(doc: MatrixDoc, correction: str) -> str | None:
    """How a sequential matrix was judged (None: Holm at a fixed level, said in the header)."""
    seq = doc.sequential
    if correction == "sequential holm" and seq is not None:
        return (f"{MATRIX_SEQUENTIAL_METHOD}; looks at {', '.join(map(str, seq.looks))} runs per cell, "
                f"per-look level {seq.levels[0]:.4f} rising to {seq.levels[-1]:.4f} as cells decide")
    if seq is not None:
        return "Holm over the cells at a fixed level: the sequential boundary was for another metric"
    return None


def look_words(e: LookReached) -> str:
    """What a look found, for the progress stream: "look at 4 runs per cell: 3 of 6 cells decided (…)"."""
    text = f"look at {e.look} runs per cell: {e.decided} of {e.cells} cells decided"
    if e.now:
        text += f" (now: {', '.join(e.now)})"
    if e.decided == e.cells:
        return text + "; stopping"
    return text + (f"; next look at {e.next_look}" if e.next_look is not None else "; last look passed")


def cell_interval_text(ratio: float, low: float, high: float, significant: bool) -> str:
    """A matrix cell's ratio and its interval: "×0.80 (0.68–0.95)*"."""
    return f"×{ratio:.2f} ({low:.2f}–{high:.2f}){'*' if significant else ' '}"


# --- while it runs --------------------------------------------------------------------------------------------------

TOO_WIDE_YET = 100.0  # an interim interval past ×100 (or ÷100) says nothing yet: it is not printed as a number


def interim_estimate(low: float, high: float) -> bool:
    """Whether an interim interval can be drawn as one: within ÷100 and ×100 of no change, and finite."""
    return all(math.isfinite(x) and 1.0 / TOO_WIDE_YET <= x <= TOO_WIDE_YET for x in (low, high))


def interim_lines(s: Standing) -> list[str]:
    """Where a compare stands after a run: each variant's interim estimate (never "significant" unless the boundary
    was crossed at a planned look), the next look, or the boundary crossed."""
    n = s.count
    if n < 2:
        return []
    unit = "blocks" if s.alternate else "runs per variant"
    label = metric_label(s.metric)
    if s.decided_at is not None:
        out = [_looked_line(c, label) for c in s.looked]
        return [*out, f"boundary crossed at {s.decided_at} {unit}: stopping"]
    out = []
    for e in s.estimates:
        if e.ratio is None or e.low is None or e.high is None:
            out.append(f"interim, {n} {unit}: {e.variant} vs {s.baseline}: cannot judge yet "
                       f"({reason_words(e.reason, s.baseline, e.variant)})")
        elif not interim_estimate(e.low, e.high):
            out.append(f"interim, {n} {unit}: {e.variant} vs {s.baseline} {label} {signed_percent(e.ratio)} "
                       f"({level_text(s.level)} CI too wide to say yet)")
        else:
            out.append(f"interim, {n} {unit}: {e.variant} vs {s.baseline} {label} {signed_percent(e.ratio)} "
                       f"({level_text(s.level)} CI {signed_percent(e.low)} to {signed_percent(e.high)})")
    if s.looks:
        nxt = [x for x in s.looks if x > n]
        out.append(f"next look at {nxt[0]} {unit}" if nxt else "last look passed: no boundary crossing")
    return out


def _looked_line(c: ComparisonDoc, label: str) -> str:
    """A comparison at the look where the boundary was crossed, with its interval at the boundary's level."""
    if c.ratio is None or c.interval is None or c.interval_level is None:
        why = reason_words(c.cannot_judge, c.baseline, c.variant)
        return f"{c.variant} vs {c.baseline}, {label}: cannot judge ({why})"
    lo, hi = c.interval
    ci = f"{level_text(c.interval_level)} CI"
    if c.significant:
        return effect_words(c.metric, c.baseline, c.variant, c.ratio, lo, hi, ci) + ", across the boundary"
    return (f"{c.variant} vs {c.baseline}: {label} {signed_percent(c.ratio)} ({ci} {signed_percent(lo)} to "
            f"{signed_percent(hi)}), not across the boundary")


def interim_words(s: Standing) -> str:
    """"so far: mq-deadline -54% (-85 to +37), bfq -42% (too wide to say yet)": the estimates, never a verdict."""
    def signed(ratio: float) -> str:
        d = (ratio - 1.0) * 100.0
        return f"{'+' if d >= 0 else '-'}{abs(d):.0f}%" if abs(d) >= 9.95 else f"{'+' if d >= 0 else '-'}{abs(d):.1f}%"

    parts = []
    for e in s.estimates:
        if e.ratio is None or e.low is None or e.high is None:
            continue
        ci = (f"{signed(e.low)[:-1]} to {signed(e.high)[:-1]}" if interim_estimate(e.low, e.high)
              else "too wide to say yet")
        parts.append(f"{e.variant} {signed(e.ratio)} ({ci})")
    return "so far: " + ", ".join(parts) if parts else ""


# --- a fleet's pooled rows --------------------------------------------------------------------------------------------


def pooled_sentence(row: PooledRowDoc, metric: str, baseline: str, alpha: float, family: int) -> str:
    """A pooled variant in words from its numbers (``family``: the pooled comparisons its correction covers); the
    hosts' agreement and who differs after it. A variant that could not be pooled: why."""
    if row.ratio is None or row.ci_low is None or row.ci_high is None or row.p_adjusted is None:
        return f"{row.variant} vs {baseline}: {reason_words(row.sentence or 'few-hosts')}"
    shown = Shown(row.ci_low, row.ci_high, 0.95, False)
    p = fmt_p(row.p_adjusted, True)
    sig = row.p_adjusted < alpha
    if sig and not shown.holds_no_change:
        words = f"{effect_words(metric, baseline, row.variant, row.ratio, shown.low, shown.high)}, {p}"
    elif sig:
        words = (f"{row.variant} vs {baseline} over the hosts: {signed_percent(row.ratio)} ({signed_interval(shown)}), "
                 f"{p}: significant after correction, though this interval holds no change")
    elif row.outcome in ("equal", "cannot-tell") and (equal := equal_shown(row.equal_interval, alpha)) is not None:
        after = ("" if shown.holds_no_change else
                 f"{before_correction(family)} ({signed_interval(shown)}), not significant after, {p}")
        words = outcome_sentence(f"{row.variant} vs {baseline} over the hosts", metric_label(metric), row.ratio, equal,
                                 row.outcome, row.reasons, MARGIN, after)
    elif shown.holds_no_change:
        words = (f"{row.variant} vs {baseline}: no significant difference over the hosts: {signed_percent(row.ratio)} "
                 f"({signed_interval(shown)}), {p}")
    else:
        words = (f"{row.variant} vs {baseline} over the hosts: {signed_percent(row.ratio)} {before_correction(family)} "
                 f"({signed_interval(shown)}); not significant after, {p}")
    return words + _hosts_tail(row)


def _hosts_tail(row: PooledRowDoc) -> str:
    """"; pooled over 3 hosts; 3 of 3 go the same way (I² 0%, between-host spread ×/÷1.00)", as the pool says."""
    hosts = row.per_host or []
    if not hosts:
        return ""
    spread = math.exp(math.sqrt(row.tau2)) if row.tau2 is not None and 0 < row.tau2 < 490000.0 else 1.0
    i2 = f"I² {row.i2:.0%}" if row.i2 is not None else "I² -"
    tail = (f"; pooled over {len(hosts)} hosts; {row.hosts_agree} of {len(hosts)} go the same way "
            f"({i2}, between-host spread ×/÷{spread:.2f})")
    differ = set(row.hosts_differ or [])
    if differ:
        tail += "; " + "; ".join(f"host {h.host} differs: {signed_percent(h.ratio)}" for h in hosts if h.host in differ)
    return tail


def skipped_words(entry: str) -> str:
    """A host left out of a pool, "db2 (few-runs:variant)", in words: "db2 (fewer than 2 valid runs of the
    variant)"."""
    host, sep, rest = entry.partition(" (")
    if not sep or not rest.endswith(")"):
        return entry
    return f"{host} ({reason_words(rest[:-1])})"


POOLED_METHOD = ("random effects over the hosts' log ratios (DerSimonian-Laird tau², Hartung-Knapp interval with "
                 "max(1, q), Student t with hosts - 1 df)")


def pooled_method(sequential: bool) -> str:
    return POOLED_METHOD + ("; a host that ran until a verdict enters at its last planned look" if sequential else "")


def pooled_correction(cells: int | None) -> str:
    """Which correction a pool's adjusted p-values carry: over a fleet's variants, or every cell of a fleet
    matrix."""
    if cells is None:
        return "Holm-corrected over the variants"
    if not cells:
        return "no cell of the matrix could be pooled"
    return f"Holm-corrected over the matrix's {cells} pooled cell{'' if cells == 1 else 's'} (one per job and variant)"


# --- a pilot's plan (`compare --plan`) -------------------------------------------------------------------------


def pilot_lines(p: PilotPlan) -> list[str]:
    """`compare --plan`: the pilot's noise, and the runs each difference would need at it."""
    label = metric_label(p.metric)
    sd = p.noise_sd_log
    if sd is None:
        return [f"the pilot has no two valid runs of a variant with a positive {label}: no noise to plan from"]
    lines = [f"pilot: noise {sd * 100:.1f}% per run in {label} (log scale, {p.df} degrees of freedom: a first "
             "guess; a pilot this short can be off by a factor of two)"]
    for row in p.rows:
        what = f"to detect a {row.difference * 100:.0f}% difference"
        if row.runs_per_variant is None:
            lines.append(f"  {what}: no practical number of runs at this noise")
            continue
        minutes = "" if row.minutes is None else f", about {duration_words(row.minutes * 60.0)}"
        lines.append(f"  {what}: {row.runs_per_variant} runs per variant ({row.runs} runs{minutes})")
    holm = f", alpha {p.alpha:g}" + (f" over {p.variants - 1} comparisons (Holm)" if p.variants > 2 else "")
    lines.append(f"  (80% power{holm}; --until-verdict stops as soon as the data allow)")
    return lines
