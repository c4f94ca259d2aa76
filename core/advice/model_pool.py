"""An advice on many hosts pooled per device model: hosts grouped by the model and firmware their advice recorded;
per goal, each host's own answer (decided again from its runs), whether they agree and who does not, then each
candidate pooled over the hosts and decided by the same rule the hosts decided by (core/statistics/advice_rule.py).

The pool: each host's estimate of a candidate against the current setting on the goal's figure (its plain Welch
interval, as a fleet compare pools it: core/statistics/fleet_verdict.py) enters a random-effects mean of log ratios
(core/statistics/pooled.py, Hartung-Knapp: t with hosts - 1 df, never narrower than the hosts' own noise); the
pooled candidates are Holm-adjusted over the goal's candidates, each interval at the level that goes with its
adjusted p-value, and the rule's three outcomes follow as on one host. Hosts that measured different things (another
figure, another current setting) are not pooled, and say so.

Agreement is on the answers: hosts agree when each gave the same one (switch to the same setting, keep, or cannot
tell). Otherwise the answer the others are weighed against is the pooled one when it decides, else the one most
hosts gave; a host whose own answer is another is named, with its own estimate beside the pooled one. With no
answer most hosts gave (a tie), every host is named. A host that disagrees is never pooled away: it is in the pool
and in the words.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from iosched.core.advice.decision import goal_doc, rule_of
from iosched.core.advice.keep import model_keep
from iosched.core.base.errors import BadInput
from iosched.core.documents.document import (
    AdviceDoc,
    AdviceHostDoc,
    AdviceTestDoc,
    GoalAdviceDoc,
    HostAnswerDoc,
    ModelAdviceDoc,
    ModelGoalDoc,
)
from iosched.core.documents.params import Variant, parse_variants
from iosched.core.statistics.advice_rule import Estimate, GoalEvidence, Rule, decide
from iosched.core.statistics.fleet_verdict import se_from_interval
from iosched.core.statistics.holm_intervals import LogComparison, holm_intervals
from iosched.core.statistics.judge import estimates
from iosched.core.statistics.pooled import HostEffect, NotPooled, Pooled, pool
from iosched.core.statistics.stats import RatioEstimate, t_ppf


def model_of(doc: AdviceDoc) -> tuple[str | None, str | None]:
    """The device's model and firmware as the advice recorded them (its conditions, else what observe read)."""
    c = doc.conditions
    model = (c.device_model if c is not None else None) or doc.observed.model
    firmware = c.firmware if c is not None else None
    return (model.strip() or None) if model else None, (firmware.strip() or None) if firmware else None


def answer_key(g: GoalAdviceDoc) -> str:
    return f"switch:{g.recommended}" if g.outcome == "switch" and g.recommended else g.outcome


@dataclass(frozen=True)
class GoalPool:
    """One goal pooled over a model's hosts: the rule's evidence, each host's effects, or why none."""

    evidence: GoalEvidence | None
    effects: dict[str, dict[str, HostEffect]]  # candidate -> host -> its estimate as it entered the pool
    pooled: dict[str, Pooled]  # candidate -> its pool
    why: str | None  # few-hosts, not-tested, different-tests


def _test(doc: AdviceDoc, goal: str) -> AdviceTestDoc | None:
    return next((t for t in doc.tests if t.goal == goal and t.result is not None and t.result.runs), None)


def pool_goal(goal: str, hosts: Sequence[tuple[str, AdviceDoc]]) -> GoalPool:
    """``goal``'s candidates pooled over ``hosts`` (each with a finished advice): the rule's evidence."""
    tests = [(h, _test(d, goal)) for h, d in hosts]
    found = [(h, t) for h, t in tests if t is not None]
    if len(found) < 2:
        return GoalPool(None, {}, {}, "few-hosts" if found else "not-tested")
    first = found[0][1]
    if any(t.metric != first.metric or t.variants[0] != first.variants[0] for _h, t in found):
        return GoalPool(None, {}, {}, "different-tests")
    candidates = [v for v in first.variants[1:] if all(v in t.variants for _h, t in found)]
    effects: dict[str, dict[str, HostEffect]] = {v: {} for v in candidates}
    for h, t in found:
        assert t.result is not None
        for v, e in estimates(t.result, t.metric).items():
            if v in effects and isinstance(e, RatioEstimate):
                effects[v][h] = HostEffect(h, math.log(e.ratio), se_from_interval(e))
    pooled: dict[str, Pooled] = {}
    for v, each in effects.items():
        if len(each) >= 2:
            try:
                pooled[v] = pool(list(each.values()))
            except NotPooled:  # only a hostile or broken file gets here: the candidate is left unjudged
                continue
    comparisons = {v: _comparison(p) for v, p in pooled.items()}
    usable = [v for v in candidates if comparisons.get(v) is not None]
    rule_alpha = hosts[0][1].rule.alpha
    intervals = dict(zip(usable, holm_intervals([c for v in usable if (c := comparisons[v]) is not None],
                                                rule_alpha), strict=True)) if usable else {}
    out = []
    for v in candidates:
        c = comparisons.get(v)
        if c is None:
            out.append(Estimate(v, None, None, None, None, None, len(effects[v]), "few-hosts"))
            continue
        hi = intervals[v]
        out.append(Estimate(v, pooled[v].ratio, hi.ci_low, hi.ci_high, hi.p_adjusted, None, len(effects[v]), None,
                            hi.level, c.se, c.df))
    busy = tuple(dict.fromkeys(b for _h, d in hosts for b in d.busy))
    ev = GoalEvidence(first.goal, first.metric, first.variants[0], tuple(out), len(found), busy=busy)
    return GoalPool(ev, effects, pooled, None)


def _comparison(p: Pooled) -> LogComparison | None:
    """The pool as one t-based comparison on the log scale (its standard error from its 95% interval)."""
    if p.df <= 0 or not (0 < p.ci_low < p.ci_high):
        return None
    se = (math.log(p.ci_high) - math.log(p.ci_low)) / (2.0 * t_ppf(0.975, p.df))
    try:
        return LogComparison(math.log(p.ratio), se, p.df)
    except ValueError:
        return None


def _answers(goal: str, hosts: Sequence[tuple[str, AdviceDoc]], pooled: GoalAdviceDoc | None,
             effects: dict[str, dict[str, HostEffect]]) -> tuple[list[HostAnswerDoc], bool, list[str]]:
    """Each host's answer on ``goal``, whether they all agree, and who differs (see the module's rule)."""
    own = [(h, next((g for g in d.advice if g.goal == goal), None)) for h, d in hosts]
    keys = {h: answer_key(g) if g is not None else "cannot-tell" for h, g in own}
    agree = len(set(keys.values())) == 1
    reference: str | None = None
    if not agree:
        if pooled is not None and pooled.outcome != "cannot-tell":
            reference = answer_key(pooled)
        else:
            (top, n), *rest = Counter(keys.values()).most_common()
            reference = top if not rest or rest[0][1] < n else None
    variant = None
    if pooled is not None:
        variant = pooled.recommended or (pooled.estimate.variant if pooled.estimate is not None else None)
    if variant is None and reference is not None and reference.startswith("switch:"):
        variant = reference[len("switch:"):]
    answers = []
    for h, g in own:
        e = effects.get(variant, {}).get(h) if variant is not None else None
        answers.append(HostAnswerDoc(host=h, outcome=g.outcome if g is not None else "cannot-tell",
                                     recommended=g.recommended if g is not None else None, variant=variant,
                                     ratio=e.ratio if e is not None else None,
                                     agrees=agree or keys[h] == reference))
    return answers, agree, [a.host for a in answers if not a.agrees]


def group_by_model(hosts: Sequence[AdviceHostDoc]) -> list[tuple[tuple[str | None, str | None], list[AdviceHostDoc]]]:
    """The hosts with a finished advice, grouped by the model and firmware recorded, in the order first seen."""
    groups: dict[tuple[str | None, str | None], list[AdviceHostDoc]] = {}
    for h in hosts:
        if h.status == "done" and h.result is not None and h.result.status == "final":
            groups.setdefault((h.model, h.firmware), []).append(h)
    return list(groups.items())


def pool_model(model: str | None, firmware: str | None, hosts: Sequence[AdviceHostDoc]) -> ModelAdviceDoc:
    """One model's hosts pooled: per goal the answers and the agreement, the pooled answer, and how to keep it."""
    docs = [(h.host, h.result) for h in hosts if h.result is not None]
    rule: Rule = rule_of(docs[0][1])
    goals = list(dict.fromkeys(g for _h, d in docs for g in d.goals))
    pools = [(g, pool_goal(g, docs)) for g in goals]
    evidence = [p.evidence for _g, p in pools if p.evidence is not None]
    decided = iter(decide(evidence, rule).goals) if evidence else iter(())
    out = []
    alone = len(docs) == 1
    for g, p in pools:
        pooled = goal_doc(next(decided), rule.alpha) if p.evidence is not None else None
        if alone:  # a model of one host: its own answer is the model's
            pooled = next((x for x in docs[0][1].advice if x.goal == g), None)
            p = replace(p, why="one-host")
        answers, agree, differ = _answers(g, docs, pooled, p.effects)
        variant = answers[0].variant if answers else None
        i2 = p.pooled[variant].i2 if variant is not None and variant in p.pooled else None
        out.append(ModelGoalDoc(goal=g, hosts=answers, agree=agree, differ=differ, pooled=pooled, i2=i2, why=p.why))
    keep = []
    for label in dict.fromkeys(m.pooled.recommended for m in out if m.pooled is not None and m.pooled.recommended):
        if label is None:
            continue
        v = _variant(label, docs)
        if v is not None:
            keep.append(model_keep(model, firmware, v, [(h.host, h.device) for h in hosts]))
    return ModelAdviceDoc(model=model, firmware=firmware, hosts=[h.host for h in hosts], goals=out, keep=keep)


def _variant(label: str, docs: Sequence[tuple[str, AdviceDoc]]) -> Variant | None:
    """The candidate ``label`` as a host's plan named it, read through --candidates' own parser (a host's words are
    outside input: a label that is not a variant iosched could name makes no rule); None when none did."""
    if not any(c.variant.label == label for _h, d in docs for c in d.plan.candidates):
        return None
    try:
        (v,) = parse_variants(label.split("#")[0], least=1, most=1, flag="a host's candidate")
    except BadInput:
        return None
    return v


def pool_models(hosts: Sequence[AdviceHostDoc]) -> list[ModelAdviceDoc]:
    """Every model's hosts pooled (a model of one host too: its own answer, nothing to pool)."""
    return [pool_model(model, firmware, group) for (model, firmware), group in group_by_model(hosts)]
