"""The cgroups iosched makes for a cgroup job, on fixture trees: refusals that change nothing, the registration
written before anything is made, stale sets removed by restore, and a child that joins its group before it runs.
(The kernel's side, weight files and real groups, is in tests/real/test_cgroups_real.py.)"""

import json
import os
import subprocess
from pathlib import Path

import pytest
from link_support import plant

from iosched.core.settings import cgroups
from iosched.core.settings.cgroups import CgroupsUnavailable, clean_stale_cgroups, joined, make_cgroups, probe_weights

from conftest import run_cli

HYBRID = "38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio\n"
V2 = "22 1 0:21 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n"
DEAD = 999_999_999


def registry() -> Path:
    return Path(os.environ["IOSCHED_RUN_DIR"]) / "cgroups"


def everything(tree) -> list[str]:
    return sorted(str(p.relative_to(tree.root)) for p in (tree.root / "sys/fs/cgroup").rglob("*"))


def test_a_child_joins_its_group_itself_then_runs_as_the_same_process(tmp_path):
    odd = tmp_path / 'a "b" $HOME; c'  # the path is an argument, never part of the script
    odd.mkdir()
    procs = odd / "cgroup.procs"
    procs.write_text("")
    p = subprocess.run(joined(procs, ["/bin/sh", "-c", "echo $$"]), capture_output=True, text=True, timeout=10)
    assert p.returncode == 0, p.stderr
    assert procs.read_text().strip() == p.stdout.strip()  # the pid that joined is the program's own


def test_a_child_that_cannot_join_never_runs(tmp_path):
    marker = tmp_path / "ran"
    p = subprocess.run(joined(tmp_path / "no/such/cgroup.procs", ["touch", str(marker)]), capture_output=True,
                       text=True, timeout=10)
    assert p.returncode == 111 and "could not join the cgroup" in p.stderr
    assert not marker.exists()


def test_no_io_controller_is_refused_with_nothing_made(tree):
    tree.write("proc/self/mountinfo", V2)
    tree.write("sys/fs/cgroup/cgroup.controllers", "cpu memory\n")
    before = everything(tree)
    for attempt in (lambda: make_cgroups([("w100", 100), ("w500", 500)], tree.root), lambda: probe_weights(tree.root)):
        with pytest.raises(CgroupsUnavailable, match="io controller"):
            attempt()
    assert everything(tree) == before and not list(registry().glob("*"))


def test_missing_bfq_weights_are_refused_and_what_was_made_goes(tree, monkeypatch):
    tree.write("proc/self/mountinfo", HYBRID)
    (tree.root / "sys/fs/cgroup/blkio").mkdir(parents=True)
    registered_first = []
    mkdir = Path.mkdir

    def watched(self, *args, **kwargs):
        if "sys/fs/cgroup" in str(self):
            registered_first.append(any(registry().glob("*.json")))
        return mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", watched)
    with pytest.raises(CgroupsUnavailable, match=r"bfq's cgroup weights \(blkio.bfq.weight\) are missing"):
        make_cgroups([("w100", 100), ("w500", 500)], tree.root)
    # Made: iosched/ and the two groups, each after the registration was on disk; all gone again.
    assert registered_first == [True, True, True]
    assert everything(tree) == ["sys/fs/cgroup/blkio"] and not list(registry().glob("*"))


def test_role_names_that_could_leave_the_hierarchy_are_refused(tree):
    for role in ("..", "a/b", ""):
        with pytest.raises(cgroups.BadInput, match="cannot name a cgroup"):
            make_cgroups([(role, 100)], tree.root)
    with pytest.raises(cgroups.BadInput, match="from 1 to 1000"):
        make_cgroups([("w", 0)], tree.root)


def stale_set(tree, pid: int, names=("w100", "w500"), base="sys/fs/cgroup/blkio/iosched") -> tuple[Path, list[Path]]:
    groups = [tree.root / base / f"{pid}-1-{n}" for n in names]
    for g in groups:
        g.mkdir(parents=True)
    registry().mkdir(parents=True, exist_ok=True)
    reg = registry() / f"{pid}-1.json"
    reg.write_text(json.dumps({"pid": pid, "base": str(tree.root / base), "groups": [str(g) for g in groups]}))
    return reg, groups


def test_a_killed_runs_groups_are_removed_by_restore(tree):
    tree.write("proc/self/mountinfo", HYBRID)
    reg, groups = stale_set(tree, DEAD)
    assert clean_stale_cgroups(tree.root, dry_run=True) == [(str(g), None) for g in groups]
    assert all(g.is_dir() for g in groups) and reg.exists()
    r = run_cli("--root", str(tree.root), "restore")
    assert r.returncode == 0, r.stderr
    assert all(f"removed a cgroup a killed run left: {g}" in r.stdout for g in groups)
    assert everything(tree) == ["sys/fs/cgroup/blkio"] and not reg.exists()


def test_a_live_owners_groups_are_left(tree):
    tree.write("proc/self/mountinfo", HYBRID)
    reg, groups = stale_set(tree, os.getpid())
    assert clean_stale_cgroups(tree.root) == []
    assert all(g.is_dir() for g in groups) and reg.exists()


def test_a_group_that_will_not_go_keeps_its_registration(tree):
    tree.write("proc/self/mountinfo", HYBRID)
    reg, (w100, w500) = stale_set(tree, DEAD)
    (w500 / "still-here").write_text("")  # a plain directory stands in for a cgroup that holds a process
    out = dict(clean_stale_cgroups(tree.root))
    assert out[str(w100)] is None and out[str(w500)] and not w100.exists() and reg.exists()
    r = run_cli("--root", str(tree.root), "restore")
    assert r.returncode == 1 and f"could not remove a cgroup a killed run left: {w500}" in r.stdout


@pytest.mark.parametrize("where", ["not a cgroup mount", "wrong name", "another pid"])
def test_a_registration_naming_anything_else_removes_nothing(tree, where):
    tree.write("proc/self/mountinfo", HYBRID)
    base = {"not a cgroup mount": "var/tmp/iosched", "wrong name": "sys/fs/cgroup/blkio/other"}
    reg, groups = stale_set(tree, DEAD, base=base.get(where, "sys/fs/cgroup/blkio/iosched"))
    if where == "another pid":
        reg.write_text(reg.read_text().replace(f'"pid": {DEAD}', f'"pid": {DEAD - 1}'))
    assert clean_stale_cgroups(tree.root) == []
    assert all(g.is_dir() for g in groups) and not reg.exists()


def test_a_registration_never_goes_through_a_link_another_user_planted(tree, tmp_path, others_dir, monkeypatch):
    tree.write("proc/self/mountinfo", HYBRID)
    (tree.root / "sys/fs/cgroup/blkio").mkdir(parents=True)
    run = others_dir / "run"  # a run folder others may write, as a careless setup might leave it
    run.mkdir()
    run.chmod(0o777)
    monkeypatch.setenv("IOSCHED_RUN_DIR", str(run))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    plant(run / "cgroups", elsewhere)
    with pytest.raises(cgroups.BadInput, match="reached through the link cgroups"):
        make_cgroups([("w100", 100), ("w500", 500)], tree.root)
    assert list(elsewhere.iterdir()) == [] and everything(tree) == ["sys/fs/cgroup/blkio"]  # nothing made
