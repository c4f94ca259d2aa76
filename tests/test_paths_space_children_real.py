"""Real loop devices and real fio for the target-path, free-space and child-process guarantees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_experiment_real import fio_procs, no_fio_left, start_cli

from iosched.core.base.errors import BadInput
from iosched.core.load.fio import FioFailed, FioRun, command, dies_with_us, run_fio
from iosched.core.load.jobs import CATALOG, parse_job_file
from iosched.core.load.targets import Target, choose_target

from conftest import need_real, run_cli


def procs_with(marker: str) -> list[int]:
    """PIDs whose command line holds ``marker`` as one argument word (not this test's own processes)."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                args = (d / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if marker.encode() in args:
                pids.append(int(d.name))
    return pids


def wait_for(marker: str, proc: subprocess.Popen, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not procs_with(marker):
        if proc.poll() is not None:
            pytest.fail(f"iosched ended before the command started: {proc.communicate()}")
        if time.monotonic() > deadline:
            pytest.fail("the command did not start")
        time.sleep(0.05)


def gone(marker: str, timeout: float = 5) -> bool:
    deadline = time.monotonic() + timeout
    while procs_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not procs_with(marker)


# --- 1: the target path reaches fio as one file, never as options ------------------------------------------


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


def test_a_line_break_in_a_dir_or_a_mountpoint_is_refused(loopdev, tmp_path, private_journal):
    need_real("fio", "mkfs.ext4", "mount")
    pwned = Path.cwd() / "iosched-pwned"  # fio would run the command in the cwd it inherits
    evil = tmp_path / "x\nexec_prerun=touch iosched-pwned\n"
    evil.mkdir()
    r = run_cli("run", loopdev.name, "--job", "4k-write", "--runtime", "1", "--size", "1M", "--dir", str(evil))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "line break" in r.stderr, r.stderr
    assert list(evil.iterdir()) == [] and not pwned.exists()
    # The same name as a mountpoint (mountinfo spells it \012; the device list decodes it).
    subprocess.run(["mkfs.ext4", "-q", "-F", loopdev.path], check=True, capture_output=True)
    subprocess.run(["mount", loopdev.path, str(evil)], check=True)
    try:
        r = run_cli("compare", loopdev.name, "--schedulers", "none,bfq", "--job", "4k-write", "--runtime", "1",
                    "--size", "1M")
        assert r.returncode == 2 and "line break" in r.stderr, r.stderr
        assert not any(evil.glob("iosched-scratch-*")) and not pwned.exists()
    finally:
        subprocess.run(["umount", str(evil)], check=False)
    assert loopdev.current() == loopdev.initial_scheduler and not (private_journal / "journal.json").exists()


def test_command_refuses_a_path_fio_cannot_take(tmp_path):
    need_real("fio")
    with pytest.raises(BadInput, match="line break"):
        command(CATALOG["4k-read"], Target("loop9", "/s/x\nexec_prerun=id", "file"), str(tmp_path))


# --- 2: a job file's extent against the free space -------------------------------------------------------


def test_a_job_file_larger_than_the_free_space_is_refused(loopdev, tmp_path, private_journal):
    """2 GiB of tmpfs passes a 1 GiB check; the job file's own 4 GiB does not."""
    need_real("fio", "mount")
    mnt = tmp_path / "fs"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2g", "tmpfs", str(mnt)], check=True)
    try:
        job = tmp_path / "big.fio"
        job.write_text("[w]\nrw=write\nbs=1M\noffset=1g\nsize=3g\n")
        for args in (("run", loopdev.name, "--job", str(job)),
                     ("compare", loopdev.name, "--schedulers", "none,bfq", "--job", str(job)),
                     ("compare", loopdev.name, "--schedulers", "none,bfq", "--jobs", f"4k-read,{job}")):
            r = run_cli(*args, "--runtime", "1", "--dir", str(mnt))
            assert r.returncode == 2 and "not enough space" in r.stderr and "4096 MiB" in r.stderr, r.stderr
        assert list(mnt.iterdir()) == []
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
    no_fio_left(str(mnt))
    assert loopdev.current() == loopdev.initial_scheduler


# --- 3: a --cmd dies with iosched, and its CPU time is its own --------------------------------------------


@pytest.mark.parametrize("cmd", ["sleep 30.25", "sleep 30.5; true"])
def test_sigkill_of_iosched_takes_the_command_along(loopdev, cmd):
    need_real("setpriv")
    marker = cmd.split(";")[0].split()[1]
    p = start_cli("compare", loopdev.name, "--schedulers", "none,bfq", "--cmd", cmd, "--repeat", "1",
                  "--settle", "0")
    wait_for(marker, p)
    p.kill()
    p.communicate(timeout=10)
    assert gone(marker), "the command outlived a SIGKILLed iosched"
    run_cli("restore")


def test_command_cpu_time_is_its_own_rusage(tmp_path):
    """Another child of iosched reaped while the command runs must not count in the command's CPU time."""
    need_real("setpriv")
    from iosched.core.experiment.runner import Control, _run_cmd

    flag = tmp_path / "go"
    other: dict[str, float] = {}

    def busy() -> None:
        # Reaped by this process while the command waits for the flag; then the command may end.
        # It burns a fixed CPU time, not a fixed amount of work, so a fast machine cannot undercut the premise.
        burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5:\n    pass\n"
        p = subprocess.Popen([sys.executable, "-c", burn])
        _, _, ru = os.wait4(p.pid, 0)
        p.returncode = 0
        other["cpu"] = ru.ru_utime + ru.ru_stime
        flag.touch()

    t = threading.Thread(target=busy)
    t.start()
    m = _run_cmd(f"while [ ! -e {flag} ]; do sleep 0.05; done", Control(), lambda: None)
    t.join()
    assert other["cpu"] > 0.2, other  # the premise: the other child did use CPU
    assert m["cmd_usr_s"] + m["cmd_sys_s"] < other["cpu"] / 2, (m, other)


# --- 5: --resume reads a regular file only --------------------------------------------------------------


def test_resume_from_dev_zero_or_a_fifo_is_refused_at_once(loopdev, tmp_path):
    need_real()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo)):
        r = run_cli("compare", loopdev.name, "--resume", path, timeout=20)
        assert r.returncode == 2 and "not a regular file" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert loopdev.current() == loopdev.initial_scheduler


# --- 6: fio's deadline and stop --------------------------------------------------------------------------


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


def test_dies_with_us_names_the_signal():
    assert dies_with_us(["x"], "TERM")[1:4] == ["--pdeathsig", "TERM", "--"]
    assert json.dumps(dies_with_us(["x"])).count("KILL") == 1


# --- 4: the device's and fio's megabytes are the same unit --------------------------------------------------


def test_device_megabytes_are_fios_decimal_megabytes(loopdev):
    """Direct reads of a loop device nobody else uses: the device moved exactly what fio read."""
    need_real("fio")
    r = run_cli("compare", loopdev.name, "--schedulers", "none,none", "--job", "4k-read", "--runtime", "1",
                "--repeat", "1", "--settle", "0", "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    for run in json.loads(r.stdout)["runs"]:
        fio_mb = sum(j["read"]["io_bytes"] for j in run["fio"]["jobs"]) / 1e6
        assert fio_mb > 1 and abs(run["metrics"]["dev_mb"] - fio_mb) < 0.01 * fio_mb, (run["metrics"], fio_mb)
