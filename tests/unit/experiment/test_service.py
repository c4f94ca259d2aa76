"""The experiment service is the only way the front ends run experiments: they build a plan and render what comes
back (the service itself runs on real devices in tests/real/test_service_real.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import iosched.cli
import iosched.tui
from iosched.core.experiment import service

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
