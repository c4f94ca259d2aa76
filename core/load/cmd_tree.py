"""A shell command line run in a cgroup of its own and ended with its whole process tree: the one way iosched runs a
command, whether it times it (`compare --cmd`, a study's commands: core/experiment/commands.py) or records its IO
(`capture --cmd`, run as its user and held at a gate until it may start: core/trace/cmd_capture.py).

Who it runs as, one rule for every command line a user gives (`capture --cmd`, `compare --cmd`, a study's commands,
`advise --cmd`; ``invoking_user``): the user who typed it. Under sudo that is ``SUDO_UID``/``SUDO_GID``, not root: a
command line the user gave runs with the user's rights (a slip in it cannot do what only root may), reads the user's
own files and caches (``HOME``, ``USER`` and ``LOGNAME`` from the user's passwd entry, the supplementary groups too),
and leaves no root-owned file in the user's folders. Run by root itself (no sudo, or sudo from root), it stays root;
run by another user, it runs as that user. A ``SUDO_UID`` or ``SUDO_GID`` that names no user or group (``-1``,
``4294967295``, other scripts' digits, spaces) is refused before anything runs: iosched never guesses, and never
falls back to root.

How it starts: ``setpriv --pdeathsig`` (it dies with the thread that started it), a shell that joins the cgroup
(core/settings/cgroups.py ``joined``: root may write its ``cgroup.procs``; the user cannot, so nothing it starts
leaves the group), for a capture ``setpriv`` to the user (with its own ``--pdeathsig``: a change of user clears the
first), then the outer shell, whose trap kills the command's process group on SIGTERM, around ``/bin/sh -c CMD``
with its stdin /dev/null. A capture's outer shell says it is ready on its stdout, a pipe, and waits for a line on its
stdin, another (the gate): everything before the command itself, and the page cache dropped for a cold start,
happens before the gate opens; the command's stdout and stderr are then both iosched's stderr (iosched's stdout
carries its own answer, JSON with ``--json``). A timed command's output is its runner's to read.

How it ends (``end_tree``): the cgroup killed whole (whatever the command started, setsid or not), then its
process group and session while the outer shell is still an unreaped zombie (their ids are still its own).
"""

from __future__ import annotations

import pwd
import re
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from iosched.core.base.errors import BadInput, shown
from iosched.core.kernel.processes import kill_session
from iosched.core.load.children import Child
from iosched.core.settings.cgroups import joined
from iosched.core.settings.cmd_cgroup import CmdCgroup, close_cmd_cgroup

MAX_CMD = 64 << 10  # bytes of a command line: what a shell would take in one argument, and more
# Says it is ready on stdout, which then becomes stderr, waits for a line on stdin (the gate: no line, no command),
# then runs the command with stdin from /dev/null; TERM kills its process group.
GATED = ('trap "kill -KILL 0" TERM; printf x; exec >&2; read _ || exit 125; '
         '/bin/sh -c "$1" </dev/null & wait $!')
NOT_STARTED = 125  # the gate closed without a line: the command never ran
# A timed command: no gate; TERM kills its process group.
UNGATED = 'trap "kill -KILL 0" TERM; /bin/sh -c "$1" </dev/null & wait $!'


@dataclass(frozen=True)
class RunAs:
    """A user a command runs as: ids, and from the passwd entry (when there is one) the name and home."""

    uid: int
    gid: int
    name: str | None = None
    home: str | None = None


_ID = re.compile(r"[0-9]{1,10}", re.ASCII)
NO_ID = 2**32 - 1  # (uid_t)-1: "no change" to setresuid, never a user


def _sudo_id(env: Mapping[str, str], name: str) -> int | None:
    """``SUDO_UID`` or ``SUDO_GID`` as a number; None when unset; BadInput when it names no id."""
    text = env.get(name)
    if text is None:
        return None
    if not _ID.fullmatch(text) or int(text) >= NO_ID:
        raise BadInput(f"{name} is {shown(text, 20)}, which is no user or group id: iosched will not guess who a "
                       "command runs as (unset it to run the command as root, or run iosched through sudo again)")
    return int(text)


def invoking_user(env: Mapping[str, str], euid: int,
                  lookup: Callable[[int], tuple[str, str] | None] | None = None) -> RunAs | None:
    """Who a command line the user gave runs as (the module's rule): the user who ran iosched through sudo, when
    iosched runs as root and that user is not root; else None (the command runs as iosched does: root itself, or
    the user running it). BadInput for a ``SUDO_UID`` or ``SUDO_GID`` that names no id. ``lookup`` gives a uid's
    name and home (the passwd entry)."""
    if euid != 0:
        return None
    uid, gid = _sudo_id(env, "SUDO_UID"), _sudo_id(env, "SUDO_GID")
    if uid is None or uid == 0:
        return None
    found = (lookup or passwd_entry)(uid)
    return RunAs(uid, gid if gid is not None else uid, *(found or (None, None)))


def passwd_entry(uid: int) -> tuple[str, str] | None:
    try:
        p = pwd.getpwuid(uid)
    except KeyError:
        return None
    return p.pw_name, p.pw_dir


def command_argv(cmd: str, procs: Path | None, run_as: RunAs | None, setpriv: str = "setpriv",
                 gated: bool = True) -> list[str]:
    """The argv that joins the cgroup whose ``cgroup.procs`` is ``procs`` (None: no cgroup could be made; its process
    group and session alone end it), becomes ``run_as`` (with its groups when it has a passwd entry, else none) and,
    ``gated``, says it is ready on its stdout and waits at the gate (its stdin) to run ``cmd``. Every value is an
    argument, never part of a script."""
    become: list[str] = []
    if run_as is not None:
        become = [setpriv, f"--reuid={run_as.uid}", f"--regid={run_as.gid}",
                  "--init-groups" if run_as.name is not None else "--clear-groups", "--pdeathsig", "TERM", "--"]
    inner = [*become, "/bin/sh", "-c", GATED if gated else UNGATED, "iosched-cmd", cmd]
    return joined(procs, inner) if procs is not None else inner


def user_env(env: Mapping[str, str], run_as: RunAs | None) -> dict[str, str] | None:
    """The command's environment: iosched's, with the user's HOME, USER and LOGNAME when it runs as another user
    (None: iosched's own, unchanged)."""
    if run_as is None or run_as.name is None:
        return None
    return {**env, "HOME": run_as.home or "/", "USER": run_as.name, "LOGNAME": run_as.name}


def end_tree(child: Child, group: CmdCgroup | None, root: str | Path = "/") -> str | None:
    """End whatever the command left running, without reaping its outer shell: its cgroup whole (the group and its
    registration removed), then its process group and session. Why a process it started would not end (the
    group stays, for `iosched restore`), or None."""
    why = close_cmd_cgroup(group, root)
    child.signal_group(signal.SIGKILL)  # a no-op once it was reaped
    if not child.reaped:
        kill_session(child.proc.pid)
    return why


def exit_status(code: int) -> int:
    """A child's exit code as a shell reports it: 128 + N for one a signal N ended."""
    return code if code >= 0 else 128 + min(-code, 127)


def check_cmd(cmd: str) -> str | None:
    """Why ``cmd`` cannot be run as a command line, or None."""
    if not cmd.strip():
        return "--cmd is empty: give the command line to run"
    if "\0" in cmd:
        return "--cmd holds a NUL byte, which no command line can"
    if len(cmd.encode(errors="surrogateescape")) > MAX_CMD:
        return f"--cmd is longer than {MAX_CMD // 1024} KiB"
    return None


def io_bytes(text: str) -> tuple[int, int]:
    """/proc/PID/io's ``read_bytes`` and ``write_bytes`` (the counters getrusage's blocks count in 512s); 0 for one
    missing."""
    got = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        value = value.strip()
        if key in ("read_bytes", "write_bytes") and value.isascii() and value.isdigit():
            got[key] = int(value)
    return got.get("read_bytes", 0), got.get("write_bytes", 0)
