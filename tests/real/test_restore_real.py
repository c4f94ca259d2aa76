"""`iosched restore` on real loop devices: it says what it put back and nothing else, and removes the fio
work directory a killed run left."""

from __future__ import annotations

import signal
import tempfile
from pathlib import Path

import pytest
from fio_support import no_fio_left, start_cli, wait_for_fio

from iosched.core.settings.restore_report import (
    NOTHING_NEEDED,
    NOTHING_RECORDED,
)

from conftest import need_real, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def test_restore_prints_only_what_it_put_back(loopdev):
    assert run_cli("set", loopdev.name, "bfq").returncode == 0
    r = run_cli("restore")
    assert r.returncode == 0, r.stderr
    # nr_requests was journaled by the switch and came back with the scheduler: not worth a line.
    assert r.stdout.splitlines() == [f"{loopdev.name} scheduler: restored bfq -> none"]
    assert loopdev.current() == "none"


def test_restore_says_plainly_when_nothing_needed_restoring(loopdev):
    assert run_cli("set", loopdev.name, "mq-deadline").returncode == 0
    (loopdev.sysdir / "queue/scheduler").write_text("none")  # put back by hand: the journal still holds it
    r = run_cli("restore", "--dry-run")
    assert r.returncode == 0 and r.stdout.splitlines() == [NOTHING_NEEDED]
    r = run_cli("restore")
    assert r.returncode == 0 and r.stdout.splitlines() == [NOTHING_NEEDED]
    assert run_cli("restore").stdout.splitlines() == [NOTHING_RECORDED]


def test_restore_removes_the_work_directory_of_a_killed_run(loopdev, tmp_path):
    need_real("fio")
    job = tmp_path / "r.fio"
    job.write_text("[r]\nrw=randread\nbs=4k\nsize=32M\n")
    proc = start_cli("run", loopdev.name, "--job", str(job), "--runtime", "20")
    wait_for_fio(f"iosched-fio-{proc.pid}-", proc)
    (left,) = Path(tempfile.gettempdir()).glob(f"iosched-fio-{proc.pid}-*")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    no_fio_left(str(left))  # fio dies with iosched (PR_SET_PDEATHSIG)
    assert left.is_dir() and [p.name for p in left.iterdir()] == ["job.fio"]
    out = run_cli("restore")
    assert out.returncode == 0, out.stderr
    assert f"removed a fio work directory a killed run left: {left}" in out.stdout
    assert not left.exists()


def test_restore_of_named_devices_leaves_the_others_and_refuses_an_unknown_one(make_loop):
    first, second = make_loop("64M"), make_loop("64M")
    for loop in (first, second):
        assert run_cli("set", loop.name, "bfq").returncode == 0
    r = run_cli("restore", "nosuchdisk9")
    assert r.returncode == 2 and r.stderr == "iosched: no block device named nosuchdisk9\n" and not r.stdout
    assert first.current() == second.current() == "bfq"  # nothing changed
    r = run_cli("restore", first.name)
    assert r.returncode == 0 and r.stdout.splitlines() == [f"{first.name} scheduler: restored bfq -> none"], r
    assert first.current() == "none" and second.current() == "bfq"
    r = run_cli("restore", "--dry-run", second.name)
    assert r.stdout.splitlines()[0] == f"{second.name} scheduler: would restore bfq -> none", r
    assert first.name not in r.stdout
    assert run_cli("restore").stdout.splitlines() == [f"{second.name} scheduler: restored bfq -> none"]
