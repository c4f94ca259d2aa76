"""core must stay free of UI: importing any core module loads neither Textual nor Rich."""

import pkgutil
import subprocess
import sys

import iosched.core as core


def test_core_modules_load_no_ui_library():
    names = [f"iosched.core.{m.name}" for m in pkgutil.iter_modules(core.__path__)]
    assert "iosched.core.sampler" in names
    code = ("import sys\n" + "".join(f"import {n}\n" for n in names) +
            "ui = ('textual', 'rich', 'textual_plotext')\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ui)\n"
            "print(','.join(bad))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == ""


# iosched.__main__ runs the command on import: the `-m iosched` test below covers it.
CLI_MODULES = ("iosched", "iosched.main", "iosched.watch", "iosched.record",
               "iosched.settings", "iosched.workloads", "iosched.workload_args", "iosched.report", "iosched.serve",
               "iosched.latency", "iosched.web_guard")


def test_every_command_line_module_loads_without_textual():
    code = ("import sys\n" + "".join(f"import {n}\n" for n in CLI_MODULES) +
            "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'textual_plotext')"
            " or m.startswith('iosched.tui'))))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == ""


def test_the_tui_start_loads_no_command_and_no_tracer():
    """`iosched` parses its arguments first: fio, the tracer, the experiment and the statistics behind the
    subcommands load only when one of them runs (about 60 ms of the first frame, 3 MB with the tracer)."""
    # The TUI's own modules too: the latency pane loads the tracer and psutil when it first opens.
    code = ("import sys, iosched.main, iosched.tui.app\n"
            "heavy = ('iosched.core.tracer', 'iosched.core.tracing_parse', 'iosched.core.trace_probe',"
            " 'iosched.core.experiment', 'iosched.core.stats', 'iosched.core.verdict', 'iosched.core.fio',"
            " 'psutil', 'plotext')\n"
            "print(','.join(m for m in heavy if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == ""
    loaded = subprocess.run([sys.executable, "-c", "import iosched.workloads, sys; print('iosched.core.stats' in "
                             "sys.modules)"], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "True"  # the check sees a loaded module


def test_iosched_list_runs_without_ever_importing_textual(tmp_path):
    """`python -X importtime` names every module a real command loaded: no textual, no iosched.tui."""
    from tui_support import populated_tree

    tree = populated_tree(tmp_path)
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "iosched", "--root", str(tree.root), "list"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "nvme0n1" in r.stdout
    loaded = [line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")]
    assert "iosched.main" in loaded and "iosched.core.devices" in loaded  # the trace is real
    assert [m for m in loaded if m.split(".")[0] in ("textual", "textual_plotext") or
            m.startswith("iosched.tui")] == []
