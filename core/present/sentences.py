"""A comparison in words, written from its numbers: every sentence the result pages show about a difference.

One rule holds them together: a sentence never calls a difference not significant beside an interval that leaves
out no change, nor significant beside one that holds it. An interval that carries the correction its p-value
carries (the primary metric's Holm-consistent interval, a matrix cell's) agrees with it by construction; one that
does not (a secondary metric's, a pooled one's) is called what it is: "before correcting for N comparisons".
tests/unit/present/test_sentences.py holds every sentence of the compare, matrix and fleet pages to it over
generated judgements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from iosched.core.documents.document import ComparisonDoc, PooledRowDoc
from iosched.core.documents.metrics import metric_label, split_metric
from iosched.core.statistics.stats import RatioEstimate
from iosched.core.statistics.verdict import effect_words, fmt_p, level_text, signed_percent

# Which way is better, where the metric says it by itself (a command's own figure says it with --cmd-metric).
HIGHER_IS_BETTER = {"iops", "mb_s", "fairness_jain", "share_min_max", "share"}


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


def _estimate(ratio: float, shown: Shown) -> RatioEstimate:
    return RatioEstimate(ratio, shown.low, shown.high, shown.level, 0.0, 0.0, 1.0, 0.0, (0, 0))


def _effect(metric: str, baseline: str, variant: str, ratio: float, shown: Shown) -> str:
    """"bfq: 44% fewer IOPS than none (95% CI 15–63%)", its interval labelled with its own confidence."""
    return effect_words(metric, baseline, variant, _estimate(ratio, shown)).replace("(95% CI ", f"({shown.label} ")


def signed_interval(shown: Shown) -> str:
    return f"{shown.label} {signed_percent(shown.low)} to {signed_percent(shown.high)}"


def before_correction(family: int | None) -> str:
    return (f"before correcting for {family} comparisons" if family is not None and family > 1
            else "before correction")


def comparison_sentence(c: ComparisonDoc, better: str | None = None, adjusted: bool | None = None,
                        p_value: bool = True) -> str:
    """One comparison in words, as its numbers allow (see the module's rule). ``better``: which way is better, for a
    figure whose judgement should say "better" or "worse" (a command's own, when the user said); ``adjusted``: the
    p-value carries a correction (default: any but a lone primary comparison); ``p_value``: False leaves it out (a
    summary line)."""
    label = metric_label(c.metric)
    v, b = c.variant, c.baseline
    shown = shown_interval(c)
    if c.ratio is None or shown is None:
        return f"{v} vs {b}, {label}: cannot judge ({c.cannot_judge or 'no estimate'})"
    if adjusted is None:
        adjusted = not c.primary or (c.family or 1) > 1
    p = "" if c.p_adjusted is None or not p_value else f", {fmt_p(c.p_adjusted, adjusted)}"
    if c.significant:
        if not shown.holds_no_change:
            judged = "" if better is None else (": better" if (c.ratio > 1) == (better == "higher") else ": worse")
            return f"{_effect(c.metric, b, v, c.ratio, shown)}{p}{judged}"
        return (f"{v} vs {b}: {label} {signed_percent(c.ratio)} ({signed_interval(shown)}){p}: significant after "
                "correction, though this interval holds no change")
    if shown.holds_no_change:
        return (f"{v} vs {b}: no significant difference in {label}: {signed_percent(c.ratio)} "
                f"({signed_interval(shown)}){p}")
    return (f"{v} vs {b}, {label}: {signed_percent(c.ratio)} {before_correction(c.family)} "
            f"({signed_interval(shown)}); not significant after{p}")


def pooled_sentence(row: PooledRowDoc, metric: str, baseline: str, alpha: float, family: int) -> str:
    """A pooled variant in words from its numbers (``family``: the pooled comparisons its correction covers); the
    hosts' agreement and who differs after it."""
    if row.ratio is None or row.ci_low is None or row.ci_high is None or row.p_adjusted is None:
        return row.sentence  # "bfq vs none: fewer than two hosts could be judged": no numbers to write
    shown = Shown(row.ci_low, row.ci_high, 0.95, False)
    p = fmt_p(row.p_adjusted, True)
    sig = row.p_adjusted < alpha
    if sig and not shown.holds_no_change:
        words = f"{_effect(metric, baseline, row.variant, row.ratio, shown)}, {p}"
    elif sig:
        words = (f"{row.variant} vs {baseline} over the hosts: {signed_percent(row.ratio)} ({signed_interval(shown)}), "
                 f"{p}: significant after correction, though this interval holds no change")
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


def cell_interval_text(ratio: float, low: float, high: float, significant: bool) -> str:
    """A matrix cell's ratio and its interval: "×0.80 (0.68–0.95)*"."""
    return f"×{ratio:.2f} ({low:.2f}–{high:.2f}){'*' if significant else ' '}"
