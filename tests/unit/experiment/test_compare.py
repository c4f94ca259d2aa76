"""A compare through the service with simulated runs (core/experiment/compare.py): its interleaved order, its
target chosen the service's way, where the estimates stand after each run, the boundary of --until-verdict, a cancel
and Ctrl-C, a device another load holds, an invalid run (the real runs: tests/real/test_experiment_real.py,
test_service_real.py)."""

from __future__ import annotations

import json

import pytest
from service_support import compare, run

from iosched.core.experiment import service
from iosched.core.experiment.compare import boundary
from iosched.core.experiment.control import Control
from iosched.core.experiment.events import Done, Event, RunEnded, RunStarted
from iosched.core.experiment.simulated import Simulation
from iosched.core.present.result_file import ResultFile
from iosched.core.present.sentences import interim_lines
from iosched.core.present.worded import worded
from iosched.core.settings.device_lock import DeviceBusy, load_lock


def test_a_compare_runs_its_interleaved_order_and_is_judged(tree):
    outcome, events = run(compare(tree, Simulation({"bfq": {"iops": 0.5}}, noise=0.02)))
    doc = outcome.doc
    assert outcome.status == "final" and doc.status == "final" and len(doc.runs) == 6
    assert [r.variant for r in doc.runs] == doc.order == ["none", "bfq", "bfq", "none", "none", "bfq"]
    assert doc.original == {"scheduler": "none"} and doc.workload.target is not None
    assert doc.workload.target.path == "/dev/nvme0n1"  # chosen the service's way
    (c,) = [c for c in doc.judgement.comparisons if c.primary]
    assert c.significant and 0.45 < c.ratio < 0.55
    started = [e for e in events if isinstance(e, RunStarted)]
    ended = [e for e in events if isinstance(e, RunEnded)]
    assert [e.index for e in started] == [e.index for e in ended] == list(range(6)) and isinstance(events[-1], Done)
    standing = ended[-1].standing  # where it stands rides on each run's end, said by core/present
    assert standing is not None and standing.count == 3 and standing.estimates[0].ratio is not None
    assert interim_lines(standing)[0].startswith("interim, 3 runs per variant: bfq vs none IOPS -")


def test_a_compare_until_a_verdict_stops_at_its_boundary(tree):
    outcome, _ = run(compare(tree, Simulation({"bfq": {"iops": 0.5}}, noise=0.02), until_verdict=20))
    doc = outcome.doc
    assert outcome.status == "final" and len(doc.runs) < 40 and doc.sequential is not None
    assert any(n.startswith(f"stopped after run {len(doc.runs)} of at most 40: the boundary was crossed")
               for n in doc.notes)


def test_a_cancelled_compare_keeps_its_runs_judged_and_saved(tree, tmp_path):
    ctl = Control()
    events: list[Event] = []

    def on_event(e: Event) -> None:
        events.append(e)
        if isinstance(e, RunEnded) and e.index == 3:
            ctl.cancel()

    save = tmp_path / "c.json"
    outcome = service.run(compare(tree, Simulation()), ResultFile(save), on_event, ctl)
    assert outcome.status == "cancelled" and outcome.finished_runs == 4 and outcome.doc.judgement is not None
    assert "ended early (cancelled): results cover the runs that finished" in outcome.doc.notes
    assert json.loads(save.read_text())["status"] == "cancelled"


def test_ctrl_c_before_any_run_is_raised_as_if_refused(tree):
    with pytest.raises(KeyboardInterrupt):
        run(compare(tree, Simulation(stop_after=0)))


def test_nothing_runs_on_a_device_held_by_another_load(tree):
    plan = compare(tree, Simulation())
    with load_lock("nvme0n1", "matrix", tree.root), pytest.raises(DeviceBusy):
        run(plan)


def test_an_invalid_run_is_kept_and_left_out_of_the_verdict(tree):
    outcome, _ = run(compare(tree, Simulation(invalid=frozenset({1}))))
    doc = outcome.doc
    assert not doc.runs[1].valid and doc.runs[1].invalid_reason == "simulated as invalid"
    assert worded(doc).judgement.invalid == ["run 2 (bfq): simulated as invalid"]


def test_a_boundary_only_under_until_verdict_and_an_alternations_counts_blocks():
    assert boundary(None, 0.05, 2, alternate=False) is None
    runs, blocks = boundary(10, 0.05, 2, alternate=False), boundary(10, 0.05, 2, alternate=True)
    assert runs is not None and blocks is not None and runs.max_per_arm == blocks.max_per_arm == 10
    assert (runs.design, runs.looks[0]) == ("two-sample", 4) and (blocks.design, blocks.looks[0]) == ("paired", 3)
