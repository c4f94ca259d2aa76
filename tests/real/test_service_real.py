"""The experiment service on a real loop device: what it answers when an experiment ends early, is refused, or
finishes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iosched.core.documents.params import parse_variants
from iosched.core.experiment import service
from iosched.core.experiment.compare import ComparePlan
from iosched.core.experiment.control import Control
from iosched.core.experiment.events import Event, RunEnded
from iosched.core.experiment.local_plan import TargetRequest
from iosched.core.load.jobs import CATALOG
from iosched.core.present.result_file import ResultFile
from iosched.core.present.sentences import interim_lines
from iosched.core.settings.device_lock import DeviceBusy, load_lock

from conftest import Loop, need_real

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def small_plan(loop: Loop, tmp_path: Path, repeat: int = 3) -> ComparePlan:
    job = CATALOG["randread-q16t2"].scaled(runtime=1.0, size=16 << 20)
    return ComparePlan(loop.name, parse_variants("none,bfq"), job=job, repeat=repeat, settle=0.0,
                       target=TargetRequest(dir=str(tmp_path)))


def test_a_cancelled_experiment_is_an_outcome_with_its_finished_runs(loopdev: Loop, tmp_path: Path):
    need_real("fio")
    ctl, events = Control(), []
    save = tmp_path / "cancelled.json"

    def on_event(e: Event) -> None:
        events.append(e)
        if isinstance(e, RunEnded) and e.index == 3:
            ctl.cancel()  # as Esc in the TUI does: after two runs of each

    outcome = service.run(small_plan(loopdev, tmp_path), ResultFile(save), on_event, ctl)
    assert outcome.status == "cancelled" and outcome.reason == "cancelled" and outcome.error is None
    assert outcome.finished_runs == 4 and outcome.doc.judgement is not None  # judged, not thrown away
    assert outcome.saved == save and json.loads(save.read_text())["status"] == "cancelled"
    ends = [e for e in events if isinstance(e, RunEnded)]
    standing = ends[-1].standing  # where it stands rides on the event, said by core/present
    assert standing is not None and "interim" in interim_lines(standing)[0]
    assert loopdev.current() == loopdev.initial_scheduler


def test_nothing_runs_on_a_device_under_load_elsewhere(loopdev: Loop, tmp_path: Path):
    need_real("fio")
    save = tmp_path / "never.json"
    with load_lock(loopdev.name, "matrix"), pytest.raises(DeviceBusy):
        service.run(small_plan(loopdev, tmp_path), ResultFile(save, keep_empty=True))
    assert not save.exists() and loopdev.current() == loopdev.initial_scheduler


def test_a_final_outcome_is_judged_and_saved(loopdev: Loop, tmp_path: Path):
    need_real("fio")
    save = tmp_path / "final.json"
    outcome = service.run(small_plan(loopdev, tmp_path, repeat=2), ResultFile(save))
    assert outcome.status == "final" and outcome.finished_runs == 4 and not outcome.save_error
    saved = json.loads(save.read_text())
    assert saved["judgement"]["comparisons"] and saved["primary_metric"] == "iops"
    assert loopdev.current() == loopdev.initial_scheduler
