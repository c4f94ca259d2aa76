"""The cgroup job on a real loop device: each role's fio in its own cgroup at its weight, the groups removed after
the run, and after a SIGKILL of iosched left for the next `iosched restore`, which removes them."""

import json
import time
from pathlib import Path

import pytest
from fio_support import fio_procs, no_fio_left, start_cli
from schema_support import valid

from iosched.core.base.errors import IoschedError
from iosched.core.kernel.cgroupfs import IoHierarchy, io_hierarchy, parse_weight
from iosched.core.settings.cgroups import probe_weights

from conftest import need, need_real, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def hierarchy() -> IoHierarchy:
    need_real("fio", "setpriv")
    try:
        probe_weights()
    except IoschedError as e:
        need(False, f"needs cgroups with bfq weights: {e}")
    return io_hierarchy()


def groups_of(h: IoHierarchy, pid: int) -> list[Path]:
    return sorted(h.base.glob(f"{pid}-*")) if h.base.is_dir() else []


def wait_for_groups(h: IoHierarchy, p, n: int = 2, timeout: float = 30) -> tuple[list[Path], list[int]]:
    """The groups of iosched ``p`` once a fio runs in each."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        groups = groups_of(h, p.pid)
        members = [(g / "cgroup.procs").read_text().split() if g.is_dir() else [] for g in groups]
        if len(groups) == n and all(members):
            return groups, [int(m) for ms in members for m in ms]
        if p.poll() is not None:
            pytest.fail(f"iosched ended before its fio ran: {p.communicate()}")
        time.sleep(0.05)
    pytest.fail("no fio ran in the cgroups")


def test_each_role_runs_in_its_group_and_the_groups_go_after_the_run(loopdev):
    h = hierarchy()
    p = start_cli("compare", loopdev.name, "--schedulers", "bfq,none", "--job", "cgroup-weights", "--runtime", "2",
                  "--repeat", "1", "--settle", "0", "--json")
    groups, members = wait_for_groups(h, p)
    assert [g.name.rsplit("-", 1)[1] for g in groups] == ["w100", "w500"]
    assert [parse_weight((g / h.weight_file).read_text()) for g in groups] == [100, 500]
    # One fio per group, each the process iosched started (the pid that joined is fio's own).
    assert len(members) == 2 and sorted(members) == sorted(fio_procs(f"iosched-fio-{p.pid}-"))
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    doc = json.loads(out)
    assert doc["primary_metric"] == "w500:share" and doc["workload"]["job"]["cgroup_weights"] == {"w100": 100,
                                                                                                 "w500": 500}
    for run in doc["runs"]:
        m = run["metrics"]
        assert run["valid"] and m["w100:iops"] > 0 and m["w500:iops"] > 0
        assert m["w100:share"] + m["w500:share"] == pytest.approx(1.0)
        assert sorted(j["jobname"] for j in run["fio"]["jobs"]) == ["w100", "w500"]  # the two outputs merged
    valid("experiment.schema.json", doc)
    assert groups_of(h, p.pid) == [] and not any(g.exists() for g in groups)
    no_fio_left(f"iosched-fio-{p.pid}-")


def test_sigkill_leaves_the_groups_and_restore_removes_them(loopdev, private_journal):
    h = hierarchy()
    p = start_cli("compare", loopdev.name, "--schedulers", "bfq,none", "--job", "cgroup-weights", "--runtime", "3",
                  "--repeat", "1", "--settle", "0")
    groups, _members = wait_for_groups(h, p)
    assert loopdev.current() == "bfq"
    p.kill()
    p.communicate(timeout=10)
    no_fio_left(f"iosched-fio-{p.pid}-")  # the death signal took both fio along
    assert all(g.is_dir() for g in groups) and list((private_journal / "cgroups").glob("*.json"))
    r = run_cli("restore")
    assert r.returncode == 0, r.stderr
    for g in groups:
        assert f"removed a cgroup a killed run left: {g}" in r.stdout
        assert not g.exists()
    assert not list((private_journal / "cgroups").glob("*.json"))
    assert loopdev.current() == loopdev.initial_scheduler  # the switch it made is put back too
    again = run_cli("restore")
    assert again.returncode == 0 and "cgroup" not in again.stdout
