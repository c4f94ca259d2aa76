"""A command's run as its user, held at a gate: who it runs as under sudo, the argv that gets it there (every value
an argument), its environment, and its exit status as a shell says it; the gate itself, run for real."""

from __future__ import annotations

import os
import select
import subprocess
from pathlib import Path

import pytest

from iosched.core.base.errors import BadInput
from iosched.core.load.cmd_tree import (
    GATED,
    MAX_CMD,
    NOT_STARTED,
    UNGATED,
    RunAs,
    check_cmd,
    command_argv,
    exit_status,
    invoking_user,
    io_bytes,
    user_env,
)


def passwd(uid: int) -> tuple[str, str] | None:
    return {1000: ("alice", "/home/alice")}.get(uid)


@pytest.mark.parametrize(("env", "euid", "want"), [
    ({"SUDO_UID": "1000", "SUDO_GID": "1001"}, 0, RunAs(1000, 1001, "alice", "/home/alice")),
    ({"SUDO_UID": "1000"}, 0, RunAs(1000, 1000, "alice", "/home/alice")),  # no gid: the uid's number
    ({"SUDO_UID": "2000", "SUDO_GID": "2000"}, 0, RunAs(2000, 2000, None, None)),  # no passwd entry
    ({"SUDO_UID": "0", "SUDO_GID": "0"}, 0, None),  # sudo from root: root it is
    ({"SUDO_UID": "1000"}, 1000, None),  # not root: the command runs as iosched does
    ({}, 0, None),
    ({"SUDO_UID": "-1"}, 1000, None),  # not root: sudo's words do not matter
])
def test_the_invoking_user_is_sudos_unless_that_is_root(env, euid, want):
    assert invoking_user(env, euid, passwd) == want


@pytest.mark.parametrize("env", [
    {"SUDO_UID": "-1"}, {"SUDO_UID": "1000 "}, {"SUDO_UID": " 1000"}, {"SUDO_UID": "٣"}, {"SUDO_UID": "１０００"},
    {"SUDO_UID": "4294967295"}, {"SUDO_UID": "9" * 40}, {"SUDO_UID": ""}, {"SUDO_UID": "1e3"},
    {"SUDO_UID": "1000", "SUDO_GID": "x"}, {"SUDO_UID": "1000", "SUDO_GID": "4294967295"},
])
def test_a_sudo_id_that_names_no_user_is_refused_never_root(env):
    """A malformed SUDO_UID ran `capture --cmd` as root, silently: iosched does not guess who a command runs as."""
    with pytest.raises(BadInput, match=r"SUDO_[UG]ID is .*, which is no user or group id"):
        invoking_user(env, 0, passwd)


def test_the_argv_joins_the_cgroup_then_becomes_the_user_and_keeps_every_value_an_argument():
    cmd = 'python3 -c "import json"; echo $HOME; rm -rf "$1"'
    argv = command_argv(cmd, Path("/sys/fs/cgroup/x/cgroup.procs"), RunAs(1000, 1001, "alice", "/home/alice"),
                        setpriv="/usr/bin/setpriv")
    assert argv[:2] == ["/bin/sh", "-c"] and argv[4] == "/sys/fs/cgroup/x/cgroup.procs"
    become = argv[5:argv.index("--") + 1]
    assert become == ["/usr/bin/setpriv", "--reuid=1000", "--regid=1001", "--init-groups", "--pdeathsig", "TERM", "--"]
    assert argv[-5:] == ["/bin/sh", "-c", GATED, "iosched-cmd", cmd]  # the command line is one argument
    nameless = command_argv("true", Path("/p"), RunAs(2000, 2000))
    assert "--clear-groups" in nameless and "--init-groups" not in nameless
    as_root = command_argv("true", Path("/p"), None)
    assert "setpriv" not in " ".join(as_root) and as_root[5:] == ["/bin/sh", "-c", GATED, "iosched-cmd", "true"]


def test_a_timed_command_has_no_gate_and_without_a_cgroup_its_shell_alone_ends_it():
    timed = command_argv("make -j2", Path("/p"), None, gated=False)
    assert timed[:5] == ["/bin/sh", "-c", timed[2], "iosched-cgroup", "/p"]  # the one join (settings/cgroups.py)
    assert timed[5:] == ["/bin/sh", "-c", UNGATED, "iosched-cmd", "make -j2"]
    assert command_argv("make -j2", None, None, gated=False) == ["/bin/sh", "-c", UNGATED, "iosched-cmd", "make -j2"]


def test_an_ungated_command_runs_at_once_with_nothing_on_its_stdin():
    proc = subprocess.run(["/bin/sh", "-c", UNGATED, "iosched-cmd", "read x || echo stdin-is-empty; exit 5"],
                          capture_output=True, timeout=10, check=False)
    assert proc.returncode == 5 and proc.stdout.split() == [b"stdin-is-empty"]


def test_the_users_environment_names_the_user():
    env = {"PATH": "/usr/bin", "HOME": "/root", "USER": "root", "SUDO_UID": "1000"}
    got = user_env(env, RunAs(1000, 1000, "alice", "/home/alice"))
    assert got == {"PATH": "/usr/bin", "HOME": "/home/alice", "USER": "alice", "LOGNAME": "alice", "SUDO_UID": "1000"}
    assert user_env(env, None) is None and user_env(env, RunAs(2000, 2000)) is None


@pytest.mark.parametrize(("code", "status"), [(0, 0), (3, 3), (255, 255), (-9, 137), (-15, 143)])
def test_an_exit_code_reads_as_a_shell_says_it(code, status):
    assert exit_status(code) == status


@pytest.mark.parametrize(("cmd", "why"), [("", "empty"), ("  \n", "empty"), ("a\0b", "NUL"),
                                          ("x" * (MAX_CMD + 1), "longer than")])
def test_a_command_line_that_cannot_be_one_is_refused(cmd, why):
    assert why in (check_cmd(cmd) or "")


def test_a_command_line_is_taken_as_it_is():
    assert check_cmd("cat 'a b' | wc -c && ls; exit 3") is None


def test_proc_io_counters_are_read_and_junk_is_zero():
    text = "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n"
    assert io_bytes(text) == (4096, 8192)
    assert io_bytes("") == (0, 0) and io_bytes("read_bytes: -1\nwrite_bytes: ١\n") == (0, 0)


def gated(cmd: str) -> tuple[subprocess.Popen[bytes], int, int]:
    gate_r, gate_w = os.pipe()
    ready_r, ready_w = os.pipe()
    proc = subprocess.Popen(["/bin/sh", "-c", GATED, "iosched-cmd", cmd], stdin=gate_r, stdout=ready_w,
                            stderr=subprocess.PIPE)
    os.close(gate_r)
    os.close(ready_w)
    return proc, gate_w, ready_r


def test_the_command_waits_at_the_gate_and_its_output_goes_to_stderr():
    proc, gate_w, ready_r = gated("echo out; echo err >&2; read x || echo stdin-is-empty; exit 7")
    try:
        assert select.select([ready_r], [], [], 10)[0] and os.read(ready_r, 1) == b"x"
        assert proc.poll() is None  # held at the gate
        os.write(gate_w, b"\n")
        os.close(gate_w)
        _, err = proc.communicate(timeout=10)
        assert os.read(ready_r, 10) == b""  # nothing but the ready byte on its stdout
    finally:
        os.close(ready_r)
    assert proc.returncode == 7 and err.decode().split() == ["out", "err", "stdin-is-empty"]


def test_a_gate_closed_without_a_line_runs_nothing():
    proc, gate_w, ready_r = gated("echo ran")
    os.close(gate_w)
    _, err = proc.communicate(timeout=10)
    os.close(ready_r)
    assert proc.returncode == NOT_STARTED and b"ran" not in err
