"""The budget as a promise: a command planned from one timed run, the smallest budget that can decide each goal said
before asking, a refusal that suggests only what would fit, --observe refused before capturing, and the tests
stopped at the budget with what their runs show (a fake clock: no timed assertion)."""

from __future__ import annotations

import json
import re

import pytest
from advice_support import SimulatedRunner, nvme_disk
from test_plan import ALL, GOALS, device

from iosched.core.advice import request
from iosched.core.advice.decision import decided_again
from iosched.core.advice.plan import (
    MIN_RUN_S,
    MIN_RUNS,
    budget_words,
    capture_source,
    cmd_source,
    over_budget_words,
    plan_advice,
    plan_lines,
    smallest_per_goal,
    smallest_s,
)
from iosched.core.advice.request import AdviceRequest, prepare_advice
from iosched.core.base.decode import decode
from iosched.core.base.encode import encode
from iosched.core.base.errors import BadInput
from iosched.core.documents.document import AdviceDoc
from iosched.core.documents.params import parse_candidates
from iosched.core.experiment import service
from iosched.core.experiment.events import RunStarted
from iosched.core.present.advice_report import advice_lines, headline

from fixtree import FixTree

FOUR = ("none", "mq-deadline", "kyber", "bfq")


def test_a_timed_short_command_fits_where_the_guess_did_not():
    guessed = plan_advice("d0", device(), "none", ALL, {}, ("throughput",), cmd_source("sleep 0.3"), budget_s=180)
    timed = plan_advice("d0", device(), "none", ALL, {}, ("throughput",), cmd_source("sleep 0.3", 0.3), budget_s=180)
    assert not guessed.fits and timed.fits
    assert timed.tests[0].run_s == 0.5  # a run is never planned under half a second
    assert any("timed at 0.30 s before this plan" in n for n in timed.notes)
    # Beside the write flood it is planned slower than alone.
    flood = plan_advice("d0", device(), "none", ALL, {}, ("interactive",), cmd_source("make", 2.0))
    assert flood.tests[0].run_s == 4.0


def test_the_catalogs_runs_shorten_to_fit_but_not_below_the_floor_nor_a_given_runtime():
    # A virtual disk is not known to be fast: the catalog's own run lengths, cut to fit (a fast device's: test_plan).
    plan = plan_advice("d0", device("virtual"), "mq-deadline", FOUR, {}, ("throughput",), budget_s=180)
    assert plan.fits and MIN_RUN_S <= plan.tests[0].run_s < 10
    assert plan.tests[0].source.job is not None and plan.tests[0].source.job.runtime == plan.tests[0].run_s
    assert plan.cuts[-1].startswith("runs of ")
    given = plan_advice("d0", device("virtual"), "mq-deadline", FOUR, {}, ("throughput",), budget_s=180,
                        runtime=10.0)
    assert given.tests[0].run_s == 10.0 and not given.fits
    hopeless = plan_advice("d0", device("virtual"), "mq-deadline", FOUR, {}, GOALS, budget_s=60)
    assert all(t.run_s == MIN_RUN_S and t.runs == MIN_RUNS for t in hopeless.tests)


def test_the_smallest_budget_is_the_plan_cut_as_far_as_it_goes():
    plan = plan_advice("d0", device(), "none", ALL, {}, GOALS, budget_s=3600)
    least = smallest_s(plan)
    at = plan_advice("d0", device(), "none", ALL, {}, GOALS, budget_s=least)
    below = plan_advice("d0", device(), "none", ALL, {}, GOALS, budget_s=least - 1)
    assert at.fits and not below.fits and smallest_s(below) == pytest.approx(least)
    per_goal = dict(smallest_per_goal(plan))
    assert set(per_goal) == set(GOALS) and sum(per_goal.values()) == pytest.approx(least)
    for goal, s in per_goal.items():
        assert plan_advice("d0", device(), "none", ALL, {}, (goal,), budget_s=s).fits
    assert "smallest budget that can decide: throughput " in "\n".join(plan_lines(plan))


def test_the_smallest_budget_said_is_one_the_plan_accepts():
    """The plan line's smallest budgets, given as --budget, fit: rounded up, never to a nearer figure below (2m20s
    was said "2 min", which a refusal then asked to raise to 3m)."""
    from iosched.core.documents.params import parse_budget_s

    unit = {"s": 1, "m": 60, "min": 60, "h": 3600}
    for goals in [(g,) for g in GOALS] + [GOALS]:
        plan = plan_advice("d0", device(), "none", ALL, {}, goals, budget_s=3600)
        line = next(x for x in plan_lines(plan) if "smallest budget that can decide" in x)
        said = [float(n) * unit[u] for n, u in re.findall(r" (\d+(?:\.\d+)?) ?(min|s|m|h)(?=;|$)", line)]
        assert len(said) == len(goals) + (len(goals) > 1), line
        assert plan_advice("d0", device(), "none", ALL, {}, goals, budget_s=said[-1]).fits, line
    least = 140.3  # a plan's smallest budget between two whole minutes
    assert budget_words(least) == "3m" and parse_budget_s(budget_words(least)) >= least


def _fits_with(words: str, budget: float, **plan_kw) -> None:
    """Each way a refusal names is planned again with the same budget: it fits."""
    for way in re.findall(r"--goal (\w+) alone|--candidates (\S+)\)|--budget (\S+) or more", words):
        goal, cand, more = way
        kw = dict(plan_kw)
        b = budget
        if goal:
            kw["goals"] = (goal,)
        if cand:
            kw["only"] = parse_candidates(cand)
        if more:
            b = float(more[:-1]) * (60 if more.endswith("m") else 1)
        got = plan_advice("d0", device(), "none", ALL, {}, kw.pop("goals", GOALS), budget_s=b, **kw)
        assert got.fits, (way, words)


@pytest.mark.parametrize("budget", [60.0, 200.0, 400.0, 900.0])
def test_a_refusal_suggests_only_what_would_fit(budget):
    plan = plan_advice("d0", device(), "none", ALL, {}, GOALS, budget_s=budget)
    if plan.fits:
        return
    words = over_budget_words(plan)
    assert words.startswith(f"the plan needs at least {budget_words(smallest_s(plan))}")
    assert "--runtime" not in words  # the catalog's runs were shortened already
    _fits_with(words, budget)


def test_a_replays_refusal_names_a_shorter_capture_never_runtime():
    src = capture_source("/x/c.iolog", 60.0, False, observed=False)
    plan = plan_advice("d0", device(), "none", ALL, {}, ("throughput",), src, budget_s=200)
    words = over_budget_words(plan)
    assert not plan.fits and "--runtime" not in words
    longest = float(re.search(r"a shorter capture to replay \(at most (\d+) s a run\)", words).group(1))
    shorter = plan_advice("d0", device(), "none", ALL, {}, ("throughput",),
                          capture_source("/x/c.iolog", longest, False, observed=False), budget_s=200)
    assert shorter.fits


def test_time_spent_before_the_plan_counts_against_the_budget():
    src = cmd_source("true", 1.0)
    free = plan_advice("d0", device(), "none", ALL, {}, ("throughput",), src, budget_s=100)
    spent = plan_advice("d0", device(), "none", ALL, {}, ("throughput",), src, budget_s=100, spent_s=90)
    assert free.fits and not spent.fits and smallest_s(spent) == pytest.approx(smallest_s(free) + 90)


# --- prepare: the command timed, --observe refused before it captures ---------------------------------------------


def test_a_command_is_timed_once_before_the_plan_and_not_under_dry_run(tree, monkeypatch):
    nvme_disk(tree)
    timed: list[tuple[str, float]] = []
    monkeypatch.setattr(request, "time_command", lambda cmd, bound, root: timed.append((cmd, bound)) or 0.3)
    req = AdviceRequest("nvme0n1", goals=("throughput",), cmd="sleep 0.3", budget_s=180, root=tree.root)
    prep = prepare_advice(req)
    assert timed == [("sleep 0.3", pytest.approx(180 / 11))] and prep.plan.fits
    assert prep.doc.plan.smallest_s is not None and prep.doc.plan.smallest_s <= 180
    dry = prepare_advice(AdviceRequest("nvme0n1", goals=("throughput",), cmd="sleep 0.3", budget_s=180,
                                       time_cmd=False, root=tree.root))
    assert len(timed) == 1 and dry.plan.tests[0].source.seconds is None


def test_observe_that_cannot_fit_is_refused_before_capturing(tree, monkeypatch):
    nvme_disk(tree)

    def never(*a, **k):
        raise AssertionError("captured")

    monkeypatch.setattr(request, "capture_workload", never)
    req = AdviceRequest("nvme0n1", goals=("throughput",), observe_s=60.0, budget_s=120, root=tree.root,
                        capture_to=tree.root / "c.iolog")
    with pytest.raises(BadInput, match=r"--observe 60s: the plan needs at least .*a shorter --observe"):
        prepare_advice(req)
    assert not (tree.root / "c.iolog").exists()


# --- the tests stop at the budget ----------------------------------------------------------------------------------


def _stopped(tree, sim):
    """A throughput advice over two candidates whose every run takes 4 s on the budget's clock, where the plan
    counted 2.5: the tests stop at the 60 s budget."""
    nvme_disk(tree)
    req = AdviceRequest("nvme0n1", goals=("throughput",), candidates=tuple(parse_candidates("mq-deadline,kyber")),
                        runtime=1.0, settle=0.0, budget_s=60, root=tree.root)
    prep = prepare_advice(req)
    assert prep.plan.fits
    advice = prep.plan_to_run(sim)
    now = [0.0]
    advice.clock, advice.accepted = (lambda: now[0]), 0.0

    def each(e):
        if isinstance(e, RunStarted):
            now[0] += 4.0

    doc = service.run(advice, None, each).doc
    assert doc.budget is not None and doc.budget.stopped and doc.budget.runs_short > 0
    assert doc.budget.elapsed_s <= doc.budget.budget_s and doc.status == "final"
    ran = sum(len(t.result.runs) for t in doc.tests if t.result) + sum(len(t.pilot.runs) for t in doc.tests if t.pilot)
    assert ran == 14  # 58 s (the budget less what the end needs) of 4 s runs
    assert f"stopped at the budget {doc.budget.runs_short} run(s) at most short" in "\n".join(advice_lines(doc))
    again = decided_again(decode(AdviceDoc, json.loads(json.dumps(encode(doc))), "advice.json"))
    assert again.advice == doc.advice  # `report FILE` decides the same from the saved runs
    return doc


def test_stopped_at_the_budget_the_noisy_runs_cannot_tell_and_say_what_budget_would(tree):
    doc = _stopped(tree, SimulatedRunner(noise=0.3))
    [g] = doc.advice
    assert g.outcome == "cannot-tell" and g.reasons == ["budget"] and not doc.keep
    assert g.runs_needed is not None and g.runs_needed > g.runs_per_variant > 0
    assert g.budget_needed_s is not None and g.budget_needed_s > doc.budget.budget_s
    head = headline(doc)
    assert "cannot tell" in head and "where the budget stopped the tests" in head, head
    assert f"about {g.runs_needed} runs a variant would decide" in head, head
    assert f"a budget of about {budget_words(g.budget_needed_s)} would" in head, head


def test_stopped_at_the_budget_runs_that_already_show_it_answer(tree):
    """The answer is what the runs show: quiet runs where nothing differs are shown equal; a candidate 60% better
    is a switch, budget or not."""
    equal = _stopped(tree, SimulatedRunner(noise=0.02)).advice[0]
    assert equal.outcome == "keep-equal" and equal.budget_needed_s is None
    better = _stopped(FixTree(tree.root.parent / "again"),
                      SimulatedRunner(noise=0.05, effects={"kyber": {"iops": 1.6}})).advice[0]
    assert better.outcome == "switch" and better.recommended == "kyber"


def test_within_the_budget_nothing_stops(tree):
    nvme_disk(tree)
    req = AdviceRequest("nvme0n1", goals=("throughput",), candidates=tuple(parse_candidates("mq-deadline")),
                        runtime=1.0, settle=0.0, budget_s=600, root=tree.root)
    outcome = service.run(prepare_advice(req).plan_to_run(SimulatedRunner(noise=0.05)), None, lambda e: None)
    b = outcome.doc.budget
    assert b is not None and not b.stopped and b.runs_short == 0 and outcome.doc.advice


def test_a_stop_in_the_pilot_begins_no_test(tree):
    nvme_disk(tree)
    req = AdviceRequest("nvme0n1", goals=("throughput", "latency"),
                        candidates=tuple(parse_candidates("mq-deadline")), runtime=1.0, settle=0.0, budget_s=60,
                        root=tree.root)
    advice = prepare_advice(req).plan_to_run(SimulatedRunner(noise=0.05))
    now = [0.0]
    advice.clock, advice.accepted = (lambda: now[0]), 0.0

    def each(e):  # a run takes 30 s: the second would end past the budget
        if isinstance(e, RunStarted):
            now[0] += 30.0

    outcome = service.run(advice, None, each)
    doc = outcome.doc
    assert doc.budget is not None and doc.budget.stopped and doc.budget.elapsed_s <= 60
    assert [len(t.pilot.runs) if t.pilot else 0 for t in doc.tests] == [1, 0]
    assert all(t.result is None for t in doc.tests)
    # No test ran: each goal cannot tell for the budget; the first's runs needed from its pilot's noise (one run:
    # none to go by), a larger budget said.
    assert [(g.goal, g.outcome, g.reasons) for g in doc.advice] == [("throughput", "cannot-tell", ["budget"]),
                                                                    ("latency", "cannot-tell", ["budget"])]
    text = "\n".join(advice_lines(doc))
    assert "the budget stopped the tests before this one had runs to judge" in text, text


def test_a_screens_refusal_names_its_fields_not_flags():
    plan = plan_advice("d0", device(), "none", ALL, {}, GOALS, budget_s=200.0)
    assert not plan.fits
    words = over_budget_words(plan, form=True)
    assert words.startswith(f"the plan needs at least {budget_words(smallest_s(plan))}, more than the budget "
                            f"{budget_words(200.0)}: give a budget of {budget_words(smallest_s(plan))} or more"), words
    assert "--" not in words
    _fits_with(words.replace("a budget of ", "--budget ").replace("the goal ", "--goal "), 200.0)
