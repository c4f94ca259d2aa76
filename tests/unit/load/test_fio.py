"""The fio command line and the judging of fio's JSON (also random and mutated), without running fio; fio
refused its target asks for root."""

import contextlib
import copy
import json
import os
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from link_support import digest, make_victim, plant, temporaries

from iosched.core.base.errors import BadInput
from iosched.core.load.fio import command, dies_with_us
from iosched.core.load.fio_result import FioDidNoIO, FioFailed, FioRefused, FioUnfinished, parse_result
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


def test_requests_that_moved_no_data_are_no_io():
    """fio counts a replayed request past the device's end as done, with 0 bytes: a run of those did no IO."""
    obj = job_json()
    obj["jobs"][0]["read"]["io_bytes"] = 0
    with pytest.raises(FioDidNoIO, match="its 1000 requests moved no data"):
        parse_result(obj)
    with pytest.raises(FioUnfinished, match="no IO"):  # an unfinished run: invalid, with its reason
        parse_result(job_json(read_ios=0))
    fg, bg = job_json()["jobs"][0], job_json(read_ios=0)["jobs"][0]
    with pytest.raises(FioDidNoIO, match="for the role 'bg'"):
        parse_result({"jobs": [{**fg, "jobname": "fg"}, {**bg, "jobname": "bg"}]})


def test_a_clients_output_is_read_like_fios_own():
    """fio as the client of a server reports each job under client_stats, with the sum of all clients beside
    them: the jobs are judged, the sum is not counted twice."""
    (job,) = job_json()["jobs"]
    obj = {"fio version": "fio-3.33", "client_stats": [{**job, "hostname": "/run/x.sock", "port": 0},
                                                        {**job, "jobname": "All clients"}]}
    r = parse_result(obj)
    assert r.total_ios == 1000 and r.iops == 500 and len(r.raw["jobs"]) == 1 and "client_stats" not in r.raw
    with pytest.raises(FioFailed, match="no job"):
        parse_result({"client_stats": [{**job, "jobname": "All clients"}]})
    with pytest.raises(FioFailed):
        parse_result({"client_stats": "junk"})


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


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
                     lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids, max_size=3),
                     max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(_json)
def test_random_fio_json_is_a_result_or_fio_failed(obj):
    with contextlib.suppress(FioFailed):
        parse_result(obj)


def _paths(obj, prefix=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield (*prefix, k)
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield (*prefix, i)
            yield from _paths(v, (*prefix, i))


_BASE = job_json(1000, 500)


_PATHS = list(_paths(_BASE))


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_PATHS), st.one_of(st.just("drop"), _json)), min_size=1, max_size=4))
def test_mutated_fio_json_is_a_result_or_fio_failed(mutations):
    obj = copy.deepcopy(_BASE)
    for path, value in mutations:
        parent = obj
        try:
            for key in path[:-1]:
                parent = parent[key]
            if value == "drop":
                del parent[path[-1]]
            else:
                parent[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    try:
        r = parse_result(obj)
    except FioFailed:
        return
    assert r.total_ios > 0 and r.iops >= 0 and r.mb_s >= 0 and r.runtime_s >= 0


def test_dies_with_us_names_the_signal():
    assert dies_with_us(["x"], "TERM")[1:4] == ["--pdeathsig", "TERM", "--"]
    assert json.dumps(dies_with_us(["x"])).count("KILL") == 1


REFUSED = {"jobs": [{"jobname": "randread", "error": 13}]}


def test_fio_refused_its_target_asks_for_root(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 65534)
    with pytest.raises(FioRefused) as e:
        parse_result(REFUSED)
    assert str(e.value) == "fio was refused access to its target (permission denied): run as root"


def test_fio_refused_as_root_keeps_fios_error():
    if os.geteuid() != 0:
        pytest.skip("the root branch")
    with pytest.raises(FioFailed) as e:
        parse_result(REFUSED)
    assert not isinstance(e.value, FioRefused) and "error 13" in str(e.value)


def test_the_job_file_never_goes_through_a_link_another_user_planted(others_dir, tmp_path):
    need(shutil.which("fio") is not None, "needs fio on PATH")
    victim = make_victim(tmp_path)
    before = digest(victim)
    jf = parse_job_file("[r]\nrw=randread\nbs=4k\n", "r.fio")
    plant(others_dir / "job.fio", victim)
    with pytest.raises(BadInput, match=r"job\.fio is a symlink, not a regular file"):
        command(jf, Target("loop9", "/dev/loop9", "device"), str(others_dir), runtime=2)
    assert digest(victim) == before and temporaries(others_dir) == []


def test_fios_output_is_read_within_its_bounds(monkeypatch, tmp_path):
    """What fio prints is outside input too (a fleet's client prints what a host's fio server sends): a report past
    its bound ends the run with that reason; stderr of any length is read to its end and only its start kept."""
    from iosched.core.load import fio

    monkeypatch.setattr(fio, "MAX_REPORT", 1 << 16)
    endless = fio.FioRun(["sh", "-c", "echo '{'; yes '  \"x\": 1,'; echo '}'"])
    with pytest.raises(FioFailed, match=r"fio wrote a report larger than .*\(the bound on a report\)"):
        endless.run(timeout=30)
    report = json.dumps(job_json(), indent=1)
    script = tmp_path / "fio.sh"
    script.write_text(f"head -c 50000000 /dev/zero | tr '\\\\0' x >&2\ncat <<'EOF'\n{report}\nEOF\n")
    loud = fio.FioRun(["sh", str(script)])
    assert loud.run(timeout=30).total_ios == 1000
    assert len(loud.stderr_text) == fio.MAX_STDERR_KEPT
