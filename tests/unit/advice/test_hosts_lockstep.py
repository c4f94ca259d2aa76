"""`advise --hosts --lockstep`'s own parts: what lockstep cannot run is refused before any host; the looks a host's
lockstep runs are given are those the advice on one host takes on the same runs (so `report` decides them again the
same way); hosts whose plans differ are told apart, in words. The run itself: tests/real/test_advise_hosts_real.py."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_model_pool import advice_on

from iosched.core.advice.decision import decided_again
from iosched.core.advice.hosts import HostsAdvice
from iosched.core.advice.hosts_lockstep import check_lockstep, goal_job, looked_of, plan_fault, same_plan
from iosched.core.base.errors import BadInput


@pytest.mark.parametrize(("settings", "why"), [
    (HostsAdvice(cmd="make -j4"), "a command (--cmd) is timed by each host's own iosched"),
    (HostsAdvice(goals="interactive", job="4k-randread"), "runs 4k-randread beside a write flood"),
    (HostsAdvice(goals="throughput", job="cgroup-weights"), "cgroup-weights runs one fio per role"),
    (HostsAdvice(goals="throughput", job="mine.fio"), "a job file lies on this machine only"),
])
def test_what_lockstep_cannot_run_is_refused_before_any_host(settings, why):
    with pytest.raises(BadInput, match=why.replace("(", r"\(").replace(")", r"\)")):
        check_lockstep(settings)


def test_each_goal_runs_its_catalog_job_as_the_catalog_has_it():
    assert check_lockstep(HostsAdvice()) == ["4k-randread", "rnd4k-q1t1-read", "interactive-under-writes"]
    assert goal_job("throughput", "randread-q16t2") == "randread-q16t2"
    assert goal_job("interactive", "reads-vs-writeback") == "reads-vs-writeback"  # a contention job runs as it is
    assert goal_job("interactive", "4k-randread") is None


@pytest.mark.parametrize(("effect", "seed"), [(1.3, 1), (1.0, 3), (0.7, 5)])
def test_the_looks_on_a_hosts_runs_are_the_ones_advise_took(tmp_path, effect, seed):
    from fixtree import FixTree

    doc = advice_on(FixTree(tmp_path), effect, seed=seed)
    (t,) = doc.tests
    assert t.result is not None and t.looked
    assert looked_of(replace(t, looked=[]), t.result, doc.rule.margin) == t.looked
    # Decided again from those looks: the same answer as the advice on one host gave.
    again = decided_again(replace(doc, tests=[replace(t, looked=looked_of(t, t.result, doc.rule.margin))]))
    assert [(g.outcome, g.recommended) for g in again.advice] == [(g.outcome, g.recommended) for g in doc.advice]


def test_hosts_whose_plans_differ_are_told_apart(tmp_path):
    from fixtree import FixTree

    a = advice_on(FixTree(tmp_path / "a"), 1.0, seed=1)
    assert same_plan(a, a) is None
    (t,) = a.tests
    other = replace(a, tests=[replace(t, variants=[t.variants[0], "bfq"], runs=t.runs + 2)])
    why = same_plan(a, other)
    assert why is not None and "its plan differs from the first host's (throughput:" in why and "drop --lockstep" in why
    assert "other goals" in (same_plan(a, replace(a, tests=[])) or "")


def test_a_hosts_plan_is_outside_input(tmp_path):
    from fixtree import FixTree

    a = advice_on(FixTree(tmp_path / "a"), 1.0, seed=1)
    assert plan_fault(a) is None
    (t,) = a.tests
    for bad, why in [(replace(t, variants=[t.variants[0], 'bfq";rm']), "names variants iosched would not"),
                     (replace(t, runs=10**9), "beyond what advise plans"),
                     (replace(t, run_s=1e9), "beyond what advise plans"),
                     (replace(t, looks=[t.runs + 2]), "beyond what advise plans")]:
        assert why in (plan_fault(replace(a, tests=[bad])) or "")
    assert plan_fault(replace(a, tests=[])) == "its plan has no test"
