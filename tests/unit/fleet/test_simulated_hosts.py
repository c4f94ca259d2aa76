"""A fleet through the whole service with simulated hosts (core/fleet/simulated_hosts.py): in lockstep and each by
itself, a lost host failing alone, a fleet until every host's boundary, a fleet matrix, and a Ctrl-C keeping what
finished, each host's compare kept as the real fleet keeps it and the variants pooled (the real fleets, over SSH to
this machine: tests/real/test_fleet_real.py)."""

from __future__ import annotations

import pytest

from iosched.core.experiment import service
from iosched.core.experiment.events import Event, Note
from iosched.core.experiment.simulated import Simulation
from iosched.core.fleet.fleet import Host
from iosched.core.fleet.fleet_matrix import FleetMatrixPlan
from iosched.core.fleet.fleet_plan import FleetPlan, FleetSettings
from iosched.core.fleet.simulated_hosts import SimulatedHosts

HOSTS = [Host("h1", "loop0"), Host("h2", "loop1"), Host("h3", "loop2")]
SLOWER = Simulation({"mq-deadline": {"iops": 0.7}}, noise=0.03)


def fleet(sim: Simulation, fail: frozenset[str] = frozenset(), **settings) -> FleetPlan:
    s = FleetSettings("none,mq-deadline", repeat=settings.pop("repeat", 4), settle=0.0, **settings)
    return FleetPlan(s, HOSTS, "4k-randread", hosts_run=SimulatedHosts(sim, fail))


def run(plan):
    events: list[Event] = []
    return service.run(plan, None, events.append), events


@pytest.mark.parametrize("independent", [False, True])
def test_a_fleet_runs_every_host_and_pools_them(independent):
    outcome, events = run(fleet(SLOWER, independent=independent))
    doc = outcome.doc
    assert outcome.status == "final" and [h.status for h in doc.hosts] == ["done"] * 3
    assert all(h.result is not None and len(h.result.runs) == 8 for h in doc.hosts)
    row = doc.pooled.pooled[0]
    assert row.significant and 0.65 < row.ratio < 0.75 and row.hosts_agree == 3
    if not independent:
        said = [e.text for e in events if isinstance(e, Note) and e.host == "fleet"]
        assert said[0].startswith("run 1/8 (none): h1 ") and len(said) == 8
        assert all("run in lockstep with h2, h3" in doc.hosts[0].result.notes[0] for _ in [0])


def test_a_lost_host_fails_alone_and_the_others_are_pooled():
    outcome, _ = run(fleet(SLOWER, fail=frozenset({"h2"})))
    doc = outcome.doc
    assert [h.status for h in doc.hosts] == ["done", "failed", "done"] and doc.hosts[1].result is None
    assert [h.host for h in doc.pooled.hosts] == ["h1", "h3"]


def test_a_fleet_until_a_verdict_stops_once_every_host_crossed():
    outcome, events = run(fleet(SLOWER, until_verdict=True, max_runs=20))
    doc = outcome.doc
    runs = {len(h.result.runs) for h in doc.hosts}
    assert outcome.status == "final" and len(runs) == 1 and runs.pop() < 40
    assert all(any("every host's boundary was crossed" in n for n in h.result.notes) for h in doc.hosts)
    assert any(isinstance(e, Note) and "boundary crossed at" in e.text for e in events)


def test_ctrl_c_keeps_each_hosts_finished_runs_cancelled():
    sim = Simulation(noise=0.03, stop_after=0)

    class Interrupting(SimulatedHosts):
        def run(self, host, n, label, scheduler):
            if n == 3:
                raise KeyboardInterrupt
            return super().run(host, n, label, scheduler)

    plan = fleet(sim)
    plan.hosts_run = Interrupting(Simulation(noise=0.03))
    outcome, _ = run(plan)
    doc = outcome.doc
    assert outcome.status == "cancelled" and isinstance(outcome.error, KeyboardInterrupt)
    assert [h.status for h in doc.hosts] == ["cancelled"] * 3
    assert all(h.result.status == "cancelled" and "ended early (Ctrl-C): results cover the runs that finished"
               in h.result.notes for h in doc.hosts)


def test_a_fleet_matrix_runs_each_job_and_pools_every_cell():
    s = FleetSettings("none,mq-deadline", repeat=4, settle=0.0)
    plan = FleetMatrixPlan(s, HOSTS, ["4k-read", "4k-randread"], "4k-read,4k-randread",
                           hosts_run=SimulatedHosts(SLOWER))
    outcome, _ = run(plan)
    doc = outcome.doc
    assert outcome.status == "final" and [f.job for f in doc.fleets] == ["4k-read", "4k-randread"]
    assert doc.pooled is not None and doc.pooled.cells == 2 and all(v.significant for v in doc.pooled.verdicts)
