"""Leftovers named by their owner's pid and start time: a pid now another process's (a SIGKILLed run's pid given to
a long-lived process) frees what the run left, and `restore` removes it and says so; a live owner's leftovers are
named with why they stay; registrations that name a pid alone are read as before."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iosched.core.fleet.fleet_host import clean_stale_sessions, kept_sessions
from iosched.core.kernel.processes import parse_session, parse_start, process_start
from iosched.core.load.workdirs import clean_stale_workdirs, workdir_prefix
from iosched.core.settings.owners import Owner

from conftest import run_cli

HYBRID = "38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio\n"


@pytest.fixture
def stranger() -> Iterator[subprocess.Popen[bytes]]:
    """A long-lived process: what a dead run's pid may have become."""
    p = subprocess.Popen(["sleep", "120"])
    try:
        yield p
    finally:
        p.kill()
        p.wait()


def test_the_start_time_is_field_22_whatever_the_command_name_holds():
    fields = " ".join(str(n) for n in range(3, 53))  # field 3 (state) onwards: field 22 reads "22"
    assert parse_start(f"4242 (a) b (c) {fields}") == 22 and parse_session(f"4242 (a) b (c) {fields}") == 6
    assert parse_start("4242 (x)") is None and parse_start("junk") is None and parse_start("1 (x) " + "z " * 30) is None
    me = process_start(os.getpid())
    assert me is not None and me == Owner.me().start and process_start(1 << 30) is None


@given(st.text(max_size=200))
def test_any_owner_text_is_an_owner_or_none(text):
    owner = Owner.parse(text)
    assert owner is None or (owner.pid > 0 and Owner.parse(owner.text()) == owner)


def test_an_owner_is_gone_when_its_pid_is_free_or_another_process_has_it(stranger):
    start = process_start(stranger.pid)
    assert start is not None
    assert Owner(stranger.pid, start).alive() == f"its owner, pid {stranger.pid}, is still running"
    assert Owner(stranger.pid, start + 1).alive() is None  # the pid was given to another process
    assert "may be its owner" in (Owner(stranger.pid).alive() or "")  # an old registration: as before
    done = subprocess.Popen(["true"])
    done.wait()
    assert Owner(done.pid, start).alive() is None and Owner(done.pid).alive() is None
    assert Owner.of({"pid": 0}) is None and Owner.of({"pid": "7"}) is None and Owner.of({"pid": True}) is None
    assert Owner.of({"pid": 7, "start": "x"}) == Owner(7)  # a start that is no number: read as an old one


def leftovers(tree, tmp_path: Path, owner: dict[str, int], tag: str) -> dict[str, Path]:
    """What a run of ``owner`` left: a scratch folder, a cgroup set (fixture tree), a fio work directory."""
    run_dir = Path(os.environ["IOSCHED_RUN_DIR"])
    scratch = tmp_path / f"iosched-scratch-{tag}"
    (scratch / "iosched.dat").parent.mkdir()
    (scratch / "iosched.dat").write_bytes(b"\0" * 4096)
    (run_dir / "scratch").mkdir(parents=True, exist_ok=True)
    (run_dir / "scratch" / f"{tag}.json").write_text(json.dumps({"dir": str(scratch), **owner, "device": "sda"}))
    base = tree.root / "sys/fs/cgroup/blkio/iosched"
    group = base / f"{owner['pid']}-1-{tag}"
    group.mkdir(parents=True)
    (run_dir / "cgroups").mkdir(parents=True, exist_ok=True)
    (run_dir / "cgroups" / f"{tag}.json").write_text(json.dumps({**owner, "base": str(base), "groups": [str(group)]}))
    start = f"{owner['start']}-" if "start" in owner else ""
    work = tmp_path / "tmp" / f"iosched-fio-{owner['pid']}-{start}{tag}"
    work.mkdir(parents=True)
    (work / "job.fio").write_text("[j]\n")
    return {"scratch": scratch, "cgroup": group, "work": work}


def test_restore_removes_what_a_reused_pid_left_and_names_what_a_live_owner_keeps(tree, tmp_path, stranger):
    tree.write("proc/self/mountinfo", HYBRID)
    start = process_start(stranger.pid)
    assert start is not None
    env = {"TMPDIR": str(tmp_path / "tmp")}
    # The run's pid now names the stranger, which started at another time: all it left goes, each said.
    left = leftovers(tree, tmp_path, {"pid": stranger.pid, "start": start - 1}, "dead")
    r = run_cli("--root", str(tree.root), "restore", env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"removed scratch files a crashed run left: {left['scratch']}",
                                     f"removed a fio work directory a killed run left: {left['work']}",
                                     f"removed a cgroup a killed run left: {left['cgroup']}"], r.stdout
    assert not any(p.exists() for p in left.values())
    # The owner alive (its start time is the stranger's), or an old registration naming the pid alone: each kept,
    # named with why, nothing removed.
    alive = leftovers(tree, tmp_path, {"pid": stranger.pid, "start": start}, "live")
    old = leftovers(tree, tmp_path, {"pid": stranger.pid}, "old")
    r = run_cli("--root", str(tree.root), "restore", env=env)
    assert r.returncode == 0, r.stderr
    assert f"left alone: scratch files {alive['scratch']}: its owner, pid {stranger.pid}, is still running" in r.stdout
    assert f"left alone: a cgroup {alive['cgroup']}: its owner, pid {stranger.pid}" in r.stdout
    assert (f"left alone: scratch files {old['scratch']}: pid {stranger.pid} is running, and this registration (from "
            "an older iosched) does not say when its owner started, so it may be its owner") in r.stdout
    assert len(r.stdout.splitlines()) == 4 and "removed" not in r.stdout and "nothing to restore" not in r.stdout
    assert all(p.exists() for p in (*alive.values(), *old.values()))


def test_a_work_directory_and_a_session_folder_name_their_owner_with_its_start(tmp_path, stranger):
    me = Owner.me()
    assert workdir_prefix() == f"iosched-fio-{me.pid}-{me.start}-"
    start = process_start(stranger.pid)
    assert start is not None
    reused = tmp_path / f"iosched-fio-{stranger.pid}-{start + 1}-abc"
    reused.mkdir()
    assert clean_stale_workdirs(tmp=tmp_path) == [str(reused)]

    def session(name: str, owner: str) -> Path:
        d = tmp_path / "fleet" / name
        d.mkdir(parents=True)
        (d / "owner").write_text(owner)
        return d

    gone = session("a" * 16, f"{stranger.pid} {start + 1}\n")
    live = session("b" * 16, f"{stranger.pid} {start}\n")
    assert clean_stale_sessions(base=tmp_path / "fleet") == [str(gone)] and live.is_dir()
    assert [k.line() for k in kept_sessions(tmp_path / "fleet")] == [
        f"left alone: a fleet session's folder {live}: its owner, pid {stranger.pid}, is still running"]
