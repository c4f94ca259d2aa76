"""Job files and unfinished fio runs on real loop devices: nothing refused ever reaches fio."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from fio_support import no_fio_left, start_cli, wait_for_fio

from conftest import run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def refused(loop, job: Path, *extra: str, env: dict[str, str] | None = None):
    before = loop.scheduler_text()
    out = run_cli("run", loop.name, "--job", str(job), "--runtime", "1", *extra, env=env)
    assert out.returncode == 2, out
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert loop.scheduler_text() == before
    return out


def test_an_included_exec_prerun_never_runs(loopdev, tmp_path):
    marker = tmp_path / "marker"
    inc = tmp_path / "inc.fio"
    inc.write_text(f"[global]\nexec_prerun=touch {marker}\n")
    for spelling in (f"include={inc}", f"include {inc}"):
        job = tmp_path / "job.fio"
        job.write_text(f"[global]\n{spelling}\n[r]\nrw=randread\nbs=4k\n")
        out = refused(loopdev, job)
        assert f"{job} line 2: include" in out.stderr
        assert not marker.exists()


def test_ioscheduler_in_a_job_file_leaves_the_scheduler_alone(loopdev, tmp_path):
    job = tmp_path / "kyber.fio"
    job.write_text("[r]\nrw=randread\nioscheduler=kyber\n")
    out = refused(loopdev, job)
    assert "line 3: option ioscheduler" in out.stderr
    assert loopdev.current() == loopdev.initial_scheduler


def test_log_options_write_nothing(loopdev, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    for opt in ("write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log"):
        job = tmp_path / "log.fio"
        job.write_text(f"[r]\nrw=randread\n{opt}={logs}/out\n")
        out = refused(loopdev, job)
        assert f"line 3: option {opt}" in out.stderr
    assert list(logs.iterdir()) == []


def test_environment_expansion_is_refused(loopdev, tmp_path):
    job = tmp_path / "env.fio"
    job.write_text("[r]\nrw=randread\nbs=${X}\n")
    out = refused(loopdev, job, env={"X": "4k"})
    assert "line 3: ${VAR}" in out.stderr


def test_an_accepted_job_file_runs_from_the_file_iosched_writes(loopdev, tmp_path):
    job = tmp_path / "ok.fio"
    job.write_text("; mine\n[global]\nioengine=psync\ndirect\n[r]\nreadwrite=randread\nblocksize=4k\nsize=64M\n")
    out = run_cli("run", loopdev.name, "--job", str(job), "--runtime", "1", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["metrics"]["iops"] > 0
    opts = doc["fio"]["global options"]
    assert opts["filename"] == loopdev.path and opts["ioengine"] == "psync" and opts["runtime"] == "1"


def _kill_fio_mid_run(proc, marker: str) -> None:
    (pid, *_) = wait_for_fio(marker, proc)
    time.sleep(2.5)  # a status report or two first: the killed run must not pass for a result
    os.kill(pid, signal.SIGKILL)


def test_run_with_fio_killed_is_a_failure(loopdev):
    proc = start_cli("run", loopdev.name, "--job", "4k-randread", "--runtime", "8", "--size", "64M")
    _kill_fio_mid_run(proc, loopdev.path)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, (out, err)
    assert err.strip().splitlines()[-1] == "iosched: fio was killed by SIGKILL before the end of its run"
    assert "IOPS" not in out
    no_fio_left(loopdev.path)


def test_compare_marks_a_killed_run_invalid(loopdev, tmp_path):
    saved = tmp_path / "exp.json"
    proc = start_cli("compare", loopdev.name, "--schedulers", "none,mq-deadline", "--repeat", "1", "--job",
                     "4k-randread", "--runtime", "6", "--size", "64M", "--settle", "0", "--save", str(saved))
    _kill_fio_mid_run(proc, loopdev.path)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, (out, err)
    assert "INVALID: fio was killed by SIGKILL" in err
    doc = json.loads(saved.read_text())
    first, second = doc["runs"]
    assert not first["valid"] and "killed by SIGKILL" in first["invalid_reason"]
    assert second["valid"]
    assert any("killed by SIGKILL" in x for x in doc["judgement"]["invalid"])
    sums = doc["judgement"]["summaries"]
    assert sums[first["variant"]] == {} and sums[second["variant"]]["iops"]["n"] == 1
    no_fio_left(loopdev.path)
