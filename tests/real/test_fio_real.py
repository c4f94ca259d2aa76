"""Real fio runs: a colon in a scratch path, paths fio cannot take, deadlines, a stop before fio started, and
the device's megabytes against fio's."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from fio_support import fio_procs

from iosched.core.base.errors import BadInput
from iosched.core.load.fio import FioRun, command
from iosched.core.load.fio_group import run_fio
from iosched.core.load.fio_result import FioFailed
from iosched.core.load.jobs import CATALOG, parse_job_file
from iosched.core.load.targets import Target, choose_target

from conftest import need_real, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def test_a_colon_in_the_scratch_dir_is_one_file_for_fio(loopdev, tmp_path):
    need_real("fio")
    d = tmp_path / "a:b"
    d.mkdir()
    for job in (CATALOG["4k-write"].scaled(runtime=1, size=1 << 20), parse_job_file("[w]\nrw=write\nbs=4k\nsize=1M\n")):
        t = choose_target(loopdev.name, writes=True, directory=d, size=1 << 20)
        try:
            res = run_fio(job, t)
            assert res.total_ios > 0
            # fio wrote the one file at the exact path: not "…/a" and "b/iosched.dat".
            assert Path(t.path).stat().st_size == 1 << 20 and not (tmp_path / "a").exists()
        finally:
            t.release()
    assert list(d.iterdir()) == []


def test_command_refuses_a_path_fio_cannot_take(tmp_path):
    need_real("fio")
    with pytest.raises(BadInput, match="line break"):
        command(CATALOG["4k-read"], Target("loop9", "/s/x\nexec_prerun=id", "file"), str(tmp_path))


def test_a_silent_fio_is_killed_at_its_deadline(tmp_path):
    """A child that prints nothing (as fio in D state) still ends at the deadline."""
    need_real("setpriv")
    run = FioRun(["sleep", "60"])
    t0 = time.monotonic()
    with pytest.raises(FioFailed, match="did not finish within 1 s"):
        run.run(timeout=1)
    assert time.monotonic() - t0 < 30 and run.proc is not None and run.proc.returncode is not None


def test_stop_before_fio_started_kills_it_at_once(loopdev, tmp_path):
    need_real("fio")
    run = FioRun([])
    run.stop()  # the worker has not started fio yet
    run.argv = command(CATALOG["4k-read"].scaled(runtime=30), Target(loopdev.name, loopdev.path, "device"),
                       str(tmp_path))
    done: list[BaseException] = []

    def worker() -> None:
        try:
            run.run()
        except FioFailed as e:
            done.append(e)

    t = threading.Thread(target=worker)
    t.start()
    t.join(timeout=20)
    assert not t.is_alive() and "stopped" in str(done[0])
    assert fio_procs(loopdev.path) == []


def test_device_megabytes_are_fios_decimal_megabytes(loopdev):
    """Direct reads of a loop device nobody else uses: the device moved exactly what fio read."""
    need_real("fio")
    r = run_cli("compare", loopdev.name, "--schedulers", "none,none", "--job", "4k-read", "--runtime", "1",
                "--repeat", "1", "--settle", "0", "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    for run in json.loads(r.stdout)["runs"]:
        fio_mb = sum(j["read"]["io_bytes"] for j in run["fio"]["jobs"]) / 1e6
        assert fio_mb > 1 and abs(run["metrics"]["dev_mb"] - fio_mb) < 0.01 * fio_mb, (run["metrics"], fio_mb)
