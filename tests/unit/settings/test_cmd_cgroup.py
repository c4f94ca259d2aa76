"""A command run's cgroup, on fixture trees: where one is made (only where it shares iosched's accounting), its
registration, and what `restore` does with a dead run's (the kernel's side is tests/real/test_commands_real.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from iosched.core.settings.cmd_cgroup import (
    clean_stale_cmd_cgroups,
    close_cmd_cgroup,
    kept_cmd_cgroups,
    open_cmd_cgroup,
    own_cgroup,
)

HYBRID = ("38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio\n"
          "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n")
V2 = "22 1 0:21 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n"


def registry() -> Path:
    return Path(os.environ["IOSCHED_RUN_DIR"]) / "cmdgroups"


def dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


@pytest.mark.parametrize(("mounts", "cgroup", "handed", "where"), [
    (HYBRID, "/", "", "sys/fs/cgroup/unified"),  # a hybrid system's cgroup2 root hands nothing down
    (V2, "/user.slice/session-3.scope", "", "sys/fs/cgroup/user.slice/session-3.scope"),
    (V2, "/", "cpu io memory", None),  # a group of its own would be a bfq group of its own
    (V2, "/../../etc", "", None),
    ("", "/", "", None),  # no cgroup2
])
def test_a_group_is_made_only_where_it_shares_iosched_accounting(tree, mounts, cgroup, handed, where):
    tree.write("proc/self/mountinfo", mounts)
    tree.write("proc/self/cgroup", f"1:blkio:/\n0::{cgroup}\n")
    for d in ("sys/fs/cgroup/unified", "sys/fs/cgroup", "sys/fs/cgroup/user.slice/session-3.scope"):
        tree.write(f"{d}/cgroup.subtree_control", handed + "\n")
    assert own_cgroup(tree.root) == (tree.root / where if where else None)
    made = open_cmd_cgroup(tree.root)
    if where is None:
        assert made is None and not registry().exists()
        return
    assert made is not None and made.path.parent == tree.root / where and made.path.is_dir()
    reg = json.loads(made.registration.read_text())
    assert reg["pid"] == os.getpid() and isinstance(reg["start"], int) and reg["group"] == str(made.path)
    assert [k.line() for k in kept_cmd_cgroups(tree.root)] == [
        f"left alone: a command's cgroup {made.path}: its owner, pid {os.getpid()}, is still running"]
    assert close_cmd_cgroup(made, tree.root) is None  # an empty group: removed, with its registration
    assert not made.path.exists() and not made.registration.exists()


def test_restore_removes_a_dead_runs_group_and_nothing_a_registration_merely_names(tree):
    tree.write("proc/self/mountinfo", HYBRID)
    dead = dead_pid()
    base = tree.root / "sys/fs/cgroup/unified"
    ours = base / f"iosched-cmd-{dead}-1"
    other_pid = base / f"iosched-cmd-{dead + 1}-1"
    outside = tree.root / f"var/iosched-cmd-{dead}-2"
    for d in (ours, other_pid, outside):
        d.mkdir(parents=True)
    registry().mkdir(parents=True)
    for n, group in enumerate((ours, other_pid, outside)):
        (registry() / f"{dead}-{n}.json").write_text(json.dumps({"pid": dead, "group": str(group)}))
    assert clean_stale_cmd_cgroups(tree.root, dry_run=True) == [(str(ours), None)] and ours.is_dir()
    assert clean_stale_cmd_cgroups(tree.root) == [(str(ours), None)]
    assert not ours.exists() and other_pid.is_dir() and outside.is_dir()
    assert list(registry().iterdir()) == []  # the one undone, the others dropped, nothing removed for them

