"""The answer of `iosched advise` in words, from the rule's numbers (core/statistics/advice_rule.py decides in
numbers and reason codes only): each goal's outcome first (switch, keep shown equal, or cannot tell with why and what
would decide), with one interval per comparison and its level named, the same in the headline and the evidence; a
figure that got worse called its cost; why a candidate was left out; the answer over every goal, and the rule itself
as said before the first run."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from iosched.core.advice.plan import GOAL_WORDS, budget_words
from iosched.core.base.units import si
from iosched.core.documents.document import AdviceRuleDoc, EstimateDoc, GoalAdviceDoc, SplitDoc
from iosched.core.documents.metrics import ROLE_WORDS, metric_label, split_metric
from iosched.core.present.sentences import level_text, margin_text, reason_words
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
    """"foreground p50 −95% (95% CI −97% to −90%)", its interval's level named where the document holds it; one the
    judge could not take, "background MB/s: cannot judge (why)"."""
    if e.ratio is None:
        return f"{_label(metric)}: cannot judge ({e.cannot_judge or 'no estimate'})"
    if e.ci_low is None or e.ci_high is None:
        return f"{_label(metric)} {_pct(e.ratio)}"
    level = f"{level_words(e.level)} CI " if e.level is not None else ""
    return f"{_label(metric)} {_pct(e.ratio)} ({level}{_pct(e.ci_low)} to {_pct(e.ci_high)})"


def level_words(level: float | None) -> str:
    """A confidence as people write it: "95%", "97.5%" (sentences.level_text), "?" when unknown."""
    return "?" if level is None else level_text(level)


def _shown(g: GoalAdviceDoc, e: EstimateDoc) -> tuple[float, float, float] | None:
    """The one interval a goal shows for a candidate, as ratios with its level: a switch's the Holm-adjusted one
    (what cleared no change), a keep's or a cannot-tell's the equivalence interval (what was held to the margin)."""
    if e.ratio is None:
        return None
    if g.outcome == "switch":
        if e.ci_low is None or e.ci_high is None or e.level is None:
            return None
        return e.ci_low, e.ci_high, e.level
    if e.equal_low is None or e.equal_high is None:
        return None
    return e.equal_low, e.equal_high, 1.0 - 2.0 * _alpha(g)


def _alpha(g: GoalAdviceDoc) -> float:
    """The rule's alpha, read back from the goal's effect level (1 - 2 alpha) when it is an equivalence one."""
    if g.outcome != "switch" and g.effect_level is not None:
        return (1.0 - g.effect_level) / 2.0
    return 0.05


def shown_words(g: GoalAdviceDoc, e: EstimateDoc) -> str:
    """"+28% IOPS (95% CI +19% to +37%)": the estimate and the one interval the goal shows for it, its level named."""
    assert e.ratio is not None
    iv = _shown(g, e)
    if iv is None:
        return f"{_pct(e.ratio)} {_label(g.metric)}"
    low, high, level = iv
    return f"{_pct(e.ratio)} {_label(g.metric)} ({level_words(level)} CI {_pct(low)} to {_pct(high)})"


def _better_end(g: GoalAdviceDoc, e: EstimateDoc) -> float:
    """How far a candidate's shown interval reaches the better way, as a fraction (for the widest)."""
    iv = _shown(g, e)
    if iv is None:
        return math.inf
    return iv[1] - 1.0 if g.better != "lower" else 1.0 / iv[0] - 1.0


def runs_words(g: GoalAdviceDoc) -> str:
    if g.runs_needed is None:
        return "the runs that would decide are unknown (no noise to go by)"
    more = g.runs_needed - g.runs_per_variant
    return (f"about {g.runs_needed} runs a variant would decide" +
            (f" ({more} more)" if more > 0 else " (as many as ran: the noise seen was larger than planned)"))


def split_words(g: GoalAdviceDoc, s: SplitDoc) -> str:
    """A variant's runs in two groups; bfq's on interactive use is its weight raise catching the reader or not."""
    unit = metric_label(g.metric)
    if g.goal == "interactive" and s.variant.split("+")[0] == "bfq":
        return (f"{s.variant} caught the reader in {s.better} of {s.n} runs (its weight raise: "
                f"{si_words(s.better_range)} against {si_words(s.worse_range)} {unit})")
    return (f"{s.variant}'s runs fall in two groups: {s.better} of {s.n} at {si_words(s.better_range)}, "
            f"{s.n - s.better} at {si_words(s.worse_range)} {unit}")


def si_words(r: tuple[float, float]) -> str:
    lo, hi = r
    return si(lo) if lo == hi else f"{si(lo)}–{si(hi)}"


BUSY_SHOWN = 4  # other loads named in the answer's line; the notes name them all


def busy_words(named: Sequence[str]) -> str:
    """The other loads the busy watch named, the heaviest first, in a line: "python3 (pid 42) 99% of a CPU, loop7 …
    and 3 more"."""
    shown = ", ".join(named[:BUSY_SHOWN]) or "another load"
    return shown + (f" and {len(named) - BUSY_SHOWN} more" if len(named) > BUSY_SHOWN else "")


def reason_clauses(g: GoalAdviceDoc) -> list[str]:
    """Why a goal cannot tell, one clause a reason, each with what would decide it."""
    out: list[str] = []
    for code in sorted(g.reasons, key=lambda c: c != "busy"):  # another load, when there was one, first: its cause
        if code == "too-wide":
            widest = _widest(g)
            out.append(f"{widest or 'no interval to hold to'} {_margin(g)}; {runs_words(g)}")
        elif code == "budget":
            widest = _widest(g)
            where = (f"{widest} {_margin(g)} at {g.runs_per_variant} runs a variant, where the budget "
                     "stopped the tests" if widest and g.runs_per_variant else
                     "the budget stopped the tests before this one had runs to judge")
            budget = (f": a budget of about {budget_words(g.budget_needed_s)} would" if g.budget_needed_s is not None
                      else "" if g.runs_needed is not None else ": a larger --budget would")
            out.append(f"{where}; {runs_words(g)}{budget}")
        elif code == "two-groups":
            out += [split_words(g, s) for s in g.splits]
        elif code == "busy":
            out.append(f"the machine was busy beside the tests: {busy_words(g.busy)}; a quieter time "
                       "(or --on a spare) would decide")
        elif code == "too-few-runs":
            out.append(f"too few valid runs: {g.invalid_runs} invalid; more runs (a larger --budget) would decide")
        elif code == "unjudged":
            out.append("a candidate could not be judged")
        elif code == "replay-behind":
            out.append(f"{g.behind_runs} replay run(s) fell behind the capture's timing: the device or this machine "
                       "could not keep its pace")
    return out


def _margin(g: GoalAdviceDoc) -> str:
    """The end of the margin a candidate's interval must stay below the better way: "+10%", "−9.1%" for a latency."""
    return margin_text(g.margin or 0.0, "higher" if higher_is_better(g.metric) else "lower", minus="−")


def _widest(g: GoalAdviceDoc) -> str | None:
    """"none vs mq-deadline (90% CI −5.0% to +31%) spans past": the candidate whose shown interval reaches furthest
    the better way, its level named as the evidence line names it; None when none was judged."""
    judged = [e for e in g.estimates if e.ratio is not None]
    if not judged:
        return None
    e = max(judged, key=lambda x: _better_end(g, x))
    iv = _shown(g, e)
    span = f"({level_words(iv[2])} CI {_pct(iv[0])} to {_pct(iv[1])})" if iv is not None else "an interval unknown"
    return f"{e.variant} vs {g.baseline} {span} spans past"


def goal_headline(g: GoalAdviceDoc) -> str:
    """The answer for one goal, hyperfine style: "switch to none: +28% IOPS (95% CI +19% to +37%)", "keep mq-deadline
    — shown equal: no candidate is more than 10% better (90% intervals within −4% to +6%)", "cannot tell: …"."""
    margin = f"{(g.margin or 0):.0%}"
    if g.outcome == "switch" and g.recommended is not None and g.estimate is not None:
        return f"switch to {g.recommended}: {shown_words(g, g.estimate)}"
    if g.outcome == "keep-equal":
        ivs = [iv for e in g.estimates if (iv := _shown(g, e)) is not None]
        within = (f" ({level_words(ivs[0][2])} intervals within {_pct(min(i[0] for i in ivs))} to "
                  f"{_pct(max(i[1] for i in ivs))})") if ivs else ""
        return f"keep {g.baseline} — shown equal: no candidate is more than {margin} better{within}"
    clauses = reason_clauses(g)
    return "cannot tell: " + (clauses[0] if clauses else "the rule could not decide")


def _cost_word(metric: str, e: EstimateDoc) -> str:
    """"its cost" only for a figure that got worse; "beside it" otherwise."""
    if e.ratio is None:
        return "beside it"
    worse = e.ratio < 1.0 if higher_is_better(metric) else e.ratio > 1.0
    return "its cost" if worse else "beside it"


def short_words(g: GoalAdviceDoc) -> str:
    """One clause: "switch to bfq for interactive use: foreground p50 −95%, background MB/s −30%", "keep none for
    throughput (shown equal within 10%)", "cannot tell for throughput (too wide)"."""
    if g.outcome == "switch" and g.recommended is not None and g.estimate is not None and g.estimate.ratio is not None:
        parts = [f"{_label(g.metric)} {_pct(g.estimate.ratio)}"]
        parts += [f"{_label(m)} {_pct(e.ratio)}" for m, e in g.costs if e.ratio is not None]
        return f"switch to {g.recommended} for {GOAL_WORDS[g.goal]}: {', '.join(parts)}"
    if g.outcome == "keep-equal":
        return f"keep {g.baseline} for {GOAL_WORDS[g.goal]} (shown equal within {(g.margin or 0):.0%})"
    return f"cannot tell for {GOAL_WORDS[g.goal]} ({', '.join(REASON_WORDS.get(r, r) for r in g.reasons)})"


REASON_WORDS = {"too-wide": "the intervals are too wide", "budget": "stopped at the budget",
                "two-groups": "runs in two groups",
                "busy": "a busy machine", "too-few-runs": "too few valid runs",
                "unjudged": "a candidate could not be judged", "replay-behind": "a replay fell behind"}


def tradeoff_words(goals: Sequence[GoalAdviceDoc]) -> str:
    """The answer over every goal in one sentence: "switch to bfq for interactive use: foreground p50 −95%,
    background MB/s −30%; keep none for throughput (shown equal within 10%)"."""
    return "; ".join(short_words(g) for g in goals)


def mde_words(metric: str, change: float | None) -> str:
    """The smallest detectable effect, signed as the metric moves: "+4%" for a rate, "−91%" for a latency."""
    if change is None or not math.isfinite(change) or change <= -1.0:
        return "unknown"
    return _pct(1.0 + change)


def exclusion_words(x: Exclusion) -> str:
    """Why a candidate was left out of a goal: another goal's interval does not show it within the margin."""
    return (f"on {GOAL_WORDS[x.goal]} it is not shown within {x.margin:.0%} of the best: {metric_label(x.metric)} "
            f"{_pct(x.worst)} against the best at its interval's worse end")


def candidate_line(g: GoalAdviceDoc, e: EstimateDoc) -> str:
    """One candidate's comparison, with the interval the goal's headline shows."""
    if e.ratio is None:
        return f"{e.variant} vs {g.baseline}: cannot judge ({e.cannot_judge or 'no estimate'})"
    return f"{e.variant} vs {g.baseline}: {shown_words(g, e)}"


def level_note(g: GoalAdviceDoc, alpha: float = 0.05) -> str | None:
    """Why a switch's interval is wider than the rule's plain 1 - ``alpha``: "99.6% CI: the level a repeated look
    needs for 95% overall" (several candidates: "repeated looks at 3 candidates need"); None at the plain level."""
    e = g.estimate
    if g.outcome != "switch" or e is None or e.level is None or e.level <= 1.0 - alpha + 1e-9:
        return None
    n = len(g.estimates)
    who = f"repeated looks at {n} candidates need" if n > 1 else "a repeated look needs"
    return f"{level_words(e.level)} CI: the level {who} for {level_words(1.0 - alpha)} overall"


def goal_lines(g: GoalAdviceDoc, alpha: float = 0.05) -> list[str]:
    """The advice for one goal, the answer first, then its evidence (``alpha``: the rule's)."""
    lines = [f"{GOAL_WORDS[g.goal]}: {goal_headline(g)}"]
    lines += [f"  {note}" for note in [level_note(g, alpha)] if note is not None]
    if g.outcome == "cannot-tell":
        lines += [f"  also: {c}" for c in reason_clauses(g)[1:]]
    else:  # a switch whose winner's runs split by its designed effect: how often it fired
        lines += [f"  {split_words(g, x)}" for x in g.splits]
    lines += [f"  {_cost_word(m, e)}: {estimate_words(m, e)}" for m, e in g.costs]
    lines += [f"  left out: {v}: {why}" for v, why in g.excluded]
    lines += [f"  {n}" for n in g.notes]
    return lines


def the_rule(rule: Rule | AdviceRuleDoc) -> list[str]:
    """The rule in words, said before the first run."""
    m, a = f"{rule.margin:.0%}", rule.alpha
    return [
        f"decided by a rule fixed before the first run (alpha {a:g}, margin {m}):",
        "  switch: a candidate's interval against what the device has now clears no change (Holm over the "
        f"candidates) and its estimate is at least {m} better; if several, the best, provided on every other goal "
        f"its interval shows it within {m} of the best there;",
        f"  keep, shown equal: no switch, and every candidate's {1 - 2 * a:.0%} interval (a one-sided test at "
        f"{a:g} each, all of which must pass: no correction needed) shows it no more than {m} better;",
        "  cannot tell: neither, or runs in two groups, a busy machine, too few valid runs, a candidate not judged, "
        "a replay fallen behind or the tests stopped at the budget: said with what would decide it (exit 1);",
        "  a variant whose comparison crosses the sequential boundary in the worse direction at a look is "
        f"dropped: drops and wins together keep the error rate at {a:g} per goal; while a candidate leads by "
        f"{m} or more, one shown worse than it leaves too, never to be the switch, still counted by Holm.",
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
