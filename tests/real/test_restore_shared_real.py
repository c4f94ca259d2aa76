"""A restore on a shared machine: a device under load from another iosched is left to it, named by its pid;
the process's own load is no obstacle to its own restore. Real loop devices, real compares."""

from __future__ import annotations

import json

import pytest
from fio_support import start_cli, wait_for_line

from iosched.core.settings.device_lock import load_lock
from iosched.core.settings.journal import Journal, default_run_dir
from iosched.core.settings.restore_report import restore_lines
from iosched.core.settings.scheduler import switch_scheduler
from iosched.core.settings.writes import restore

from conftest import need_real, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def test_restore_beside_a_running_compare_leaves_its_device_alone(loopdev, tmp_path):
    need_real("fio")
    save = tmp_path / "compare.json"
    p = start_cli("compare", loopdev.name, "--schedulers", "none,bfq", "--job", "randread-q16t2", "--runtime", "3",
                  "--repeat", "2", "--settle", "0", "--save", str(save))
    try:
        wait_for_line(p, "run 2/")  # runs 2 and 3 are on bfq: a restore would switch it back to none
        assert loopdev.current() == "bfq"
        for args in (("restore", "--dry-run"), ("restore",)):
            r = run_cli(*args)
            assert r.returncode == 0, r.stderr
            assert r.stdout.splitlines()[0] == (
                f"{loopdev.name}: left alone: under load from iosched (pid {p.pid}, compare), which puts back its "
                "own changes; `iosched restore` after it ends puts back the rest"), r.stdout
        assert loopdev.current() == "bfq"
        entries = Journal(default_run_dir("/")).entries()
        assert entries[f"{loopdev.name}/queue/scheduler"].pid == p.pid  # kept for the compare to put back
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 0, err
    doc = json.loads(save.read_text())
    assert doc["status"] == "final" and len(doc["runs"]) == 4
    assert all(run["valid"] for run in doc["runs"]), [run["invalid_reason"] for run in doc["runs"]]
    assert loopdev.current() == loopdev.initial_scheduler  # the compare put its device back itself
    assert run_cli("restore").stdout.splitlines() == ["nothing to restore: iosched has changed nothing that is "
                                                      "still recorded"]


def test_a_process_restores_the_device_it_holds_itself(loopdev):
    with load_lock(loopdev.name, "compare"):
        switch_scheduler(loopdev.name, "bfq")
        outcomes = restore(devices={loopdev.name})
        assert restore_lines(outcomes) == [f"{loopdev.name} scheduler: restored bfq -> none"]
    assert loopdev.current() == "none"
