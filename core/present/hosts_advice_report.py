"""`iosched advise --hosts` in words: per device model, the hosts and whether they agree — every host whose answer
is another named, with its own figure beside the pooled one — before the model's one answer and the rule that keeps
it on every disk of that model; then the hosts that failed, and each host's own answer. The rule decided by is said
first (as `advise` says it before its first run)."""

from __future__ import annotations

from iosched.core.advice.plan import GOAL_WORDS
from iosched.core.base.terminal_text import printable
from iosched.core.documents.document import (
    FleetAdviceDoc,
    GoalAdviceDoc,
    HostAnswerDoc,
    ModelAdviceDoc,
    ModelGoalDoc,
)
from iosched.core.documents.metrics import metric_label
from iosched.core.present.advice_words import goal_headline, the_rule, tradeoff_words, worded_goal
from iosched.core.present.worded import worded_hosts_advice

WHY_NOT_POOLED = {
    "one-host": "one host of this model: its own answer",
    "few-hosts": "fewer than two hosts tested it: nothing to pool",
    "not-tested": "no host finished its test",
    "different-tests": "the hosts measured different things (another figure, or another current setting): each "
                       "host's answer stands for itself",
}


def _pct(ratio: float) -> str:
    d = (ratio - 1.0) * 100.0
    size = f"{abs(d):.1f}" if abs(d) < 9.95 else f"{abs(d):.0f}"
    return ("+" if d >= 0 else "−") + size + "%"


def model_title(m: ModelAdviceDoc) -> str:
    name = f"model {m.model}" if m.model is not None else "devices that name no model"
    fw = f", firmware {m.firmware}" if m.firmware is not None else ""
    return printable(f"{name}{fw}: {len(m.hosts)} host{'s' if len(m.hosts) != 1 else ''} ({', '.join(m.hosts)})")


def answer_words(a: HostAnswerDoc, baseline: str) -> str:
    """A host's own answer, short: "switch to bfq", "keep none", "cannot tell"."""
    if a.outcome == "switch" and a.recommended is not None:
        return f"switch to {a.recommended}"
    return f"keep {baseline}" if a.outcome == "keep-equal" else "cannot tell"


def agreement_lines(g: ModelGoalDoc, metric: str | None, baseline: str) -> list[str]:
    """Whether the hosts agree on ``g``'s goal, and each host that does not, by how much (its own estimate of the
    candidate in question against the pooled one)."""
    goal = GOAL_WORDS[g.goal]
    n = len(g.hosts)
    if g.agree:
        said = answer_words(g.hosts[0], baseline)
        return [f"{goal}: {'the' if n > 2 else 'both' if n == 2 else 'one'} host{'s' if n != 1 else ''} "
                f"{'agree: ' if n > 1 else 'says '}{said}" + _spread(g, metric)]
    pooled = g.pooled.estimate.ratio if g.pooled is not None and g.pooled.estimate is not None else None
    agreeing = [a for a in g.hosts if a.agrees]
    head = (f"{goal}: the hosts disagree: {len(agreeing)} of {n} say {answer_words(agreeing[0], baseline)}"
            if agreeing else f"{goal}: the hosts disagree, no answer shared by most")
    lines = [head]
    for a in g.hosts:
        if a.agrees:
            continue
        figure = ""
        if a.variant is not None and a.ratio is not None:
            label = metric_label(metric) if metric else "the figure"
            figure = f": {a.variant} {label} {_pct(a.ratio)} there" + (
                f", {_pct(pooled)} pooled" if pooled is not None else "")
        lines.append(printable(f"  {a.host} says {answer_words(a, baseline)}{figure}"))
    return lines


def _spread(g: ModelGoalDoc, metric: str | None) -> str:
    """The agreeing hosts' own figures, when they differ in size though not in answer."""
    shown = [a for a in g.hosts if a.ratio is not None and a.variant is not None]
    if len(shown) < 2 or metric is None:
        return ""
    return f" ({shown[0].variant} {metric_label(metric)} " + ", ".join(
        printable(f"{a.host} {_pct(a.ratio)}") for a in shown if a.ratio is not None) + ")"


def pooled_line(g: ModelGoalDoc, pooled: GoalAdviceDoc | None) -> str:
    goal = GOAL_WORDS[g.goal]
    if g.why == "one-host" and pooled is not None:
        return f"  {WHY_NOT_POOLED['one-host']}: {goal_headline(pooled)}"
    if pooled is None:
        return f"  not pooled: {WHY_NOT_POOLED.get(g.why or '', g.why or 'no estimate')}"
    return f"  pooled over the hosts: {goal_headline(pooled)}" + (
        f" (spread beyond their noise: I² {g.i2:.0%})" if g.i2 is not None and goal else "")


def model_lines(m: ModelAdviceDoc) -> list[str]:
    """One model: its hosts, per goal the agreement first and then the pooled answer, then the one recommendation
    and the rule for every disk of the model."""
    lines = [model_title(m)]
    pooled_goals = []
    for g in m.goals:
        pooled = worded_goal(g.pooled, None) if g.pooled is not None else None
        metric = pooled.metric if pooled is not None else None
        baseline = pooled.baseline if pooled is not None else "what it has"
        lines += ["  " + line for line in agreement_lines(g, metric, baseline)]
        lines.append(pooled_line(g, pooled))
        if pooled is not None:
            pooled_goals.append(pooled)
    if pooled_goals:
        lines.append(printable(f"  recommendation for this model: {tradeoff_words(pooled_goals)}"))
    for k in m.keep:
        lines.append(f"  keep {k.variant} on every host now:")
        lines += [printable(f"    {c}") for c in k.commands]
        if k.rule is not None:
            lines.append(printable(f"  and at every boot, {k.scope} (one udev rule for the whole fleet):"))
            lines.append(printable(f"    {k.rule}"))
        lines += [printable(f"  {w}") for w in k.warnings]
    if pooled_goals and not m.keep:
        lines.append("  nothing to change" if all(g.outcome == "keep-equal" for g in pooled_goals) else
                     "  nothing changed: the hosts could not decide every goal together")
    return lines


def hosts_advice_lines(doc: FleetAdviceDoc) -> list[str]:
    """The whole fleet advice as `advise --hosts` prints it."""
    doc = worded_hosts_advice(doc)
    done = [h for h in doc.hosts if h.result is not None and h.status == "done"]
    how = " in lockstep (each goal's test on every host together)" if doc.mode == "lockstep" else ""
    lines = [f"advise on {len(doc.hosts)} hosts{how}: {len(done)} finished, pooled per device model "
             f"({len(doc.models)} model{'s' if len(doc.models) != 1 else ''})"]
    first = next((h.result for h in done if h.result is not None), None)
    if first is not None:
        lines += the_rule(first.rule)
    for m in doc.models:
        lines += ["", *model_lines(m)]
    failed = [h for h in doc.hosts if h.status != "done"]
    if failed:
        lines.append("")
        lines += [printable(f"{h.host}: {h.status}: {h.reason or 'no answer'} (not pooled)") for h in failed]
    lines += ["", "each host's own answer:"]
    for h in doc.hosts:
        if h.result is not None and h.result.advice:
            lines.append(printable(f"  {h.host} ({h.device}): {tradeoff_words(h.result.advice)}; {h.put_back}"))
        elif h.result is not None:
            lines.append(printable(f"  {h.host} ({h.device}): no answer ({h.result.status}); {h.put_back}"))
        else:
            lines.append(printable(f"  {h.host} ({h.device}): none; {h.put_back}"))
    return lines


def undecided(doc: FleetAdviceDoc) -> bool:
    """Whether a model could not decide every goal, or a host gave no advice: `advise --hosts` exits 1."""
    if any(h.status != "done" for h in doc.hosts) or not doc.models:
        return True
    return any(g.pooled is None or g.pooled.outcome == "cannot-tell" for m in doc.models for g in m.goals)
