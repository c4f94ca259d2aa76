"""The experiment service: the only way the front ends run experiments, and what it answers when one ends early."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import iosched.cli
import iosched.tui
from iosched.core.experiment import service
from iosched.core.experiment.runner import Control, Event, parse_variants
from iosched.core.experiment.service import ExperimentPlan, ResultFile
from iosched.core.load.jobs import CATALOG
from iosched.core.settings.device_lock import DeviceBusy, load_lock

from conftest import Loop, need_real

# What only the service may call: running, locking a result file, putting a device back.
ORCHESTRATION = {"run_experiment", "run_alternation", "run_matrix", "result_lock", "puts_back", "Configurator"}


def imported_names(package) -> dict[str, set[str]]:
    """Every name each module of ``package`` imports from iosched.core, or reaches as an attribute (its installed
    source, parsed)."""
    found: dict[str, set[str]] = {}
    paths = [p for folder in getattr(package, "__path__", []) for p in Path(folder).rglob("*.py")]
    for path in paths or [Path(package.__file__)]:
        if True:
            names: set[str] = set()
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("iosched.core"):
                    names |= {a.name for a in node.names}
                elif isinstance(node, ast.Attribute):
                    names.add(node.attr)  # service.run_matrix or a module's attribute would show here
            found[str(path)] = names
    return found


def test_the_front_ends_reach_experiments_only_through_the_service():
    cli, tui = imported_names(iosched.cli), imported_names(iosched.tui)
    assert any(p.endswith("workloads.py") for p in cli) and any(p.endswith("compare_screen.py") for p in tui)
    for path, names in {**cli, **tui}.items():
        assert not names & ORCHESTRATION, f"{path} orchestrates: {sorted(names & ORCHESTRATION)}"
    # The check sees what it looks for: the service itself does call them.
    own = imported_names(service)
    assert any({"run_experiment", "run_matrix", "result_lock"} <= names for names in own.values())


def small_plan(loop: Loop, tmp_path: Path, repeat: int = 3) -> ExperimentPlan:
    job = CATALOG["randread-q16t2"].scaled(runtime=1.0, size=16 << 20)
    return ExperimentPlan(loop.name, "compare", parse_variants("none,bfq"), job=job, repeat=repeat, settle=0.0,
                          target=service.TargetRequest(dir=str(tmp_path)))


def test_a_cancelled_experiment_is_an_outcome_with_its_finished_runs(loopdev: Loop, tmp_path: Path):
    need_real("fio")
    ctl, events = Control(), []
    save = tmp_path / "cancelled.json"

    def on_event(e: Event) -> None:
        events.append(e)
        if e.kind == "run-end" and e.index == 3:
            ctl.cancel()  # as Esc in the TUI does: after two runs of each

    outcome = service.run(small_plan(loopdev, tmp_path), ResultFile(save), on_event, ctl)
    assert outcome.status == "cancelled" and outcome.reason == "cancelled" and outcome.error is None
    assert outcome.finished_runs == 4 and outcome.judgement is not None  # judged, not thrown away
    assert outcome.saved == save and json.loads(save.read_text())["status"] == "cancelled"
    ends = [e for e in events if e.kind == "run-end"]
    assert ends[-1].lines and "interim" in ends[-1].lines[0]  # the interim estimates ride on the event
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
