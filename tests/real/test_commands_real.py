"""Commands as workloads on a real loop device: a command's whole process tree ends with its run (its cgroup, its
process group, its session), the run never waits on an output pipe a leftover holds, a SIGKILLed iosched's command
leftovers are ended by `restore`, and a command that fails is an invalid run with its reason while the study goes
on (short commands: no fio)."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path

import pytest
from fio_support import gone, start_cli, wait_for

from iosched.core.experiment import commands
from iosched.core.experiment.control import Control
from iosched.core.settings.cmd_cgroup import own_cgroup

from conftest import Loop, need, need_real, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def running(pid: int, marker: str) -> bool:
    """Whether ``pid`` is still the process whose command line holds ``marker``."""
    try:
        return marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False


def command_groups(pid: int | None = None) -> list[Path]:
    """The command cgroups of iosched ``pid`` (default: this process, whose runs the test made directly)."""
    here = own_cgroup()
    return sorted(here.glob(f"iosched-cmd-{pid or os.getpid()}-*")) if here is not None else []


def need_cgroup() -> None:
    need_real("setpriv")
    need(own_cgroup() is not None, "needs a cgroup2 group of iosched's own that hands no controller down")


def test_a_command_that_forks_leaves_nothing_running_after_its_run(loopdev: Loop, private_journal: Path):
    """The adversary's `(sleep 300 &); echo v=3`, and a child that calls setsid: each run's children are gone when
    the run ends, whichever way they left."""
    need_cgroup()
    cmd = "(sleep 300.11 & echo child=$!); setsid sh -c 'sleep 300.12 & echo escapee=$!'; echo v=3"
    r = run_cli("compare", loopdev.name, "--schedulers", "none,bfq", "--cmd", cmd, "--repeat", "2", "--settle", "0",
                "--cmd-metric", "child=child=([0-9]+)", "--cmd-metric", "escapee=escapee=([0-9]+)",
                "--metric", "wall_s", "--json", timeout=60)
    assert r.returncode == 0, r.stderr
    runs = json.loads(r.stdout)["runs"]
    assert len(runs) == 4 and all(run["valid"] for run in runs), runs
    pids = [(int(run["metrics"][k]), f"300.1{n}") for run in runs for n, k in ((1, "child"), (2, "escapee"))]
    assert len({p for p, _ in pids}) == 8
    assert not [p for p, marker in pids if running(p, marker)], "a command's child outlived its run"
    assert not list((private_journal / "cmdgroups").glob("*.json"))  # each run's group removed with its run
    assert loopdev.current() == loopdev.initial_scheduler


@pytest.mark.parametrize("cgroup", [True, False], ids=["cgroup", "group-and-session"])
def test_the_run_never_waits_on_a_pipe_a_child_holds(monkeypatch, cgroup):
    """Were the output pipe held by a leftover, the run would wait for it: with the wait made an hour, the run still
    ends at once. Without a cgroup (older systems), the process group and the session end the children."""
    need_cgroup() if cgroup else need_real("setpriv")
    monkeypatch.setattr(commands, "TAIL_WAIT_S", 3600.0)
    if not cgroup:
        monkeypatch.setattr(commands, "open_cmd_cgroup", lambda root="/": None)
    # A child in the command's process group, and one in a process group of its own in the same session.
    regroup = "import os, sys, time; os.setpgid(0, 0); time.sleep(float(sys.argv[1]))"
    cmd = f"(sleep 300.21 & echo child=$!); ({sys.executable} -c '{regroup}' 300.22 & echo other=$!); echo done"
    out: dict[str, object] = {}
    t = threading.Thread(target=lambda: out.update(result=commands.run_cmd(cmd, Control(), lambda: None)),
                         daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "the run waited on the output pipe a child held"
    _figures, output, failed = out["result"]  # type: ignore[misc]
    assert failed is None and "done" in output, output
    pids = {line.split("=")[0]: int(line.split("=")[1]) for line in output.splitlines() if "=" in line}
    assert not running(pids["child"], "300.21") and not running(pids["other"], "300.22")
    assert command_groups() == []


def test_restore_ends_what_a_sigkilled_runs_command_left_in_its_cgroup(loopdev: Loop):
    need_cgroup()
    p = start_cli("compare", loopdev.name, "--schedulers", "none,bfq", "--cmd",
                  "setsid sleep 300.31 & sleep 300.32", "--repeat", "1", "--settle", "0")
    try:
        wait_for("300.31", p)
        wait_for("300.32", p)
        (group,) = command_groups(p.pid)
    finally:
        p.send_signal(signal.SIGKILL)
        p.communicate(timeout=10)
    assert gone("300.32")  # the command's own group dies with iosched
    assert not gone("300.31", timeout=0.5)  # its own session: only the cgroup still holds it
    r = run_cli("restore")
    assert r.returncode == 0, r.stderr
    assert f"removed the cgroup of a killed run's command, and anything still running in it: {group}" in r.stdout
    assert gone("300.31") and not group.exists()


def test_a_failing_command_is_an_invalid_run_and_the_study_goes_on(loopdev: Loop, tmp_path: Path):
    """A compile that breaks under -j2 once: that run is invalid with its reason, shown and saved; every other run
    of the study runs and is saved."""
    need_real("setpriv")
    count = tmp_path / "count"
    study = tmp_path / "study.toml"
    study.write_text(
        'schedulers = "none,bfq"\nrepeat = 2\n\n'
        '[[workload]]\nname = "build"\n'
        f'cmd = "n=$(cat {count} 2>/dev/null || echo 0); echo $((n+1)) > {count}; echo compiling; '
        '[ $n -ne 1 ] || { echo \'make: *** [all] Error 2\'; exit 2; }"\n\n'
        '[[workload]]\nname = "crash"\ncmd = "echo v=1; kill -SEGV $$"\n\n'
        '[[workload]]\nname = "fine"\ncmd = "echo v=2"\n')
    save = tmp_path / "study.json"
    r = run_cli("compare", loopdev.name, "--study", str(study), "--settle", "0", "--save", str(save), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[-1] == f"iosched: saved to {save}", r.stderr
    doc = json.loads(save.read_text())
    assert doc["status"] == "final" and len(doc["runs"]) == 12
    bad = {(run["workload"], run["invalid_reason"]) for run in doc["runs"] if not run["valid"]}
    broke = "the command exited with status 2 (its last line: 'make: *** [all] Error 2')"
    crashed = "the command exited with status 139, as one killed by SIGSEGV does"
    assert ("build", broke) in bad and len([b for b in bad if b[0] == "build"]) == 1, bad
    assert {w for w, why in bad if why and why.startswith(crashed)} == {"crash"}
    assert sum(not run["valid"] for run in doc["runs"]) == 5  # the one build, the four crashes
    assert all(run["valid"] for run in doc["runs"] if run["workload"] == "fine")
    assert f"INVALID: {broke}" in r.stderr and broke in r.stdout
    rep = run_cli("report", str(save))
    assert rep.returncode == 0 and broke in rep.stdout, rep.stderr
    assert loopdev.current() == loopdev.initial_scheduler
