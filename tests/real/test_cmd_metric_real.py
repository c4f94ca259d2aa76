"""`compare --cmd … --cmd-metric`: the command's own figure judged, a run whose output lacks it invalid, and the
command's output kept off iosched's stdout (real command, real scheduler switches on a loop device)."""

from __future__ import annotations

import json

import pytest

from conftest import Loop, need_real, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def test_a_figure_read_from_the_output_is_the_primary_metric_and_a_run_without_it_is_invalid(loopdev: Loop,
                                                                                            tmp_path):
    need_real()
    count = tmp_path / "count"
    # Prints pgbench's two lines with a figure that grows each run, except in the second run (no figure).
    cmd = (f"n=$(cat {count} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {count}; "
           f"echo 'starting vacuum...end.'; [ $n -eq 2 ] || "
           f"{{ echo \"latency average = 1.$n ms\"; "
           f"echo \"tps = $((1000 + n)).5 (without initial connection time)\"; }}")
    r = run_cli("compare", loopdev.name, "--schedulers", "none,mq-deadline", "--cmd", cmd, "--repeat", "3",
                "--settle", "0", "--cmd-metric", "tps=^tps = ([0-9.]+):higher",
                "--cmd-metric", "latency=latency average = ([0-9.]+) ms:lower", "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # the command's own lines never reach iosched's stdout
    assert doc["primary_metric"] == "tps"
    assert doc["workload"]["cmd_metrics"] == [
        {"name": "tps", "pattern": "^tps = ([0-9.]+)", "better": "higher"},
        {"name": "latency", "pattern": "latency average = ([0-9.]+) ms", "better": "lower"}]
    runs = doc["runs"]
    assert [r["valid"] for r in runs] == [True, False, True, True, True, True]
    assert runs[1]["invalid_reason"] == "the command's output has no tps (no match for '^tps = ([0-9.]+)')"
    assert [r["metrics"].get("tps") for r in runs] == [1001.5, None, 1003.5, 1004.5, 1005.5, 1006.5]
    assert runs[2]["metrics"]["latency"] == 1.3 and "wall_s" in runs[2]["metrics"]
    (prim,) = [c for c in doc["comparisons"] if c["primary"]]
    assert prim["metric"] == "tps" and prim["n"] == [3, 2]  # none, mq-deadline (its run 2 left out)
    assert {"latency", "wall_s"} <= {c["metric"] for c in doc["comparisons"]}
    assert any("run 2 (mq-deadline): the command's output has no tps" in line for line in doc["judgement"]["invalid"])
    assert loopdev.current() == loopdev.initial_scheduler

    # A command that fails says its last line.
    r = run_cli("compare", loopdev.name, "--schedulers", "none,mq-deadline", "--cmd", "echo 'no such table'; exit 3",
                "--repeat", "1", "--settle", "0", "--cmd-metric", "tps=tps = ([0-9.]+)", timeout=60)
    assert r.returncode != 0 and "exited with status 3" in r.stderr and "'no such table'" in r.stderr, r.stderr
    assert loopdev.current() == loopdev.initial_scheduler


def test_a_command_that_prints_megabytes_keeps_its_last_figure(loopdev: Loop):
    """Only the output's last MiB is kept (in memory, read as it comes): 5 MB of lines, then the figure."""
    need_real()
    cmd = "yes 'tps = 1.0 (a progress line)' | head -c 5000000; echo; echo 'tps = 42.5'"
    r = run_cli("compare", loopdev.name, "--schedulers", "none,mq-deadline", "--cmd", cmd, "--repeat", "1",
                "--settle", "0", "--cmd-metric", "tps=^tps = ([0-9.]+)$", "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    runs = json.loads(r.stdout)["runs"]
    assert [run["metrics"].get("tps") for run in runs] == [42.5, 42.5], [run["invalid_reason"] for run in runs]


def _pattern_children() -> list[int]:
    """This installation's pattern children (another checkout's tests may run theirs meanwhile)."""
    import psutil

    from iosched.core.experiment import pattern_child

    return [p.pid for p in psutil.process_iter(["cmdline"]) if pattern_child.__file__ in (p.info["cmdline"] or [])]


def test_a_pattern_that_backtracks_past_its_deadline_makes_its_run_invalid_and_the_experiment_goes_on(
        loopdev: Loop, tmp_path):
    """The first run prints 3,000 'a's, over which the pattern backtracks for hours: that run is invalid with the
    reason once its 5 s are up, the others are read, and the device is put back (it was held on its variant until
    Ctrl-C)."""
    need_real()
    count = tmp_path / "count"
    cmd = (f"n=$(cat {count} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {count}; "
           "if [ $n -eq 1 ]; then printf x=; head -c 3000 /dev/zero | tr '\\0' a; echo '!'; else echo x=4$n; fi")
    pattern = "x=(?:a*a*a*)([0-9]+)"  # sound on short lines (the probe passes it), n**3 steps on a long one
    before = _pattern_children()
    r = run_cli("compare", loopdev.name, "--schedulers", "none,mq-deadline", "--cmd", cmd, "--repeat", "2",
                "--settle", "0", "--cmd-metric", f"x={pattern}:higher", "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    runs = json.loads(r.stdout)["runs"]
    assert [run["valid"] for run in runs] == [False, True, True, True]
    assert runs[0]["invalid_reason"] == (f"the pattern of x ({pattern!r}) took longer than 5 s on the command's "
                                         "output, so its figure was not read")
    assert [run["metrics"].get("x") for run in runs] == [None, 42.0, 43.0, 44.0]
    assert loopdev.current() == loopdev.initial_scheduler
    assert _pattern_children() == before  # the child was killed at its deadline


def test_a_pattern_refused_when_parsed_changes_nothing(loopdev: Loop):
    need_real()
    r = run_cli("compare", loopdev.name, "--schedulers", "none,bfq", "--cmd", "echo; head -c 100000 /dev/zero",
                "--cmd-metric", "x=(a+)+$", timeout=60)
    assert r.returncode == 2 and "backtrack without end" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    assert loopdev.current() == loopdev.initial_scheduler
