"""A live alternation through the service with simulated turns (core/experiment/alternation.py): its balanced
order of turns, judged in pairs, and the refusal of one too short for four turns a variant, before anything is held
(the real one: tests/real/test_experiment_real.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from advice_support import nvme_disk
from service_support import JOB, run

from iosched.core.documents.params import parse_variants
from iosched.core.experiment.alternation import AlternationPlan
from iosched.core.experiment.events import RunStarted
from iosched.core.experiment.simulated import Simulation
from iosched.core.present.worded import worded


def test_a_live_alternation_takes_turns_and_is_judged_in_pairs(tree):
    nvme_disk(tree)
    plan = AlternationPlan("nvme0n1", parse_variants("none,bfq"), job=JOB, every=2.0, duration=16.0,
                           root=tree.root, runs=Simulation({"bfq": {"iops": 0.5}}, noise=0.02))
    outcome, events = run(plan)
    doc = outcome.doc
    assert outcome.status == "final" and doc.kind == "alternate" and len(doc.runs) == 8
    assert doc.order == [r.variant for r in doc.runs] == ["none", "bfq", "bfq", "none", "bfq", "none", "none", "bfq"]
    assert "paired" in worded(doc).judgement.method and not any(isinstance(e, RunStarted) for e in events)
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
