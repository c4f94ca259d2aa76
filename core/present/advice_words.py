"""The answer of `iosched advise` in words, from the rule's numbers (core/statistics/advice_rule.py decides in
numbers and reason codes only): each goal's answer, its estimate and its cost, why a candidate was left out, the
answer over every goal, and the rule itself as said before the first run."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from iosched.core.advice.plan import GOAL_WORDS
from iosched.core.documents.document import AdviceRuleDoc, EstimateDoc, GoalAdviceDoc
from iosched.core.documents.metrics import ROLE_WORDS, metric_label, split_metric
from iosched.core.present.sentences import reason_words
from iosched.core.statistics.advice_rule import Exclusion, GoalAdvice, Rule, higher_is_better


def _pct(ratio: float) -> str:
    d = (ratio - 1.0) * 100.0
    size = f"{abs(d):.1f}" if abs(d) < 9.95 else f"{abs(d):.0f}"
    return ("+" if d >= 0 else "−") + size + "%"


def _label(metric: str) -> str:
    """A role's latency percentile reads short ("foreground p50"); anything else as the metric table says."""
    role, base = split_metric(metric)
    label = metric_label(metric)
    return label.removesuffix(" latency") if role in ROLE_WORDS and base.startswith("clat_p") else label


def estimate_words(metric: str, e: EstimateDoc) -> str:
    """"foreground p50 −95% (−97% to −90%)"."""
    assert e.ratio is not None and e.ci_low is not None and e.ci_high is not None
    return f"{_label(metric)} {_pct(e.ratio)} ({_pct(e.ci_low)} to {_pct(e.ci_high)})"


def short_words(g: GoalAdviceDoc) -> str:
    """One clause: "bfq for interactive use: foreground p50 −95%, background MB/s −30%", or "for throughput keep
    none"."""
    if g.recommended is None:
        return f"for {GOAL_WORDS[g.goal]} keep {g.baseline}"
    assert g.estimate is not None and g.estimate.ratio is not None
    parts = [f"{_label(g.metric)} {_pct(g.estimate.ratio)}"]
    parts += [f"{_label(m)} {_pct(e.ratio)}" for m, e in g.costs if e.ratio is not None]
    return f"{g.recommended} for {GOAL_WORDS[g.goal]}: {', '.join(parts)}"


def tradeoff_words(goals: Sequence[GoalAdviceDoc]) -> str:
    """The answer over every goal in one sentence: "bfq for interactive use: foreground p50 −95%, background MB/s
    −30%; for throughput keep none"."""
    return "; ".join(short_words(g) for g in goals)


def mde_words(metric: str, fraction: float | None) -> str:
    """The smallest detectable effect as the metric moves: "4%" for a rate (higher), "−91%" for a latency (a
    fraction 9.87 in the better direction is a ratio of 1/10.87)."""
    if fraction is None or not math.isfinite(fraction):
        return "unknown"
    if higher_is_better(metric):
        return f"{fraction:.0%}"
    return f"−{1.0 - 1.0 / (1.0 + fraction):.0%}"


def exclusion_words(x: Exclusion) -> str:
    """Why a candidate was left out of a goal: another goal's interval does not show it within the margin."""
    return (f"on {GOAL_WORDS[x.goal]} it is not shown within {x.margin:.0%} of the best: {metric_label(x.metric)} "
            f"{_pct(x.worst)} against the best at its interval's worse end")


def goal_lines(g: GoalAdviceDoc) -> list[str]:
    """The advice for one goal, the answer first, then its evidence."""
    mde = "unknown (no noise to go by)" if g.smallest_effect is None else mde_words(g.metric, g.smallest_effect)
    label = metric_label(g.metric)
    if g.recommended is None:
        lines = [f"{GOAL_WORDS[g.goal]}: keep what you have ({g.baseline}): no candidate beat it by the smallest "
                 f"effect this experiment could see in {label}, {mde}"]
        if g.estimate is not None:
            lines.append(f"  closest: {g.estimate.variant}, {estimate_words(g.metric, g.estimate)}")
    else:
        assert g.estimate is not None
        lines = [f"{GOAL_WORDS[g.goal]}: {g.recommended}, {estimate_words(g.metric, g.estimate)} against "
                 f"{g.baseline} (the smallest effect this experiment could see: {mde})"]
        lines += [f"  its cost: {estimate_words(m, e)}" for m, e in g.costs]
    lines += [f"  left out: {v}: {why}" for v, why in g.excluded]
    lines += [f"  {n}" for n in g.notes]
    return lines


def the_rule(rule: Rule | AdviceRuleDoc) -> list[str]:
    """The rule in words, said before the first run."""
    return [
        f"decided by a rule fixed before the first run (alpha {rule.alpha:g}, margin {rule.margin:.0%}, "
        f"power {rule.power:.0%}):",
        "  a candidate wins a goal when its interval against what the device has now clears no change "
        "(Holm over the candidates) and its estimate reaches the smallest effect the experiment could see "
        f"({rule.power:.0%} power at the noise measured);",
        "  among those, the best estimate, if on every other goal its interval shows it within "
        f"{rule.margin:.0%} of the best there;",
        "  if none wins: keep what you have, with the smallest effect the experiment could see;",
        "  a variant whose comparison crosses the sequential boundary in the worse direction at a look is "
        f"dropped: drops and wins together keep the error rate at {rule.alpha:g} per goal.",
    ]


def worded_goal(g: GoalAdviceDoc, numbers: GoalAdvice | None) -> GoalAdviceDoc:
    def est(e: EstimateDoc) -> EstimateDoc:
        why = reason_words(e.cannot_judge, g.baseline, e.variant) if e.cannot_judge is not None else None
        return replace(e, cannot_judge=why)

    excluded = g.excluded
    notes = g.notes
    if numbers is not None:
        excluded = [(v, exclusion_words(x)) for v, x in numbers.excluded]
        notes = [f"{v}: cannot judge ({reason_words(code, g.baseline, v)})" for v, code in numbers.unjudged]
    return replace(g, estimate=est(g.estimate) if g.estimate is not None else None,
                   costs=[(m, est(e)) for m, e in g.costs], excluded=excluded, notes=notes)
