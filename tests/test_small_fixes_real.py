"""Small leftovers of the hardening: fio work directories after SIGKILL, long names, wbt_lat_usec=-1."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from pathlib import Path

from test_experiment_real import no_fio_left, start_cli, wait_for_fio

from iosched.core.load.workdirs import clean_stale_workdirs

from conftest import need_real, run_cli


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


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


def test_only_stale_directories_of_ours_are_removed(tmp_path):
    dead = _dead_pid()
    stale = tmp_path / f"iosched-fio-{dead}-abc"
    stale.mkdir()
    live = tmp_path / f"iosched-fio-{os.getpid()}-abc"
    live.mkdir()
    busy = tmp_path / f"iosched-fio-{dead}-xyz"
    busy.mkdir()
    (busy / "other").write_text("not ours")
    fresh_old = tmp_path / "iosched-fio-oldstyle"
    fresh_old.mkdir()
    assert clean_stale_workdirs(dry_run=True, tmp=tmp_path) == [str(stale)] and stale.exists()
    assert clean_stale_workdirs(tmp=tmp_path) == [str(stale)]
    assert not stale.exists() and live.exists() and busy.exists() and fresh_old.exists()


def test_a_long_scheduler_name_is_cut_in_the_message(loopdev):
    out = run_cli("set", loopdev.name, "x" * 10_000)
    assert out.returncode == 2
    assert len(out.stderr) < 300 and "(10000 characters)" in out.stderr
    assert loopdev.current() == loopdev.initial_scheduler


def test_wbt_lat_usec_minus_one_is_the_kernel_default(loopdev):
    wbt = loopdev.sysdir / "queue/wbt_lat_usec"
    before = wbt.read_text().strip()
    try:
        assert run_cli("tune", loopdev.name, "wbt_lat_usec=1234").returncode == 0
        out = run_cli("tune", loopdev.name, "wbt_lat_usec=-1")
        assert out.returncode == 0, out.stderr
        now = wbt.read_text().strip()
        assert now != "1234" and out.stdout.strip() == f"{loopdev.name} wbt_lat_usec: 1234 -> {now} " \
            "(kernel default applied)"
    finally:
        wbt.write_text(before)
