"""The fio command line and the judging of fio's JSON, without running fio."""

import shutil

import pytest

from iosched.core.load.fio import FioFailed, command, parse_result
from iosched.core.load.jobs import CATALOG, parse_job_file
from iosched.core.load.targets import Target

from conftest import need


def job_json(read_ios: int = 1000, write_ios: int = 0, error: int = 0) -> dict:
    def side(n: int) -> dict:
        return {"iops": n / 2.0, "bw_bytes": n * 4096 // 2, "total_ios": n, "io_bytes": n * 4096,
                "clat_ns": {"mean": 50_000.0, "percentile": {"50.000000": 40_000, "99.000000": 90_000,
                                                             "99.900000": 200_000}}}

    return {"jobs": [{"jobname": "j", "error": error, "job_runtime": 4000, "job options": {"numjobs": "2"},
                      "read": side(read_ios), "write": side(write_ios), "trim": {"total_ios": 0},
                      "usr_cpu": 10.0, "sys_cpu": 20.0}]}


def test_result_is_judged_from_the_json():
    r = parse_result(job_json())
    assert r.iops == 500 and r.total_ios == 1000 and r.runtime_s == 2.0
    assert (r.clat_mean_us, r.clat_p50_us, r.clat_p99_us, r.clat_p999_us) == (50.0, 40.0, 90.0, 200.0)
    with pytest.raises(FioFailed, match="error 5"):
        parse_result(job_json(error=5))
    with pytest.raises(FioFailed, match="no IO"):  # what fio's mounted-device guard leaves, with exit status 0
        parse_result(job_json(read_ios=0))
    with pytest.raises(FioFailed, match="no job"):
        parse_result({"jobs": []})


def test_command_line():
    need(shutil.which("fio") is not None, "needs fio on PATH")
    dev, scratch = Target("loop9", "/dev/loop9", "device"), Target("loop9", "/s/iosched.dat", "file", "/s")
    read = command(CATALOG["4k-read"], dev, "/tmp")
    assert "--thread" in read and "--output-format=json+" in read and "--filename=/dev/loop9" in read
    assert "--readonly" in read  # fio's own guard on raw devices for read jobs
    assert "--readonly" not in command(CATALOG["4k-read"], scratch, "/tmp")  # fio must lay the file out
    assert "--readonly" not in command(CATALOG["4k-write"], dev, "/tmp")


def test_job_file_gets_the_target(tmp_path):
    need(shutil.which("fio") is not None, "needs fio on PATH")
    jf = parse_job_file("[r]\nrw=randread\nbs=4k\n", "r.fio")
    argv = command(jf, Target("loop9", "/dev/loop9", "device"), str(tmp_path), runtime=2)
    text = (tmp_path / "job.fio").read_text()
    assert argv[-1] == str(tmp_path / "job.fio")
    assert text.startswith("[global]\nfilename=/dev/loop9\n") and "runtime=2" in text


def test_group_signals_only_reach_an_unreaped_child(monkeypatch):
    """A signal after the reap could hit a stranger that was given the pid: none is sent then."""
    import os
    import signal
    import subprocess

    from iosched.core.load.children import Child

    proc = subprocess.Popen(["sh", "-c", "exit 3"], start_new_session=True)
    child = Child(proc)
    sent: list[tuple[int, bool]] = []
    real = os.killpg
    monkeypatch.setattr(os, "killpg", lambda pid, sig: sent.append((pid, proc.returncode is None)) or real(pid, sig))
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: the zombie holds the pid
    child.signal_group(signal.SIGTERM)
    assert sent == [(proc.pid, True)]
    assert child.wait() == 3 and child.rusage is not None
    child.signal_group(signal.SIGKILL)
    assert sent == [(proc.pid, True)] and child.wait(timeout=0) == 3
