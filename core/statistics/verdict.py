"""Verdicts of an experiment: one primary metric, each variant against the baseline, effects as ratios.

What is tested (see docs/statistics.md, "How the verdict is reached"):
- The primary metric (IOPS for fio jobs, wall time for a command, or chosen) of every variant against the
  baseline (the first variant): Welch's t-test on log values (batch runs) or a one-sample t-test on the
  paired log differences, one per block of turns (live alternation). Holm's correction across the variants.
  Under `--until-verdict` the level is the boundary's per-look level (core/statistics/sequential.py).
- Secondary metrics are always shown with their ratio and CI. They may be called significant only through
  a serial gatekeeper: once every primary comparison is significant, Holm across all secondary comparisons;
  their adjusted p-value is the larger of the two, so the whole verdict's false-positive rate stays at alpha.
- Values that admit no honest p-value (fewer than 2 runs, NaN, zero or negative, no variance) give a
  "cannot judge" result with the reason, and take no part in any correction.

One module because the batch and the paired (alternation) verdicts share their wording, metric table and
Holm step, and read best side by side (~460 lines).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from iosched.core.documents.document import (
    AlternationDoc,
    ComparisonDoc,
    ExperimentDoc,
    JudgementDoc,
    RankDoc,
    RunDoc,
    RunGroupDoc,
    RunSplitDoc,
    SequentialDoc,
    Status,
    SummaryDoc,
)
from iosched.core.documents.metrics import metric_label, metric_words, ordered_metrics
from iosched.core.statistics.holm_intervals import HolmInterval, LogComparison, holm_intervals
from iosched.core.statistics.rank_test import RankShift, disagreement, rank_shift
from iosched.core.statistics.run_groups import Outlier, TwoGroups, split_runs
from iosched.core.statistics.stats import (
    CannotJudge,
    RatioEstimate,
    Summary,
    detectable_ratio,
    holm,
    log_ratio_paired,
    log_ratio_welch,
    runs_needed,
    summarize,
    t_ppf,
)

PLANNING_RATIO = 1.10  # the difference the planning figure is stated for
DETECT_POWER = 0.8  # the power the smallest detectable difference is stated at
# How the notes that plan the next experiment begin (a front end shows them beside the verdict, not among the notes).
PLANNING_NOTES = ("planning: ", "at this noise ", "no planning figure")


def default_primary(doc: ExperimentDoc) -> str:
    """The metric the verdict is about: as chosen at the start, else wall time for a command, else IOPS."""
    if doc.primary_metric:
        return doc.primary_metric
    return "wall_s" if doc.workload.cmd else "iops"


# --- what a verdict is judged on ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """The runs a verdict is judged on: the variants' labels (the baseline first), the runs in their order, whether
    they are a live alternation's turns (judged in pairs) and the boundary they were run under."""

    labels: list[str]
    runs: Sequence[RunDoc]
    alternate: bool = False
    sequential: SequentialDoc | None = None


def sample_of(doc: ExperimentDoc) -> Sample:
    return Sample([v.label for v in doc.variants], doc.runs, isinstance(doc, AlternationDoc), doc.sequential)


# --- one comparison -------------------------------------------------------------------------------------------


def comparison(metric: str, baseline: str, variant: str, primary: bool, e: RatioEstimate | CannotJudge,
               p_adjusted: float | None, significant: bool, verdict: str) -> ComparisonDoc:
    """One metric, one variant against the baseline, from its estimate; ``p_adjusted`` compares with alpha (None:
    it cannot be judged)."""
    if isinstance(e, CannotJudge):
        return ComparisonDoc(metric=metric, baseline=baseline, variant=variant, ratio=None, ci95=None, p_value=None,
                             p_adjusted=p_adjusted, significant=significant, primary=primary, verdict=verdict,
                             cannot_judge=e.reason, n=None)
    return ComparisonDoc(metric=metric, baseline=baseline, variant=variant, ratio=e.ratio, ci95=(e.ci_low, e.ci_high),
                         p_value=e.p_value, p_adjusted=p_adjusted, significant=significant, primary=primary,
                         verdict=verdict, cannot_judge=None, n=e.n)


def summary_doc(s: Summary) -> SummaryDoc:
    return SummaryDoc(n=s.n, mean=s.mean, stdev=s.stdev, ci95=(s.ci_low, s.ci_high))


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


def effect_words(metric: str, baseline: str, variant: str, e: RatioEstimate) -> str:
    """'bfq: 37% fewer IOPS than none (95% CI 30–43%)' when the interval is on one side of 1, else signed."""
    label, _unit, more, fewer = metric_words(metric)
    ci = "95% CI"  # under the sequential boundary: 95% over all looks together (a repeated interval)
    if e.ci_high < 1.0:
        return (f"{variant}: {_num((1 - e.ratio) * 100)}% {fewer} {label} than {baseline} "
                f"({ci} {_num((1 - e.ci_high) * 100)}–{_num((1 - e.ci_low) * 100)}%)")
    if e.ci_low > 1.0:
        return (f"{variant}: {_num((e.ratio - 1) * 100)}% {more} {label} than {baseline} "
                f"({ci} {_num((e.ci_low - 1) * 100)}–{_num((e.ci_high - 1) * 100)}%)")
    return (f"{variant} vs {baseline}: {label} {signed_percent(e.ratio)} "
            f"({ci} {signed_percent(e.ci_low)} to {signed_percent(e.ci_high)})")


def _sentence(metric: str, baseline: str, variant: str, e: RatioEstimate | CannotJudge, p_adj: float | None,
              significant: bool, adjusted: bool, better: str | None = None, family: int | None = None,
              shown: tuple[float, float, float] | None = None) -> str:
    """``better``: "higher" or "lower" when the user said which way a command's figure is better; ``shown``: the
    interval a not significant comparison's words show (low, high, level: one that carries its correction), else its
    95% CI, which carries none (``family``: the comparisons the correction covers)."""
    label = metric_label(metric)
    if isinstance(e, CannotJudge):
        return f"{variant} vs {baseline}, {label}: cannot judge ({e.reason})"
    assert p_adj is not None
    p_text = fmt_p(p_adj, adjusted)
    if significant:
        judged = "" if better is None else (": better" if (e.ratio > 1) == (better == "higher") else ": worse")
        return f"{effect_words(metric, baseline, variant, e)}, {p_text}{judged}"
    low, high, level = shown if shown is not None else (e.ci_low, e.ci_high, 0.95)
    return nothing_words(variant, baseline, label, e.ratio, (low, high, level), p_text,
                         None if shown is not None else family)


def nothing_words(variant: str, baseline: str, label: str, ratio: float, shown: tuple[float, float, float],
                  p_text: str, family: int | None) -> str:
    """A difference not called significant, in words that agree with the interval beside them: "no significant
    difference" only beside one that holds no change; beside one that leaves it out (an interval before the
    correction its p-value carries: ``family`` comparisons, None when it carries it), what holds: "-42% before
    correcting for 10 comparisons (95% CI -53% to -30%); not significant after"."""
    low, high, level = shown
    interval = f"({level_text(level)} CI {signed_percent(low)} to {signed_percent(high)})"
    if low <= 1.0 <= high:
        return (f"{variant} vs {baseline}: no significant difference in {label}: {signed_percent(ratio)} {interval}, "
                f"{p_text}")
    before = f"before correcting for {family} comparisons" if family is not None and family > 1 else "before correction"
    return (f"{variant} vs {baseline}, {label}: {signed_percent(ratio)} {before} {interval}; not significant after, "
            f"{p_text}")


# --- values from the runs ------------------------------------------------------------------------------------


def valid_values(sample: Sample) -> dict[str, dict[str, list[float]]]:
    """Per variant, per metric: the values of the valid runs, in run order."""
    values: dict[str, dict[str, list[float]]] = {lb: {} for lb in sample.labels}
    for r in sample.runs:
        if not r.valid or r.variant not in values:
            continue
        for key, x in r.metrics.items():
            if x is not None:
                values[r.variant].setdefault(key, []).append(float(x))
    return values


def block_log_ratios(sample: Sample, metric: str) -> dict[str, list[float]]:
    """Live alternation: per variant, the mean of log(variant) - log(baseline) over each block of two passes.

    A pass is one turn of each variant; the turns go A B | B A | B A | A B ... (core/experiment/runner.py
    `alternation_order`), so within a block every variant's mean position is the same: a linear drift
    cancels, and so does anything that flips with every turn. The blocks are the independent units of the
    paired test. A pass with an invalid or non-positive turn is left out, with its block.
    """
    passes, blocks = _passes_and_blocks(sample, metric)
    base = sample.labels[0]

    def diff(p: int, v: str) -> float:
        return math.log(passes[p][v]) - math.log(passes[p][base])

    return {v: [(diff(2 * b, v) + diff(2 * b + 1, v)) / 2.0 for b in blocks] for v in sample.labels[1:]}


def _passes_and_blocks(sample: Sample, metric: str) -> tuple[dict[int, dict[str, float]], list[int]]:
    """Live alternation: each pass's values by variant, and the blocks whose two passes are both whole."""
    k = len(sample.labels)
    passes: dict[int, dict[str, float]] = {}
    bad: set[int] = set()
    for r in sample.runs:
        p = r.index // k
        x = r.metrics.get(metric)
        if not r.valid or x is None or not (x > 0 and math.isfinite(x)):
            bad.add(p)
            continue
        passes.setdefault(p, {})[r.variant] = float(x)
    whole = {p for p in passes if p not in bad and len(passes[p]) == k}
    return passes, [b for b in sorted({p // 2 for p in whole}) if 2 * b in whole and 2 * b + 1 in whole]


def _at_last_look(sample: Sample, metric: str) -> Sample:
    looks = sample.sequential.looks if sample.sequential is not None else None
    if not looks:
        return sample
    labels = sample.labels
    if sample.alternate:
        _passes, blocks = _passes_and_blocks(sample, metric)
        reached = [n for n in looks if n <= len(blocks)]
        if not reached or reached[-1] == len(blocks):
            return sample
        last_pass = 2 * blocks[reached[-1] - 1] + 1
        return replace(sample, runs=[r for r in sample.runs if r.index // len(labels) <= last_pass])

    def counted(r: RunDoc) -> bool:
        return r.valid and r.metrics.get(metric) is not None

    counts = {lb: 0 for lb in labels}
    for r in sample.runs:
        if r.variant in counts and counted(r):
            counts[r.variant] += 1
    n = min(counts.values(), default=0)
    reached = [x for x in looks if x <= n]
    if not reached or all(c == reached[-1] for c in counts.values()):
        return sample
    keep, seen = reached[-1], {lb: 0 for lb in labels}
    runs = []
    for r in sample.runs:
        if r.variant in seen and counted(r):
            seen[r.variant] += 1
            if seen[r.variant] > keep:
                continue
        runs.append(r)
    return replace(sample, runs=runs)


def at_last_look(doc: ExperimentDoc, metric: str) -> ExperimentDoc:
    """A sequential document cut to its last planned look reached: its boundary holds only at the looks, so
    runs past the last look (an unbalanced tail, a run after the stop) are left out of the test.

    Unchanged when the document is not sequential, ends at a look, or has not reached the first look.
    """
    cut = _at_last_look(sample_of(doc), metric)
    return doc if len(cut.runs) == len(doc.runs) else replace(doc, runs=list(cut.runs))


def _estimates(sample: Sample, metric: str, level: float = 0.95) -> dict[str, RatioEstimate | CannotJudge]:
    base = sample.labels[0]
    out: dict[str, RatioEstimate | CannotJudge] = {}
    if sample.alternate:
        for v, diffs in block_log_ratios(sample, metric).items():
            out[v] = log_ratio_paired(diffs, level)
        return out
    values = valid_values(sample)
    for v in sample.labels[1:]:
        out[v] = log_ratio_welch(values[base].get(metric, []), values[v].get(metric, []), level, (base, v))
    return out


def estimates(doc: ExperimentDoc, metric: str, level: float = 0.95) -> dict[str, RatioEstimate | CannotJudge]:
    """Each variant against the baseline for one metric (batch: Welch on logs; alternation: paired)."""
    return _estimates(sample_of(doc), metric, level)


def adjusted_family(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm over the judgeable members of a family (None: cannot judge, left out)."""
    judged = [(i, p) for i, p in enumerate(p_values) if p is not None]
    adj = holm([p for _, p in judged])
    out: list[float | None] = [None] * len(p_values)
    for (i, _), a in zip(judged, adj, strict=True):
        out[i] = a
    return out


# --- the verdict ------------------------------------------------------------------------------------------------


def judge(doc: ExperimentDoc, alpha: float = 0.05, primary: str | None = None, status: Status | None = None,
          planning: bool = True) -> JudgementDoc:
    """Summaries per variant and every variant against the baseline, from the valid runs (re-judgeable).

    ``planning=False`` leaves out the planning figure (the only costly part; simulations need no words).
    """
    full = sample_of(doc)
    labels = full.labels
    base, others = labels[0], labels[1:]
    metric = primary or default_primary(doc)
    sample = _at_last_look(full, metric)
    values = valid_values(sample)
    summaries = {lb: {k: summary_doc(summarize(xs)) for k, xs in m.items()} for lb, m in values.items()}

    better = cmd_metrics_of(doc)
    prim = _primary_estimates(sample, metric)
    comps = _primary_comparisons(sample, metric, alpha, prim, better.get(metric))
    gate = max((1.0 if c.p_adjusted is None else c.p_adjusted for c in comps), default=1.0)

    present = [k for k in ordered_metrics((k for lb in labels for k in values[lb]), list(better)) if k != metric]
    sec = [(k, v, e) for k in present for v, e in _estimates(sample, k).items()]
    sec_p = adjusted_family([None if isinstance(e, CannotJudge) else e.p_value for _k, _v, e in sec])
    family = sum(1 for p in sec_p if p is not None)
    for (k, v, e), hp in zip(sec, sec_p, strict=True):
        p_adj = None if hp is None else max(gate, hp)
        sig = p_adj is not None and p_adj < alpha
        c = comparison(k, base, v, False, e, p_adj, sig,
                       _sentence(k, base, v, e, p_adj, sig, True, better.get(k), family=family))
        if isinstance(e, RatioEstimate):  # before correction, at the level the p-value is compared with
            c = replace(c, interval=_at_level(e, 1.0 - alpha), interval_level=1.0 - alpha, family=family)
        comps.append(c)

    groups = run_groups(sample)
    notes = _notes(doc, sample, metric, alpha, comps[: len(others)], prim) if planning else []
    split = [g.variant for g in groups if g.metric == metric]
    if split:  # more runs of the same would only show the same groups again: no planning figure then
        notes = [n for n in notes if not n.startswith(PLANNING_NOTES)]
        notes.append(f"no planning figure: the runs of {', '.join(dict.fromkeys(split))} disagree among themselves, "
                     "and more runs would not settle which of them is typical; what differs between them would")
    if len(sample.runs) < len(full.runs):
        notes.insert(0, f"judged at the last planned look: {len(full.runs) - len(sample.runs)} later run(s) "
                        "left out of the statistics")
    cancelled = doc.status == "cancelled" or doc.cancelled  # "cancelled": older saves
    invalid = [f"run {r.index + 1} ({r.variant}): {r.invalid_reason}" for r in full.runs if not r.valid]
    primaries = comps[: len(others)]
    detectable = (smallest_detectable(primaries, prim, len(labels), alpha, full.alternate)
                  if planning and not all(c.significant for c in primaries) else None)
    return JudgementDoc(alpha=alpha, primary_metric=metric, status="cancelled" if cancelled else (status or "final"),
                        method=method_line(doc, alpha), summaries=summaries, comparisons=comps, invalid=invalid,
                        notes=notes, run_groups=groups, detectable=detectable)


def _at_level(e: RatioEstimate, level: float) -> tuple[float, float]:
    """An estimate's interval at another confidence (its own when the same)."""
    if abs(level - e.level) < 1e-12:
        return e.ci_low, e.ci_high
    c = LogComparison.of(e)
    half = t_ppf(0.5 + level / 2.0, c.df) * c.se
    # At a stricter level than the estimate's own (a small --alpha, few runs far apart) an end may pass a double's
    # range: infinite, as holm_intervals.py makes one, never an OverflowError after the runs.
    return math.exp(c.log_ratio - half), (math.exp(c.log_ratio + half) if c.log_ratio + half < 709.0 else math.inf)


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


def run_groups(sample: Sample) -> list[RunSplitDoc]:
    """Every variant's metric whose valid runs disagree (two groups, or one run apart), by run_groups.py's rule."""
    runs: dict[str, dict[str, list[tuple[int, float]]]] = {lb: {} for lb in sample.labels}
    for r in sample.runs:
        if not r.valid or r.variant not in runs:
            continue
        for key, x in r.metrics.items():
            if x is not None:
                runs[r.variant].setdefault(key, []).append((r.index, float(x)))
    out = []
    for lb in sample.labels:
        for key in ordered_metrics(runs[lb]):
            pairs = runs[lb][key]
            split = split_runs([x for _, x in pairs])
            if not isinstance(split, Outlier | TwoGroups):
                continue
            groups = tuple(RunGroupDoc(runs=[pairs[i][0] for i in g.indices], low=g.low, high=g.high)
                           for g in split.groups)
            assert len(groups) == 2
            out.append(RunSplitDoc(variant=lb, metric=key, kind="outlier" if isinstance(split, Outlier) else
                                   "two groups", n=split.n, groups=(groups[0], groups[1]), apart=split.apart))
    return out


def _primary_estimates(sample: Sample, metric: str) -> dict[str, RatioEstimate | CannotJudge]:
    seq = sample.sequential
    return _estimates(sample, metric, seq.ci_level if seq is not None else 0.95)


def _primary_comparisons(sample: Sample, metric: str, alpha: float,
                         prim: dict[str, RatioEstimate | CannotJudge], better: str | None) -> list[ComparisonDoc]:
    """The primary metric, each variant against the baseline, Holm-corrected (at the boundary's level when
    the runs are sequential; the adjusted p-values reported are then scaled by alpha / level so they
    still compare with alpha)."""
    base, others = sample.labels[0], sample.labels[1:]
    seq = sample.sequential
    level = seq.level if seq is not None else alpha
    holm_p = adjusted_family([None if isinstance(e, CannotJudge) else e.p_value for e in prim.values()])
    adjusted = len(others) > 1 or seq is not None
    # The intervals carry Holm's correction at the level the p-values face (the boundary's, when sequential), so a
    # comparison is significant exactly when its interval leaves out 1.
    judged = [v for v in others if isinstance(prim[v], RatioEstimate)]
    consistent = dict(zip(judged, holm_intervals([LogComparison.of(_estimate(prim[v])) for v in judged], level),
                          strict=True))
    values = valid_values(sample) if not sample.alternate else None
    out = []
    for v, hp in zip(others, holm_p, strict=True):
        p_adj = None if hp is None else min(1.0, hp * alpha / level)
        sig = hp is not None and hp < level
        c = comparison(metric, base, v, True, prim[v], p_adj, sig,
                       _sentence(metric, base, v, prim[v], p_adj, sig, adjusted, better))
        e = prim[v]
        if (h := consistent.get(v)) is not None:
            c = replace(c, interval=agreeing_interval(h, sig), interval_level=h.level, family=len(judged))
            if not sig and c.interval is not None and isinstance(e, RatioEstimate) and not e.ci_low <= 1 <= e.ci_high:
                # Its 95% CI leaves out no change, its p-value is corrected: the words show the corrected interval.
                c = replace(c, verdict=_sentence(metric, base, v, e, p_adj, sig, adjusted, better,
                                                 shown=(*c.interval, h.level)))
        if values is not None and isinstance(e, RatioEstimate):
            c = replace(c, rank=_rank(values[base].get(metric, []), values[v].get(metric, []), e, alpha))
        out.append(c)
    return out


def agreeing_interval(h: HolmInterval, significant: bool) -> tuple[float, float]:
    """A Holm interval as ratios, its ends on no change's side as the verdict's p-value says: the two p-values of one
    comparison (its own, and the one read back from its interval) may differ in their last digits at the boundary."""
    if h.excludes_no_change() == significant:
        return h.ci_low, h.ci_high
    d = h.log_ratio
    half = abs(d) * (1.0 - 1e-12) if significant else abs(d)
    return math.exp(d - half), math.exp(d + half)


def _estimate(e: RatioEstimate | CannotJudge) -> RatioEstimate:
    assert isinstance(e, RatioEstimate)
    return e


def _rank(baseline: Sequence[float], variant: Sequence[float], e: RatioEstimate, alpha: float) -> RankDoc | None:
    """The rank cross-check of a t-test on log values; None when ranks cannot order the runs."""
    r = rank_shift(baseline, variant)
    if not isinstance(r, RankShift):
        return None
    d = disagreement(e, r, alpha)
    ci = (r.ci_low, r.ci_high) if r.ci_low is not None and r.ci_high is not None else None
    return RankDoc(u=r.u, p_value=r.p_value, ratio=r.ratio, ci95=ci, disagrees=list(d.how) if d else [])


def primary_comparisons(doc: ExperimentDoc, metric: str, alpha: float) -> list[ComparisonDoc]:
    """The primary metric, each variant against the baseline, Holm-corrected (see ``_primary_comparisons``)."""
    sample = sample_of(doc)
    return _primary_comparisons(sample, metric, alpha, _primary_estimates(sample, metric),
                                cmd_metrics_of(doc).get(metric))


def cmd_metrics_of(doc: ExperimentDoc) -> dict[str, str | None]:
    """The figures read from a command's output (--cmd-metric), in order, and which way each is better."""
    return {m.name: m.better for m in doc.workload.cmd_metrics or []}


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


def _notes(doc: ExperimentDoc, sample: Sample, metric: str, alpha: float, primary: list[ComparisonDoc],
           prim: dict[str, RatioEstimate | CannotJudge]) -> list[str]:
    notes: list[str] = []
    k = len(doc.variants)
    alternate = isinstance(doc, AlternationDoc)
    label = metric_label(metric)
    if all(c.significant for c in primary):
        return notes
    sds = [e.sd_log for c in primary if isinstance(e := prim[c.variant], RatioEstimate)]
    if not sds:
        return notes
    sd = max(sds)
    # Holm's first step is the hardest: plan for alpha / (variants - 1).
    n = runs_needed(sd, PLANNING_RATIO, alpha / max(1, k - 1), design="paired" if alternate else "two-sample")
    unit = "blocks (A B B A)" if alternate else "runs per variant"
    per = "block" if alternate else "run"
    if n is None:
        notes.append(f"at this noise ({sd * 100:.0f}% per {per}) no practical number of {unit} would detect a "
                     f"{(PLANNING_RATIO - 1) * 100:.0f}% difference in {label}")
    else:
        extra = ""
        if isinstance(doc, AlternationDoc) and doc.every_s:
            extra = f" (about {n * 2 * k * doc.every_s:.0f} s of alternation)"
        notes.append(f"planning: about {n} {unit}{extra} would detect a {(PLANNING_RATIO - 1) * 100:.0f}% "
                     f"difference in {label} with 80% power at the noise seen here ({sd * 100:.1f}% per "
                     f"{per}, on the log scale)")
    return notes


# --- while it runs ------------------------------------------------------------------------------------------------


class RunningVerdict:
    """The primary metric so far, as runs or turns end: interim estimates, and the boundary when sequential.

    ``lines()`` never says "significant" unless the boundary has been crossed at a planned look (only in
    sequential mode); otherwise the lines are labelled interim and show the estimate with its CI.
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

    def _looked(self) -> list[ComparisonDoc]:
        looked = _at_last_look(self._sample(self.sequential), self.metric)
        return _primary_comparisons(looked, self.metric, self.alpha, _primary_estimates(looked, self.metric), None)

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
        """Fixed-n: record the run for the interim lines; never stops the experiment."""
        self.add(run)
        return False

    @property
    def decided(self) -> bool:
        return self.decided_at is not None

    @property
    def count(self) -> int:
        """Complete runs per variant (or blocks of turns) so far."""
        return self._count()

    def interim(self) -> list[tuple[str, float, float, float]]:
        """Each variant's estimate so far, as (variant, ratio, low, high): empty under two runs (or blocks) each,
        and for a variant that cannot be judged yet."""
        if self._count() < 2:
            return []
        return [(v, e.ratio, e.ci_low, e.ci_high) for v, e in
                _estimates(self._sample(), self.metric, self._level()).items() if isinstance(e, RatioEstimate)]

    def _level(self) -> float:
        """The interim intervals' confidence: Bonferroni's over the variants (95% for one comparison), as the final
        verdict's intervals are when it finds nothing, so the last interim line and the verdict agree."""
        base = self.sequential.ci_level if self.sequential is not None else 0.95
        return 1.0 - (1.0 - base) / max(1, len(self.labels) - 1)

    def lines(self) -> list[str]:
        n = self._count()
        if n < 2:
            return []
        seq = self.sequential
        level = self._level()
        unit = "blocks" if self.alternate else "runs per variant"
        base = self.labels[0]
        out = []
        label = metric_label(self.metric)
        if self.decided_at is not None:
            out = [_looked_line(c, label) for c in self._looked()]
            return [*out, f"boundary crossed at {self.decided_at} {unit}: stopping"]
        for v, e in _estimates(self._sample(), self.metric, level).items():
            if isinstance(e, CannotJudge):
                out.append(f"interim, {n} {unit}: {v} vs {base}: cannot judge yet ({e.reason})")
                continue
            out.append(f"interim, {n} {unit}: {v} vs {base} {label} {signed_percent(e.ratio)} "
                       f"({level_text(level)} CI {signed_percent(e.ci_low)} to {signed_percent(e.ci_high)})")
        if seq is not None:
            nxt = [x for x in seq.looks if x > n]
            out.append(f"next look at {nxt[0]} {unit}" if nxt else "last look passed: no boundary crossing")
        return out


def _looked_line(c: ComparisonDoc, label: str) -> str:
    """A comparison at the look where the boundary was crossed, with its interval at the boundary's level."""
    if c.ratio is None or c.interval is None or c.interval_level is None:
        return f"{c.variant} vs {c.baseline}, {label}: cannot judge ({c.cannot_judge})"
    lo, hi = c.interval
    ci = f"{level_text(c.interval_level)} CI"
    if c.significant:
        e = RatioEstimate(c.ratio, lo, hi, c.interval_level, 0.0, 0.0, 1.0, 0.0, (0, 0))
        return effect_words(c.metric, c.baseline, c.variant, e).replace("(95% CI ", f"({ci} ") + ", across the boundary"
    return (f"{c.variant} vs {c.baseline}: {label} {signed_percent(c.ratio)} ({ci} {signed_percent(lo)} to "
            f"{signed_percent(hi)}), not across the boundary")


def level_text(level: float) -> str:
    """A confidence as a person reads it: "95%", "97.5%", "99.88%" (never rounded up to 100%)."""
    pct = level * 100.0
    digits = 1
    while round(pct, digits) >= 100.0 and digits < 6:
        digits += 1
    text = f"{pct:.{digits}f}".rstrip("0").rstrip(".")
    return f"{text}%"


def sequential_plan(max_per_arm: int, alpha: float, arms: int, alternate: bool) -> SequentialDoc:
    """The boundary for `--until-verdict`, fixed before the first run and saved with the experiment.

    ``max_per_arm`` counts runs per variant (batch: looks at 4, 6, 8 ...) or, with ``alternate``, blocks of
    two passes (looks at every block from the third).
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
                         ci_level=1.0 - ci_alpha, design=design,
                         method="Pocock constant per-look level, calibrated by seeded simulation of the look schedule")
