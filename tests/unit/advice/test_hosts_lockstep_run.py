"""`advise --hosts --lockstep` through the whole service with simulated hosts: each host's plan read (one whose plan
differs fails with why, the others go on), the goal's test run by the fleet's own lockstep loop
(core/fleet/simulated_hosts.py), each host's runs decided as its own advice and pooled; a host lost in a test fails
alone; `report` decides the saved document again to the same answers."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from test_model_pool import advice_on

from iosched.core.advice.advice_plan import END_S
from iosched.core.advice.hosts import HostsAdvice, decided_hosts
from iosched.core.advice.hosts_lockstep import FLEET_RUN_OVERHEAD_S, LockstepAdvicePlan, lockstep_s
from iosched.core.base.encode import encode
from iosched.core.base.errors import BadInput
from iosched.core.documents.document import AdviceDoc
from iosched.core.experiment import service
from iosched.core.experiment.simulated import Simulation
from iosched.core.fleet.fleet import Host, HostRun, OnItsOwn
from iosched.core.fleet.simulated_hosts import SimulatedHosts

HOSTS = [Host("h1", "nvme0n1"), Host("h2", "nvme0n1"), Host("h3", "nvme0n1")]
KYBER_FASTER = Simulation({"kyber": {"iops": 1.3, "mb_s": 1.3}}, noise=0.03)


def planned(doc: AdviceDoc) -> AdviceDoc:
    """An advice as `advise --dry-run --json` writes it: its plan, nothing run."""
    return replace(doc, status="planned", finished=None, advice=[], keep=[], tradeoff=None, conditions=None,
                   tests=[replace(t, result=None, pilot=None, looked=[], dropped=[]) for t in doc.tests])


class Planned(OnItsOwn):
    """Each host's `advise --dry-run --json`, answered with ``plans[host]``."""

    def __init__(self, hosts, said, plans: dict[str, AdviceDoc]) -> None:
        super().__init__(hosts, lambda h: [], said)
        self.plans = plans

    def run(self, slot, placed, progress) -> list[HostRun]:
        for r in self.runs:
            r.before = r.after = "none"
            r.status, r.answer = "done", encode(self.plans[r.host.name])
        return self.runs


def run_plan(tmp_path, plans: dict[str, AdviceDoc], fail: frozenset[str] = frozenset()):
    plan = LockstepAdvicePlan(HostsAdvice(goals="throughput", candidates="kyber", settle=0.0), HOSTS,
                              planner=lambda s, hosts, said: Planned(hosts, said, plans),
                              hosts_run=SimulatedHosts(KYBER_FASTER, fail))
    return service.run(plan, None, lambda e: None)


def one_plan(tmp_path) -> AdviceDoc:
    from fixtree import FixTree

    return planned(advice_on(FixTree(tmp_path / "tree"), 1.3, seed=1))


def test_the_hosts_with_the_first_plan_run_together_and_are_pooled(tmp_path):
    plan = one_plan(tmp_path)
    (t,) = plan.tests
    other = replace(plan, tests=[replace(t, runs=t.runs + 2)])
    outcome = run_plan(tmp_path, {"h1": plan, "h2": plan, "h3": other})
    doc = outcome.doc
    assert outcome.status == "final" and doc.mode == "lockstep"
    assert [h.status for h in doc.hosts] == ["done", "done", "failed"]
    assert "its plan differs from the first host's" in (doc.hosts[2].reason or "")
    for h in doc.hosts[:2]:
        assert h.result is not None and h.result.status == "final"
        (test,) = h.result.tests
        assert test.result is not None and test.looked and "lockstep" in test.result.notes[0]
        (g,) = h.result.advice
        assert (g.outcome, g.recommended) == ("switch", "kyber")
    (model,) = doc.models
    assert model.hosts == ["h1", "h2"] and model.goals[0].agree
    assert model.goals[0].pooled is not None and model.goals[0].pooled.recommended == "kyber"
    # `report`: every host decided again from its runs, pooled again: the same answers.
    again = decided_hosts(doc)
    assert again.models == doc.models and [h.result for h in again.hosts] == [h.result for h in doc.hosts]


def test_a_host_lost_in_a_test_fails_alone(tmp_path):
    plan = one_plan(tmp_path)
    outcome = run_plan(tmp_path, {"h1": plan, "h2": plan, "h3": plan}, fail=frozenset({"h2"}))
    doc = outcome.doc
    assert [h.status for h in doc.hosts] == ["done", "failed", "done"]
    assert doc.hosts[1].reason == "its throughput test: the SSH session was lost (simulated)"
    assert doc.hosts[1].result is None and doc.models[0].hosts == ["h1", "h3"]


class Counted(SimulatedHosts):
    """Simulated hosts that count the lockstep tests they were asked to run."""

    def __init__(self, sim: Simulation, fail: frozenset[str] = frozenset()) -> None:
        super().__init__(sim, fail)
        self.tests = 0

    def lockstep(self, plan, hosts, said):
        self.tests += 1
        return super().lockstep(plan, hosts, said)


def test_a_lockstep_plan_past_the_budget_is_refused_before_any_run(tmp_path):
    plan = one_plan(tmp_path)
    (t,) = plan.tests
    need = lockstep_s(plan.tests, 0.0)
    assert need == len(t.variants) * t.runs * (t.run_s + FLEET_RUN_OVERHEAD_S) + END_S
    hosts_run = Counted(KYBER_FASTER)
    settings = HostsAdvice(goals="throughput", candidates="kyber", settle=0.0, budget_s=need - 1)
    advice = LockstepAdvicePlan(settings, HOSTS, planner=lambda s, hosts, said: Planned(hosts, said, dict.fromkeys(
        ("h1", "h2", "h3"), plan)), hosts_run=hosts_run, clock=lambda: 100.0)
    with pytest.raises(BadInput) as e:
        service.run(advice, None, lambda e: None)
    assert hosts_run.tests == 0  # no host was asked to run anything
    said = str(e.value)
    assert f"--budget {math.ceil(need)}s would fit" in said and "drop --lockstep" in said
    assert said.endswith("nothing was changed on any host")
    # the same plan within the budget runs
    fits = replace(settings, budget_s=need)
    outcome = service.run(replace(advice, settings=fits, hosts_run=Counted(KYBER_FASTER)), None, lambda e: None)
    assert outcome.status == "final" and [h.status for h in outcome.doc.hosts] == ["done"] * 3


class Slow(Counted):
    """Simulated hosts whose runs take ``took`` seconds a slot on a fake clock: longer than planned, as on a loaded
    host."""

    def __init__(self, sim: Simulation, took: float) -> None:
        super().__init__(sim)
        self.now, self.took = 1000.0, took

    def run(self, host, n, label, scheduler):
        self.now += self.took / len(HOSTS)  # every host's run of a slot together
        return super().run(host, n, label, scheduler)


def test_the_lockstep_runs_stop_at_the_budget_and_report_decides_the_same(tmp_path):
    plan = one_plan(tmp_path)
    (t,) = plan.tests
    budget = lockstep_s(plan.tests, 0.0)  # the plan fits, but its runs take three times as long as planned
    hosts_run = Slow(KYBER_FASTER, 3 * (t.run_s + FLEET_RUN_OVERHEAD_S))
    settings = HostsAdvice(goals="throughput", candidates="kyber", settle=0.0, budget_s=budget)
    advice = LockstepAdvicePlan(settings, HOSTS, planner=lambda s, hosts, said: Planned(hosts, said, dict.fromkeys(
        ("h1", "h2", "h3"), plan)), hosts_run=hosts_run, clock=lambda: hosts_run.now)
    events = []
    outcome = service.run(advice, None, events.append)
    doc = outcome.doc
    assert outcome.status == "final" and hosts_run.tests == 1
    assert hosts_run.now <= 1000.0 + budget - END_S  # no run ended past what the budget leaves
    assert any("leaves no time for another run" in getattr(e, "text", "") for e in events)
    planned_runs = len(t.variants) * t.runs
    for h in doc.hosts:
        assert h.status == "done" and h.result is not None and h.result.status == "final"
        b = h.result.budget
        assert b is not None and b.stopped and b.budget_s == budget
        (test,) = h.result.tests
        assert test.result is not None and 0 < len(test.result.runs) < planned_runs
        assert b.runs_short == planned_runs - len(test.result.runs)
        (g,) = h.result.advice
        assert g.outcome == "cannot-tell" and "budget" in g.reasons and g.recommended is None
    # `report`: every host decided again from its runs, with the budget's stop: the same answers.
    again = decided_hosts(doc)
    assert again.models == doc.models and [h.result for h in again.hosts] == [h.result for h in doc.hosts]
