"""A cgroup job (roles at different bfq weights) as one fio process per role: the catalog job, each role's command
and target, the members' progress and results merged, a failing member ending the others, and the refusal where
the system cannot make the cgroups (fixture trees; real runs in tests/real/test_cgroups_real.py)."""

import shutil
import threading

import pytest

from iosched.core.load import fio_group
from iosched.core.load.fio import FioProgress, command
from iosched.core.load.fio_group import FioGroup, check_cgroup_jobs, combined, role_target, run_fio
from iosched.core.load.fio_result import FioFailed, parse_result
from iosched.core.load.jobs import CATALOG, GROUPS, space_needed
from iosched.core.load.targets import Target
from iosched.core.settings.cgroups import CgroupsUnavailable

from conftest import need

NO_IO = "22 1 0:21 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n"


def test_the_cgroup_job_in_the_catalog():
    job = CATALOG["cgroup-weights"]
    assert "cgroup-weights" in GROUPS["contention"].jobs and not job.writes
    assert job.cgroup_weights == (("w100", 100), ("w500", 500)) and job.role_names == ["w100", "w500"]
    assert job.primary == "w500:share" and job.shows and job.to_json()["cgroup_weights"] == {"w100": 100, "w500": 500}
    assert space_needed([job]) == 2 * job.size  # on a scratch file each role reads a file of its own
    assert not any(j.cgroup_weights for n, j in CATALOG.items() if n != "cgroup-weights")


def test_each_role_runs_alone_on_its_own_file(tmp_path):
    need(shutil.which("fio") is not None, "needs fio on PATH (the command names it)")
    job = CATALOG["cgroup-weights"].scaled(runtime=2)
    alone = job.role_alone("w500")
    assert alone.role_names == ["w500"] and not alone.cgroup_weights
    dev = Target("loop9", "/dev/loop9", "device")
    argv = command(alone, role_target(dev, "w500"), str(tmp_path))
    text = (tmp_path / "job.fio").read_text()
    assert "--readonly" in argv and "[w500]" in text and "[w100]" not in text and "filename=/dev/loop9" in text
    scratch = Target("sda", str(tmp_path / "iosched-scratch-x/iosched.dat"), "file", str(tmp_path))
    paths = {role_target(scratch, r).path for r in ("w100", "w500")}
    assert paths == {str(tmp_path / "iosched-scratch-x/iosched-w100.dat"),
                     str(tmp_path / "iosched-scratch-x/iosched-w500.dat")}
    assert role_target(dev, "w100") is dev


def test_progress_of_the_roles_is_combined():
    p = combined({"w100": FioProgress(2.0, 100.0, 100.0, 0.0, 0.4, 300.0),
                  "w500": FioProgress(2.1, 400.0, 400.0, 0.0, 1.6, 100.0)})
    assert (p.elapsed, p.iops, p.read_iops, p.mb_s) == (2.1, 500.0, 500.0, 2.0)
    assert p.clat_mean_us == pytest.approx(140.0)  # IO-weighted
    assert p.roles["w100"].iops == 100.0 and p.roles["w500"].clat_mean_us == 100.0


def entry(role: str, ios: int) -> dict:
    side = {"iops": ios / 2.0, "bw_bytes": ios * 2048, "total_ios": ios, "io_bytes": ios * 4096,
            "clat_ns": {"mean": 50_000.0, "percentile": {"50.000000": 40_000, "99.000000": 90_000,
                                                         "99.900000": 200_000}}}
    none = {"iops": 0.0, "bw_bytes": 0, "total_ios": 0, "io_bytes": 0}
    return {"jobname": role, "error": 0, "job_runtime": 2000, "read": side, "write": none, "trim": {"total_ios": 0}}


class FakeRun:
    """A member standing in for a FioRun: its result, or an error after the others have started."""

    def __init__(self, role: str, ios: int = 0, error: Exception | None = None) -> None:
        self.role, self.ios, self.error = role, ios, error
        self.on_progress = None
        self.killed = threading.Event()

    def run(self, timeout=None):
        if self.error is not None:
            raise self.error
        self.on_progress(FioProgress(1.0, self.ios / 2.0, self.ios / 2.0, 0.0, 1.0, 50.0))
        if self.ios == 0:  # runs until killed
            assert self.killed.wait(10)
            raise FioFailed("fio was killed by SIGTERM before the end of its run")
        return parse_result({"fio version": "fio-3.33", "jobs": [entry(self.role, self.ios)]})

    def kill(self, wait=True):
        self.killed.set()

    def stop(self):
        self.killed.set()

    def finish(self):
        self.killed.set()


def test_the_members_results_merge_into_one_per_role():
    heard = []
    group = FioGroup([("w100", FakeRun("w100", 1000)), ("w500", FakeRun("w500", 3000))], heard.append)
    r = group.run()
    m = r.metrics()
    assert m["w100:iops"] == 500 and m["w500:iops"] == 1500 and m["w500:share"] == 0.75 and r.iops == 2000
    assert [j["jobname"] for j in r.raw["jobs"]] == ["w100", "w500"] and r.raw["fio version"] == "fio-3.33"
    assert len(heard) == 1  # one report each, passed on only for the first role: one thread speaks


def test_a_member_that_fails_ends_the_others_and_its_error_is_the_answer():
    slow = FakeRun("w100")
    group = FioGroup([("w100", slow), ("w500", FakeRun("w500", error=FioFailed("fio reported w500: error 5")))])
    with pytest.raises(FioFailed, match="error 5"):
        group.run()
    assert slow.killed.is_set()


def test_no_cgroups_here_refuses_before_any_fio_starts(tree, monkeypatch):
    tree.write("proc/self/mountinfo", NO_IO)
    tree.write("sys/fs/cgroup/cgroup.controllers", "cpu memory\n")
    monkeypatch.setattr(fio_group, "FioRun", lambda *a, **k: pytest.fail("fio was started"))
    job = CATALOG["cgroup-weights"].scaled(runtime=2)
    with pytest.raises(CgroupsUnavailable, match=r"^cgroup-weights runs its roles in cgroups of different bfq "
                                                 r"weights, which this system cannot make: neither .*; nothing was "
                                                 r"changed$"):
        run_fio(job, Target("sda", "/dev/sda", "device"), root=tree.root)
    with pytest.raises(CgroupsUnavailable, match="leave it out and the rest can run"):
        check_cgroup_jobs([CATALOG[n] for n in GROUPS["contention"].jobs], tree.root)
    check_cgroup_jobs([CATALOG["fair-share"]], tree.root)  # no cgroup job: nothing to see
