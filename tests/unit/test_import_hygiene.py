"""core must stay free of UI: importing any core module loads neither Textual nor Rich."""

import pkgutil
import subprocess
import sys

import iosched.cli as cli
import iosched.core as core


def modules_of(package) -> list[str]:
    """Every module under a package, found on disk: no list to keep."""
    return [m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]


def test_core_modules_load_no_ui_library():
    names = modules_of(core)
    assert "iosched.core.live.sampler" in names
    code = ("import sys\n" + "".join(f"import {n}\n" for n in names) +
            "ui = ('textual', 'rich', 'textual_plotext')\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ui)\n"
            "print(','.join(bad))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == ""


def test_every_command_line_module_loads_without_textual():
    # iosched.cli.__main__ runs the command on import: the `-m iosched.cli` test below covers it.
    names = [n for n in modules_of(cli) if n != "iosched.cli.__main__"]
    assert "iosched.cli.main" in names and "iosched.cli.web_server" in names
    code = ("import sys\n" + "".join(f"import {n}\n" for n in names) +
            "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'textual_plotext')"
            " or m.startswith('iosched.tui'))))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == ""


def test_the_tui_start_loads_no_command_and_no_tracer():
    """`iosched` parses its arguments first: fio, the tracer, the experiment and the statistics behind the
    subcommands load only when one of them runs (about 60 ms of the first frame, 3 MB with the tracer)."""
    # The TUI's own modules too: the latency pane loads the tracer and psutil when it first opens.
    code = ("import sys, iosched.cli.main, iosched.tui.app\n"
            "heavy = ('iosched.core.trace.tracer', 'iosched.core.trace.parse', 'iosched.core.trace.probe',"
            " 'iosched.core.experiment.runner', 'iosched.core.statistics.stats', 'iosched.core.statistics.verdict',"
            " 'iosched.core.load.fio', 'psutil', 'plotext', 'prometheus_client')\n"
            "print(','.join(m for m in heavy if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == ""
    loaded = subprocess.run([sys.executable, "-c", "import iosched.cli.workloads, sys; "
                             "print('iosched.core.statistics.stats' in sys.modules)"],
                            capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "True"  # the check sees a loaded module


def test_iosched_list_runs_without_ever_importing_textual(tmp_path):
    """`python -X importtime` names every module a real command loaded: no textual, no iosched.tui."""
    from tui_support import populated_tree

    tree = populated_tree(tmp_path)
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "iosched.cli", "--root", str(tree.root), "list"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "nvme0n1" in r.stdout
    loaded = [line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")]
    assert "iosched.cli.main" in loaded and "iosched.core.kernel.devices" in loaded  # the trace is real
    assert [m for m in loaded if m.split(".")[0] in ("textual", "textual_plotext") or
            m.startswith("iosched.tui")] == []


def test_no_module_reaches_into_plotexts_private_modules():
    """plotext's public functions and textual-plotext's widget plot are the surface we draw on: its private modules
    (``plotext._figure``, ``plotext._utility``) change without notice."""
    import ast
    from pathlib import Path

    import iosched.tui as tui

    files = [f for package in (core, cli, tui) for f in Path(package.__path__[0]).rglob("*.py")]
    assert any(f.name == "charts.py" and f.parent.name == "present" for f in files)
    private = []
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            private += [f"{f.name}: {n}" for n in names if n.startswith(("plotext._", "textual_plotext.plotext"))]
    assert private == []


# The judges the front ends call; every other module of core/statistics is maths they must not import.
JUDGES = {"outcome", "judge", "verdict", "matrix_judge", "fleet_verdict", "host_judges", "planning", "advice_rule"}


def test_the_front_ends_statistics_contract_names_every_maths_module():
    """pyproject.toml's contract that the front ends compute no statistics forbids each module of core/statistics
    but the judges: a maths module added later is under it at once, and no name in it is one that does not exist
    (a contract over a renamed module would forbid nothing)."""
    import tomllib
    from pathlib import Path

    import iosched.core.statistics as statistics

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    contracts = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if "compute no statistics" in c["name"]]
    assert contract["type"] == "forbidden" and contract["source_modules"] == ["iosched.cli", "iosched.tui"]
    modules = {m.rsplit(".", 1)[1] for m in modules_of(statistics)}
    assert modules > JUDGES and "stats" in modules
    assert {m.rsplit(".", 1)[1] for m in contract["forbidden_modules"]} == modules - JUDGES
    assert all(m.startswith("iosched.core.statistics.") for m in contract["forbidden_modules"])
