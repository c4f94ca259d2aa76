"""The whole service on this machine's kinds with simulated runs (core/experiment/simulated.py): a compare, one until
a verdict, a matrix (saved after every run, stopped, resumed), a matrix until every cell decided, a live alternation
— each through the one slot loop, its target chosen, its device held and the busy machine watched as a real one's,
without fio or root (the real runs: tests/real/test_experiment_real.py, test_matrix_real.py, test_service_real.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from advice_support import nvme_disk

from iosched.core.documents.document import MatrixDoc
from iosched.core.documents.params import parse_variants
from iosched.core.experiment import service
from iosched.core.experiment.alternation import AlternationPlan
from iosched.core.experiment.compare import ComparePlan
from iosched.core.experiment.control import Control
from iosched.core.experiment.events import Done, Event, Note, RunEnded, RunStarted
from iosched.core.experiment.matrix import MatrixPlan, MatrixRunPlan, decode_matrix
from iosched.core.experiment.service import ResultFile
from iosched.core.experiment.simulated import Simulation
from iosched.core.load.jobs import CATALOG
from iosched.core.settings.device_lock import DeviceBusy, load_lock

JOB = CATALOG["4k-randread"].scaled(runtime=1.0, size=16 << 20)  # reads: the raw fixture disk is its target


def compare(tree, sim: Simulation, variants: str = "none,bfq", **kw) -> ComparePlan:
    nvme_disk(tree)
    return ComparePlan("nvme0n1", parse_variants(variants), job=JOB, settle=0.0, root=tree.root, runs=sim, **kw)


def run(plan, saver=None, ctl=None):
    events: list[Event] = []
    return service.run(plan, saver, events.append, ctl), events


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
    assert ended[-1].interim and ended[-1].at == 3  # the interim estimates ride on each run's end


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
    assert doc.judgement.invalid == ["run 2 (bfq): simulated as invalid"]


def matrix(tree, sim: Simulation, repeat: int = 2, **kw) -> MatrixRunPlan:
    nvme_disk(tree)
    jobs = [CATALOG[n].scaled(runtime=1.0, size=16 << 20) for n in ("4k-read", "4k-randread")]
    plan = MatrixPlan(parse_variants("none,bfq"), jobs, repeat, settle=0.0)
    return MatrixRunPlan("nvme0n1", plan.variants, matrix=plan, root=tree.root, runs=sim, **kw)


def test_a_matrix_is_saved_after_every_run_and_goes_on_from_its_file(tree, tmp_path):
    save = tmp_path / "m.json"
    sim = Simulation({"bfq": {"iops": 0.8}}, stop_after=5)
    outcome, _ = run(matrix(tree, sim), ResultFile(save, keep_empty=True))
    assert outcome.status == "cancelled" and outcome.finished_runs == 5
    saved = decode_matrix(json.loads(save.read_text()), save)
    assert saved.status == "cancelled" and len(saved.runs) == 5
    assert "ended early (Ctrl-C): 5 of 8 runs finished; --resume continues" in saved.notes
    sim.stop_after = None
    again, events = run(matrix(tree, sim, resume=saved), ResultFile(save))
    doc = again.doc
    assert again.status == "final" and isinstance(doc, MatrixDoc) and len(doc.runs) == 8
    assert sorted(r.slot for r in doc.runs) == list(range(8)) and doc.runs[5].start >= doc.runs[4].end
    assert "interrupted (Ctrl-C): 5 of 8 runs finished, then resumed" in doc.notes
    assert [e.label for e in events if isinstance(e, RunStarted)] == \
        [f"{w} · {v}" for w, v in doc.order[5:]]  # its events name the cell
    assert doc.judgement is not None and len(doc.judgement.cells) == 4


def test_a_matrix_until_a_verdict_leaves_out_decided_cells_and_stops(tree):
    sim = Simulation(by_workload={"4k-read": {"bfq": {"iops": 0.5}}, "4k-randread": {"bfq": {"iops": 0.5}}},
                     noise=0.01)
    outcome, events = run(matrix(tree, sim, repeat=12, until_verdict=12))
    doc = outcome.doc
    assert outcome.status == "final" and doc.sequential is not None and len(doc.runs) < len(doc.order)
    assert all(c.decided_at for c in doc.judgement.cells if not c.is_baseline)
    assert any(isinstance(e, Note) and e.text.startswith("look at 4 runs per cell") for e in events)


def test_a_live_alternation_takes_turns_and_is_judged_in_pairs(tree):
    nvme_disk(tree)
    plan = AlternationPlan("nvme0n1", parse_variants("none,bfq"), job=JOB, every=2.0, duration=16.0,
                           root=tree.root, runs=Simulation({"bfq": {"iops": 0.5}}, noise=0.02))
    outcome, events = run(plan)
    doc = outcome.doc
    assert outcome.status == "final" and doc.kind == "alternate" and len(doc.runs) == 8
    assert doc.order == [r.variant for r in doc.runs] == ["none", "bfq", "bfq", "none", "bfq", "none", "none", "bfq"]
    assert "paired" in doc.judgement.method and not any(isinstance(e, RunStarted) for e in events)
    (c,) = [c for c in doc.judgement.comparisons if c.primary]
    assert c.significant and c.ratio < 0.6


def test_a_live_alternation_that_cannot_take_four_turns_each_is_refused_before_anything(tree):
    nvme_disk(tree)
    plan = AlternationPlan("nvme0n1", parse_variants("none,bfq"), job=JOB, every=2.0, duration=8.0, root=tree.root,
                           runs=Simulation())
    with pytest.raises(Exception, match="--duration must allow at least four turns per variant"):
        run(plan)
    assert not Path(tree.root, "run/iosched/devices").exists() or not any(
        Path(tree.root, "run/iosched/devices").iterdir())
