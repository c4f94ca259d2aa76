"""Who a command line runs as: one rule for `capture --cmd`, `compare --cmd` and `advise --cmd` (core/load/cmd_tree.py
``invoking_user``), on a real loop device. Under sudo, the user who ran sudo; root itself, root; a SUDO_UID that
names no user, refused in one sentence before anything runs (it ran `capture --cmd` as root, silently, and
`compare --cmd` and `advise --cmd` ran as root under sudo while `capture --cmd` ran as the user)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import need_real

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


NOBODY = 65534


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder the command may write whoever it runs as (it leaves a file there, whose owner says who it was)."""
    d = Path(tempfile.mkdtemp(prefix="iosched-cmduser-", dir="/tmp"))
    d.chmod(0o1777)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _env(**sudo: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}, **sudo}


def _argv(kind: str, device: str, cmd: str, out: Path) -> list[str]:
    if kind == "capture":
        return ["capture", "--cmd", f"{cmd}; cat /proc/self/stat > /dev/null", "-o", str(out / "c.iolog")]
    if kind == "compare":
        return ["compare", device, "--schedulers", "none,mq-deadline", "--cmd", cmd, "--repeat", "1", "--settle", "0"]
    return ["advise", device, "--cmd", cmd, "--goal", "throughput", "--candidates", "mq-deadline", "--settle", "0",
            "--budget", "900", "--yes"]


def _run(kind: str, device: str, cmd: str, out: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "iosched.cli", *_argv(kind, device, cmd, out)], capture_output=True,
                          text=True, timeout=240, env=env)


KINDS = ["capture", "compare", "advise"]


@pytest.mark.parametrize("kind", KINDS)
def test_under_sudo_every_command_runs_as_the_user_who_ran_sudo(kind, loopdev, private_journal, shared):
    need_real("setpriv")
    marker = shared / f"{kind}-ran"
    r = _run(kind, loopdev.name, f"touch {marker}", shared,
             _env(SUDO_UID=str(NOBODY), SUDO_GID=str(NOBODY), SUDO_USER="nobody"))
    assert marker.exists(), r.stderr
    assert (marker.stat().st_uid, marker.stat().st_gid) == (NOBODY, NOBODY), (kind, r.stderr)


@pytest.mark.parametrize("kind", KINDS)
def test_root_itself_runs_its_commands_as_root(kind, loopdev, private_journal, shared):
    need_real("setpriv")
    marker = shared / f"{kind}-ran"
    _run(kind, loopdev.name, f"touch {marker}", shared, _env())
    assert marker.exists() and marker.stat().st_uid == 0


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("uid", ["-1", "4294967295", "１０００", "1000 "])
def test_a_sudo_uid_that_names_no_user_is_refused_before_anything_runs(kind, uid, loopdev, private_journal, shared):
    need_real("setpriv")
    before = loopdev.current()
    marker = shared / "ran"
    r = _run(kind, loopdev.name, f"touch {marker}", shared, _env(SUDO_UID=uid, SUDO_GID="1000"))
    assert r.returncode == 2, (kind, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert lines[-1].startswith("iosched: SUDO_UID is ") and "which is no user or group id" in lines[-1], r.stderr
    assert "Traceback" not in r.stderr and not marker.exists() and loopdev.current() == before
    assert "[3/5 test]" not in r.stderr
