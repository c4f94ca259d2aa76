"""An advice in words, for both front ends and `report`: the answer first (switch, keep shown equal with its margin,
or cannot tell with why and what would decide), how to keep it, then the evidence (each test, its
drops, the rule, the device as observed, the plan); and a short markdown report to paste into a ticket.

Made from the document alone (core/documents/document.py ``AdviceDoc``): what `advise` prints when it ends is what
`report FILE` prints from the saved file. The rule decides in numbers (core/statistics/advice_rule.py); its words
are written here, in the text and at encode time (``worded_advice``).
"""

from __future__ import annotations

from iosched.core.advice.plan import GOAL_WORDS, duration_words
from iosched.core.base.units import human_size
from iosched.core.documents.document import AdviceDoc, AdviceTestDoc, GoalAdviceDoc, KeepDoc, RunDoc
from iosched.core.documents.metrics import metric_label
from iosched.core.present.advice_words import (
    candidate_line,
    estimate_words,
    goal_headline,
    goal_lines,
    short_words,
    shown_words,
    the_rule,
)
from iosched.core.present.conditions import condition_lines
from iosched.core.present.evidence import advice_tables, code, conditions_markdown, fenced, md, page
from iosched.core.present.worded import worded_advice, worded_experiment

SET_BY = {"iosched": "set by iosched", "tuned": "set by tuned", "udev": "set by a udev rule",
          "kernel": "the kernel's default", "unknown": "set by hand or a tool iosched cannot see"}


def headline(doc: AdviceDoc) -> str:
    """The answer in one line, each goal's outcome first: "loop3: throughput: switch to none: +28% IOPS (95% CI
    +19% to +37%)"."""
    doc = worded_advice(doc)
    if doc.status == "planned":
        return f"{doc.device}: planned, not run"
    if doc.status != "final" or not doc.advice:
        return f"{doc.device}: no advice: {doc.notes[-1] if doc.notes else 'the tests did not finish'}"
    if len(doc.advice) == 1:
        return f"{doc.device}: {goal_headline(doc.advice[0])}"
    return f"{doc.device}: {doc.tradeoff}"


def keep_lines(k: KeepDoc, device: str) -> list[str]:
    out = [f"to set {k.variant} now (until the next boot): " + " && ".join(k.commands)]
    if k.rule:
        out.append(f"to keep it at every boot, a udev rule for {k.scope}:")
        out.append(f"  {k.rule}")
    if k.class_rule:
        out.append(f"  or for {k.class_scope}:")
        out.append(f"  {k.class_rule}")
    if k.persisted:
        out.append(f"  written to {k.persisted}")
    elif k.rule:
        out.append(f"  `iosched persist {device} {k.scheduler}"
                   + "".join(f" --set {n}={v}" for n, v in k.settings.items())
                   + "` writes it (or `advise … --persist`)")
    out += [f"  note: {w}" for w in k.warnings]
    return out


def _than(t: AdviceTestDoc, g: GoalAdviceDoc | None, variant: str) -> str:
    """What a variant that left early was shown worse than: the current setting (its comparison crossed the boundary
    the worse way) or the leading candidate (core/statistics/advice_looks.py); nothing when the answer is not known."""
    e = next((x for x in g.estimates if x.variant == variant), None) if g is not None else None
    if e is None or e.ratio is None or e.p_adjusted is None:
        return ""
    worse = (e.ratio < 1.0) == (g is not None and g.better == "higher")
    return f" than {t.variants[0]}" if worse and e.p_adjusted < t.level else " than the leading candidate"


def test_lines(t: AdviceTestDoc, g: GoalAdviceDoc | None = None) -> list[str]:
    """One test's evidence: what ran, how many runs, what left early, and each candidate's comparison with the one
    interval its goal's answer shows."""
    r = t.result
    runs = len(r.runs) if r else 0
    out = [f"{GOAL_WORDS[t.goal]}: {t.how}; judged on {metric_label(t.metric)}",
           f"  {len(t.variants)} variants, {runs} runs (looks at {', '.join(map(str, t.looks))} runs per variant, "
           f"boundary p < {t.level:.4f})"
           + (f"; the pilot's noise {t.noise:.1%} per run" if t.noise is not None else "")]
    for d in t.dropped:
        out.append(f"  {d.variant} left at {d.at} runs per variant: clearly worse{_than(t, g, d.variant)}")
    if g is not None:
        out += [f"  {candidate_line(g, e)}" for e in g.estimates]
    elif r is not None and r.judgement is not None:
        out += [f"  {c.verdict}" for c in worded_experiment(r).judgement.comparisons if c.primary]  # type: ignore[union-attr]
    return out


def advice_lines(doc: AdviceDoc) -> list[str]:
    """The whole advice as `advise` prints it: answer, how to keep it, then the evidence."""
    doc = worded_advice(doc)
    lines = [headline(doc)]
    for g in doc.advice:
        lines += goal_lines(g, doc.rule.alpha)
    for k in doc.keep:
        lines += keep_lines(k, doc.device)
    if doc.advice and not doc.keep:
        lines.append("nothing to change" if all(g.outcome == "keep-equal" for g in doc.advice) else
                     "nothing changed: the tests could not decide every goal")
    lines += ["", "evidence:"]
    by_goal = {g.goal: g for g in doc.advice}
    for t in doc.tests:
        lines += ["  " + line for line in test_lines(t, by_goal.get(t.goal))]
    lines += ["  " + line for line in rule_lines(doc)]
    lines += ["  " + line for line in condition_lines(doc.conditions, doc.kernel, advice_runs(doc))]
    lines += ["", "observed:"] + ["  " + line for line in doc.observed.lines]
    lines += doc_workload_lines(doc)
    p = doc.plan
    budget = f" of a {duration_words(p.budget_s)} budget" if p.budget_s is not None else ""
    took = f"; took {duration_words(doc.finished - doc.started)}" if doc.finished is not None else ""
    if doc.budget is not None and doc.budget.stopped:
        took += f", stopped at the budget {doc.budget.runs_short} run(s) at most short of the plan"
    lines += ["", f"plan: at most about {duration_words(p.seconds)}{budget}{took}; baseline {p.baseline.label}; "
                  f"candidates {', '.join(c.variant.label for c in p.candidates)}",
              f"  the tests {'would write' if doc.status == 'planned' else 'wrote'} to {p.target}"]
    lines += [f"  first: {p.fill}"] if p.fill else []
    lines += [f"  cut to fit: {c}" for c in p.cuts]
    lines += [f"  note: {n}" for n in [*p.notes, *doc.notes]]
    lines += [f"  offer: {o}" for o in p.offers]
    return lines


def advice_runs(doc: AdviceDoc) -> list[RunDoc]:
    """Every run the tests made, the pilots' first."""
    return [r for t in doc.tests for c in (t.pilot, t.result) if c is not None for r in c.runs]


def rule_lines(doc: AdviceDoc) -> list[str]:
    return the_rule(doc.rule)


def doc_workload_lines(doc: AdviceDoc) -> list[str]:
    w = doc.workload
    if w.kind == "catalog":
        return []
    what = {"capture": "the observed workload", "replay": "the capture", "job": "the job", "cmd": "the command"}
    out = [f"workload: {what.get(w.kind, w.kind)} {w.ref}"]
    return out + ["  " + line for line in w.summary]


def _cell(text: str) -> str:
    return md(text, 600)


def goal_row(g: GoalAdviceDoc) -> str:
    effect = shown_words(g, g.estimate) if g.estimate is not None and g.estimate.ratio is not None else "–"
    costs = "; ".join(estimate_words(m, e) for m, e in g.costs) or "–"
    return f"| {GOAL_WORDS[g.goal]} | {_cell(goal_headline(g))} | {_cell(effect)} | {_cell(costs)} |"


def advice_markdown(doc: AdviceDoc, version: str = "") -> str:
    """A short report to paste into a ticket: the answer, a table per goal, how to keep it, what was tested."""
    doc = worded_advice(doc)
    o = doc.observed
    lines = [f"### iosched advise {_cell(doc.device)}", "", f"**{_cell(headline(doc))}**", ""]
    if doc.advice:
        lines += ["| goal | answer | effect against what it has | its other figures |",
                  "|---|---|---|---|"]
        lines += [goal_row(g) for g in doc.advice]
        lines.append("")
    for k in doc.keep:
        lines.append(f"Keep {_cell(k.variant)}: {code(' && '.join(k.commands))}"
                     + (f"; at every boot ({_cell(k.scope or '')}):" if k.rule else ""))
        if k.rule:
            lines += ["", *fenced([k.rule]), ""]
    ident = ", ".join(x for x in (o.model, human_size(o.size_bytes), o.kind) if x)
    spare = f"; tested on {doc.tested_on}" if doc.tested_on != doc.device else ""
    lines.append(_cell(f"- device: {doc.device} ({ident}{', rotational' if o.rotational else ''}); it had "
                       f"{o.scheduler} ({SET_BY.get(o.set_by, o.set_by)}){spare}"))
    for t in doc.tests:
        runs = len(t.result.runs) if t.result else 0
        dropped = f"; left early: {', '.join(d.variant for d in t.dropped)}" if t.dropped else ""
        lines.append(f"- {GOAL_WORDS[t.goal]}: {_cell(t.how)}; {metric_label(t.metric)}; {len(t.variants)} variants, "
                     f"{runs} runs{dropped}")
    r = doc.rule
    took = f", took {duration_words(doc.finished - doc.started)}" if doc.finished is not None else ""
    lines.append(f"- rule fixed before the first run: switch when a candidate's interval clears no change (Holm "
                 f"over the candidates at alpha {r.alpha:g}, sequential looks) and it is at least {r.margin:.0%} "
                 f"better; keep when every candidate's {1 - 2 * r.alpha:.0%} interval shows it no more than "
                 f"{r.margin:.0%} better; else cannot tell{took}")
    lines += conditions_markdown(doc.conditions, doc.kernel, advice_runs(doc))
    if version:
        lines.append(f"- iosched {_cell(version)}")
    return page(lines, advice_tables(doc))  # the evidence collapsed, the whole bounded for a tracker comment


def short_answer(doc: AdviceDoc) -> list[str]:
    """The answer per goal, one clause each (the TUI's card)."""
    return [short_words(g) for g in doc.advice]


def outcome_lines(doc: AdviceDoc) -> list[str]:
    """Each goal's outcome and, when it cannot tell, every reason with what would decide it (the TUI's card)."""
    doc = worded_advice(doc)
    out: list[str] = []
    for g in doc.advice:
        out += [line for line in goal_lines(g, doc.rule.alpha) if not line.startswith("  left out")
                and not line.startswith("  its") and not line.startswith("  beside")]
    return out
