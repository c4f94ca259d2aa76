"""The experiment service is the only way the front ends run experiments, on this machine or on a fleet: they build
a plan and render what comes back (the service itself runs on real devices in tests/real/test_service_real.py, with
fleets in tests/real/test_fleet_real.py)."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest

import iosched.cli
import iosched.tui
from iosched.core.documents.params import parse_variants
from iosched.core.experiment import alternation, local_plan, matrix
from iosched.core.experiment.compare import ComparePlan
from iosched.core.fleet import fleet_matrix, fleet_plan
from iosched.core.load.replay import ReplayRequest
from iosched.core.present import result_file
from iosched.core.trace.tracer import TracingUnavailable

# What only the service (and the plans it runs) may call: the one slot loop and its executors, on this machine or on
# a fleet's hosts, saving, locking a result file, putting a device back.
ORCHESTRATION = {"run_slots", "LocalRuns", "Turns", "InLockstep", "OnItsOwn", "result_lock", "Configurator",
                 "run_job", "Lockstep", "read_scheduler", "save_result"}


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
    # The check sees what it looks for: the service itself does call them, and so do the fleet's plans.
    plans = {**imported_names(local_plan), **imported_names(matrix), **imported_names(alternation)}
    assert any({"run_slots", "LocalRuns"} <= names for names in plans.values())
    assert any("result_lock" in names for names in plans.values())
    assert any({"run_slots", "InLockstep", "OnItsOwn", "Lockstep"} <= names
               for names in imported_names(fleet_plan).values())
    assert any("run_job" in names for names in imported_names(fleet_matrix).values())
    assert any(p.endswith("fleet.py") for p in cli) and any(p.endswith("fleet_matrix.py") for p in cli)
    # Nor does any of them save a result itself: the one saver (ResultFile, the service's Saver) does.
    assert any("save_result" in names for names in imported_names(result_file).values())


def test_a_timed_replay_where_the_block_layer_cannot_be_traced_is_refused_before_anything_runs(tmp_path):
    # A fixture root has no BTF and no block tracepoints: no tracer can run there, whatever this machine has.
    timed = ComparePlan("loop9", parse_variants("none,bfq"), root=tmp_path,
                        replay=ReplayRequest(str(tmp_path / "x.iolog"), "timed"))
    with pytest.raises(TracingUnavailable) as e:
        timed.check()
    assert str(e.value).startswith("a replay's latency is its requests' in the block layer, not fio's, and the "
                                   "tracer cannot run here (")
    assert str(e.value).endswith("): --replay-mode fast judges its throughput without it")
    assert timed.primary == "total_p99_us"
    fast = replace(timed, replay=ReplayRequest(str(tmp_path / "x.iolog"), "fast"))
    fast.check()  # judged on MB/s: no tracer needed
    assert fast.primary == "mb_s"
