"""fio work directories: only stale ones of ours are removed."""

from __future__ import annotations

import os
import subprocess

from iosched.core.load.workdirs import clean_stale_workdirs


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_only_stale_directories_of_ours_are_removed(tmp_path):
    dead = _dead_pid()
    stale = tmp_path / f"iosched-fio-{dead}-abc"
    stale.mkdir()
    live = tmp_path / f"iosched-fio-{os.getpid()}-abc"
    live.mkdir()
    busy = tmp_path / f"iosched-fio-{dead}-xyz"
    busy.mkdir()
    (busy / "other").write_text("not ours")
    fresh_old = tmp_path / "iosched-fio-oldstyle"
    fresh_old.mkdir()
    assert clean_stale_workdirs(dry_run=True, tmp=tmp_path) == [str(stale)] and stale.exists()
    assert clean_stale_workdirs(tmp=tmp_path) == [str(stale)]
    assert not stale.exists() and live.exists() and busy.exists() and fresh_old.exists()
