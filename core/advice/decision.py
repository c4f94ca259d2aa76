"""The decision from an advice's saved runs: each goal's test looked at again on its schedule (the same ``Looks`` as
while it ran, each look on the runs the compare held then), its evidence, and the rule stated before the first run
(core/statistics/advice_rule.py). `advise` decides with it when its tests end, and `report FILE` decides again with
it from the saved file: the same runs give the same answer.

Also the two-way mapping between the rule's types and the document's (core/documents/document.py), so the words
are made from the document in one place (core/present/advice_report.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from iosched.core.advice.keep import commands
from iosched.core.base.decode import DecodeError, decode
from iosched.core.base.errors import BadInput
from iosched.core.documents.document import (
    AdviceDoc,
    AdviceTestDoc,
    EstimateDoc,
    GoalAdviceDoc,
    KeepDoc,
    SplitDoc,
)
from iosched.core.documents.params import Variant
from iosched.core.documents.saved import MAX_DEPTH, conditions_fault
from iosched.core.statistics.advice_looks import Looks
from iosched.core.statistics.advice_rule import (
    Advice,
    Cost,
    Estimate,
    GoalAdvice,
    GoalEvidence,
    Rule,
    decide,
    estimates_of,
    higher_is_better,
    splits_of,
)
from iosched.core.statistics.judge import estimates, run_values


def looks_again(test: AdviceTestDoc, margin: float | None = None) -> Looks:
    """The test's looks taken again on its saved runs: each look on the runs the compare held when it was taken; a
    test that ended before its last look may have ended on a win (at ``margin``)."""
    early = margin if len(test.looked) < len(test.looks) else None  # one that ran on to its last look did not
    looks = Looks(test.goal, test.metric, test.variants[0], test.variants[1:], test.looks, test.level, margin=early)
    if test.result is None:
        return looks
    for n, count in zip(test.looks, test.looked, strict=False):
        if looks.done:  # a file saved by an earlier rule may hold looks this one did not need
            break
        cut = replace(test.result, runs=test.result.runs[:count])
        looks.look(n, estimates(cut, test.metric), run_values(cut, test.metric))
    return looks


def evidence_of(test: AdviceTestDoc, alpha: float, busy: Sequence[str] = (),
                stopped: bool = False, margin: float | None = None) -> GoalEvidence | None:
    """What the rule decides the test's goal on, once its last look was taken (None before; ``stopped`` at the
    budget: the runs it has, and a test never begun has nothing but its pilot's noise; a test that ended early may
    have ended on a win at ``margin``): the estimates on its figure and, for the survivors, the other figures stated
    beside it (at alpha, Holm over the survivors); every variant's runs checked for two groups; its invalid runs, and
    what the busy watch named."""
    looks = looks_again(test, margin)
    if stopped and not looks.done and test.result is not None and test.result.runs:
        counts = [sum(1 for r in test.result.runs if r.variant == v) for v in [test.variants[0], *looks.active]]
        looks.stop(min(counts), estimates(test.result, test.metric))
    if stopped and test.result is None:  # not begun: its candidates without a run
        none = tuple(Estimate(v, None, None, None, None, None, 0, "few-runs:variant") for v in test.variants[1:])
        return GoalEvidence(test.goal, test.metric, test.variants[0], none, 0, level=test.level, busy=tuple(busy),
                            stopped=True, noise=test.noise)
    if not looks.done or test.result is None:
        return None
    ev = replace(looks.evidence(), noise=test.noise)
    costs = []
    for metric in test.costs:
        judged = estimates(test.result, metric)
        costs.append(Cost(metric, estimates_of({v: judged[v] for v in looks.active if v in judged}, alpha)))
    values: dict[str, list[float]] = {v: [] for v in test.variants}  # the dropped ones' runs to their drop too
    for r in test.result.runs:
        x = r.metrics.get(test.metric)
        if r.valid and r.variant in values and x is not None:
            values[r.variant].append(float(x))
    invalid = [r for r in test.result.runs if not r.valid]
    behind = sum(1 for r in invalid if r.replay is not None and r.replay.lag_s > r.replay.bound_s)
    return replace(ev, costs=tuple(costs), splits=splits_of(values, test.metric), busy=tuple(busy),
                   invalid_runs=len(invalid), behind_runs=behind)


def rule_of(doc: AdviceDoc) -> Rule:
    return Rule(alpha=doc.rule.alpha, margin=doc.rule.margin, power=doc.rule.power)


def decide_doc(doc: AdviceDoc) -> Advice | None:
    """The advice over every goal from the saved runs; None while a test has not reached its last look."""
    evidence = []
    stopped = doc.budget is not None and doc.budget.stopped
    for t in doc.tests:
        ev = evidence_of(t, doc.rule.alpha, doc.busy, stopped, doc.rule.margin)
        if ev is None:
            return None
        evidence.append(ev)
    if not evidence:
        return None
    return decide(evidence, rule_of(doc))


# --- a saved advice ---------------------------------------------------------------------------------------------


def _holds_together(t: AdviceTestDoc) -> str | None:
    """Why a saved test's looks cannot be taken again on its runs, or None."""
    if not t.variants or len(set(t.variants)) != len(t.variants):
        return "its variants are missing or named twice"
    if list(t.looks) != sorted(set(t.looks)):
        return "its looks do not grow"
    if len(t.looked) > len(t.looks) or list(t.looked) != sorted(t.looked):
        return "its looks taken do not follow its schedule"
    if t.result is None:
        return "it has looks but no runs" if t.looked else None
    if [v.label for v in t.result.variants] != list(t.variants):
        return "its runs are not of its variants"
    if t.looked and t.looked[-1] > len(t.result.runs):
        return "it looked at more runs than it holds"
    if any(d.variant not in t.variants[1:] for d in t.dropped):
        return "it dropped a variant it did not test"
    return None


def read_advice(doc: object, path: object) -> AdviceDoc:
    """A saved advice (`advise --save`), its tests checked so the looks can be taken again; BadInput otherwise."""
    try:
        advice = decode(AdviceDoc, doc, max_depth=MAX_DEPTH)
    except DecodeError as e:
        raise BadInput(f"{path} is not a saved iosched advice: {e}") from None
    if (fault := conditions_fault(advice.conditions)) is not None:
        raise BadInput(f"{path} is not a saved iosched advice: {fault}")
    for i, t in enumerate(advice.tests):
        why = _holds_together(t)
        if why is not None:
            raise BadInput(f"{path} is not a saved iosched advice: test {i + 1} ({t.goal}): {why}")
    return advice


NOT_FROM_RUNS = ("the file's runs do not reach its tests' last looks, and an answer is judged from the runs, never "
                 "taken from a file")


def decided_again(doc: AdviceDoc) -> AdviceDoc:
    """The advice decided again from the saved runs (what `report` shows); a setting newly recommended gets its
    commands (its udev rule comes from `advise` on the device). A saved advice is judged from its runs, never
    trusted for its conclusion: without the runs that decide it (a file whose runs were taken out, one not
    finished), the answer, trade-off and settings to keep it holds are dropped and it says why."""
    advice = decide_doc(doc) if doc.status == "final" else None
    if advice is None:
        if not (doc.advice or doc.keep or doc.tradeoff):
            return doc
        notes = doc.notes if doc.status != "final" else [*doc.notes, NOT_FROM_RUNS]
        return replace(doc, advice=[], tradeoff=None, keep=[], notes=notes)
    goals = with_budget_needed(doc, [goal_doc(g, doc.rule.alpha) for g in advice.goals])
    saved = {k.variant: k for k in doc.keep}
    keeps = []
    for label in recommended(goals):
        k = saved.get(label)
        if k is None:
            v = next((c.variant for c in doc.plan.candidates if c.variant.label == label), None)
            if v is None:
                continue
            k = KeepDoc(variant=label, scheduler=v.scheduler, settings=dict(v.settings),
                        commands=commands(doc.device, Variant(label, v.scheduler, tuple(v.settings.items()))),
                        rule=None, scope=None, class_rule=None, class_scope=None, warnings=[])
        keeps.append(k)
    notes = doc.notes
    if goals != doc.advice:
        notes = [*notes, "decided again from the saved runs, the answer differs from the one saved"]
    return replace(doc, advice=goals, tradeoff="", keep=keeps, notes=notes)  # its words: core/present/worded.py


# --- the rule's types and the document's ----------------------------------------------------------------------


def estimate_doc(e: Estimate, alpha: float = 0.05) -> EstimateDoc:
    eq = e.equal_interval(alpha)
    return EstimateDoc(variant=e.variant, ratio=e.ratio, ci_low=e.ci_low, ci_high=e.ci_high,
                       p_adjusted=e.p_adjusted, sd_log=e.sd_log, n=e.n, cannot_judge=e.cannot_judge, level=e.level,
                       equal_low=None if eq is None else eq[0], equal_high=None if eq is None else eq[1])


def estimate_of(d: EstimateDoc) -> Estimate:
    return Estimate(d.variant, d.ratio, d.ci_low, d.ci_high, d.p_adjusted, d.sd_log, d.n, d.cannot_judge, d.level)


def _change(ratio: float | None) -> float | None:
    return None if ratio is None else ratio - 1.0


def goal_doc(g: GoalAdvice, alpha: float = 0.05) -> GoalAdviceDoc:
    """A goal's answer as the document keeps it: the numbers, every effect signed as the figure moves; why a
    candidate was left out and why one could not be judged are written from the decision's numbers
    (core/present/advice_report.py ``worded_advice``)."""
    higher = higher_is_better(g.metric)
    e = g.estimate
    effect = low = high = level = None
    if e is not None and e.judged:
        effect = _change(e.ratio)
        if g.outcome == "switch":
            low, high, level = _change(e.ci_low), _change(e.ci_high), e.level
        elif (eq := e.equal_interval(alpha)) is not None:
            low, high, level = eq[0] - 1.0, eq[1] - 1.0, 1.0 - 2.0 * alpha
    mde = g.smallest_effect
    signed_mde = None if mde is None else mde if higher else 1.0 / (1.0 + mde) - 1.0
    return GoalAdviceDoc(goal=g.goal, metric=g.metric, baseline=g.baseline, recommended=g.recommended,
                         estimate=None if e is None else estimate_doc(e, alpha), smallest_effect=signed_mde,
                         excluded=[(v, "") for v, _ in g.excluded],
                         costs=[(m, estimate_doc(x, alpha)) for m, x in g.costs], notes=[], outcome=g.outcome,
                         reasons=list(g.reasons), margin=g.margin, better="higher" if higher else "lower",
                         effect=effect, effect_low=low, effect_high=high, effect_level=level,
                         estimates=[estimate_doc(x, alpha) for x in g.estimates], runs_per_variant=g.runs_per_variant,
                         runs_needed=g.runs_needed,
                         splits=[SplitDoc(variant=x.variant, better=x.better, n=x.n, better_range=x.better_range,
                                          worse_range=x.worse_range, worse_vs_baseline=x.worse_vs_baseline)
                                 for x in g.splits],
                         busy=list(g.busy), invalid_runs=g.invalid_runs, behind_runs=g.behind_runs)


def with_budget_needed(doc: AdviceDoc, goals: list[GoalAdviceDoc]) -> list[GoalAdviceDoc]:
    """The goals, each that cannot tell for the budget given about the --budget that would have run what every such
    goal still needs: what ran so far, and each one's runs still needed a variant (the current setting and the
    candidates still running) at the time a run took here. Unchanged when the tests did not stop at the budget, or
    when a goal's runs needed are unknown."""
    b = doc.budget
    ran = sum(len(t.result.runs) if t.result else 0 for t in doc.tests) + \
        sum(len(t.pilot.runs) if t.pilot else 0 for t in doc.tests)
    if b is None or not b.stopped or not ran:
        return goals
    each = max(b.elapsed_s - b.before_s, 0.0) / ran
    short = [(g, t) for g, t in zip(goals, doc.tests, strict=False) if "budget" in g.reasons]
    if not short or any(g.runs_needed is None for g, _t in short):
        return goals
    more = sum(max(0, (g.runs_needed or 0) - g.runs_per_variant) *
               (len(t.variants) - len({d.variant for d in t.dropped})) for g, t in short)
    need = b.elapsed_s + more * each
    return [replace(g, budget_needed_s=need) if "budget" in g.reasons else g for g in goals]


def recommended(goals: Sequence[GoalAdviceDoc]) -> list[str]:
    """The variants the goals recommend, each once, in the goals' order."""
    return list(dict.fromkeys(g.recommended for g in goals if g.recommended is not None))
