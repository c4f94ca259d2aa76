"""`compare --cmd … --cmd-metric`: the command's own figure judged, a run whose output lacks it invalid, and the
command's output kept off iosched's stdout (real command, real scheduler switches on a loop device)."""

from __future__ import annotations

import json

from conftest import Loop, need_real, run_cli


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
    assert [run["metrics"]["tps"] for run in json.loads(r.stdout)["runs"]] == [42.5, 42.5]
