"""A cgroup per command run (`compare --cmd`, a study's commands), so that the command's whole process tree ends
with its run: a child that calls setsid, or forks twice, leaves its process group and session, never its cgroup.

The group is ``iosched-cmd-PID-N`` (cgroup v2) inside iosched's own cgroup2 group, made only when that group hands
no controller down (its ``cgroup.subtree_control`` is empty, as any group holding processes has, or a hybrid
system's cgroup2 root): the command's IO, CPU and memory are then accounted where iosched's are, as without the
group. A group of its own would be a bfq group of its own, weighed against a `--background` job's, and so change
what is measured. Where no such group can be made (no cgroup2, not root, iosched in a cgroup2 root that hands
controllers down) commands run without one: their process group and session end them (core/load/children.py).

A group is registered under the run dir (``cmdgroups/PID-N.json``, its owner by pid and start time) before it is
made. At the run's end everything in it is killed (``cgroup.kill``, Linux 5.14; before that each process it lists,
until none is left) and it is removed; `iosched restore` does the same for a group whose iosched is gone.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iosched.core.kernel.cgroupfs import cgroup_mounts, under_root
from iosched.core.kernel.processes import signal_if
from iosched.core.kernel.sysfs import read_attr
from iosched.core.settings.journal import default_run_dir, kept_registrations, stale_registrations
from iosched.core.settings.owners import Left, Owner

_NAME = re.compile(r"iosched-cmd-(\d+)-\d+")
_RUNS = itertools.count(1)
_EMPTY_WAIT_S = 2.0  # killed processes leave their group within milliseconds; a D-state one may take longer


@dataclass(frozen=True)
class CmdCgroup:
    """One command run's cgroup and its registration."""

    path: Path
    registration: Path

    @property
    def procs(self) -> Path:
        """The file a process writes its pid to, to join the group (core/settings/cgroups.py joined())."""
        return self.path / "cgroup.procs"


def _registry(root: str | Path) -> Path:
    return default_run_dir(root) / "cmdgroups"


def own_cgroup(root: str | Path = "/") -> Path | None:
    """This process's cgroup2 group as a directory, when a group made in it would share its accounting (it hands
    no controller down); else None."""
    text = read_attr(Path(root, "proc/self/cgroup")) or ""
    rel = next((line[3:] for line in text.splitlines() if line.startswith("0::/")), None)
    mount = next((m for m in cgroup_mounts(root) if m.fstype == "cgroup2"), None)
    if rel is None or mount is None or "\0" in rel:
        return None
    here = under_root(root, mount.path) / rel.lstrip("/")
    if ".." in Path(rel).parts or not here.is_dir():
        return None
    handed = read_attr(here / "cgroup.subtree_control")
    return here if handed is not None and not handed.split() else None


def open_cmd_cgroup(root: str | Path = "/") -> CmdCgroup | None:
    """A new, registered cgroup for one command run, or None where none can be made (see the module's words)."""
    parent = own_cgroup(root)
    if parent is None:
        return None
    owner, n = Owner.me(), next(_RUNS)
    made = CmdCgroup(parent / f"iosched-cmd-{owner.pid}-{n}", _registry(root) / f"{owner.pid}-{n}.json")
    try:
        made.registration.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        made.registration.write_text(json.dumps({**owner.fields(), "group": str(made.path)}))
    except OSError:
        return None
    try:
        made.path.mkdir()
    except OSError:
        made.registration.unlink(missing_ok=True)
        return None
    return made


def _kill_all(group: Path, root: str | Path) -> None:
    """Kill every process in ``group``: at once through cgroup.kill, else each one listed until none is."""
    try:
        fd = os.open(group / "cgroup.kill", os.O_WRONLY)
    except FileNotFoundError:
        fd = None
    except OSError:
        return
    if fd is not None:
        try:
            os.write(fd, b"1")
            return
        except OSError:
            pass
        finally:
            os.close(fd)
    rel = _cgroup_line(group, root)
    for _ in range(100):  # a fork bomb refills the list: each pass kills what it found
        pids = (read_attr(group / "cgroup.procs") or "").split()
        if not pids:
            return
        for pid in pids:
            if pid.isascii() and pid.isdigit():
                signal_if(int(pid), signal.SIGKILL, lambda p: rel is not None and _in_group(p, rel))
        time.sleep(0.01)


def _cgroup_line(group: Path, root: str | Path) -> str | None:
    """How /proc/PID/cgroup names ``group``: "0::/REL" (the group relative to its cgroup2 mount)."""
    for m in cgroup_mounts(root):
        mount = under_root(root, m.path)
        if m.fstype == "cgroup2" and group.is_relative_to(mount):
            return "0::/" + str(group.relative_to(mount))
    return None


def _in_group(pid: int, line: str) -> bool:
    text = read_attr(Path(f"/proc/{pid}/cgroup")) or ""
    return line in text.splitlines()


def _populated(group: Path) -> bool:
    events = read_attr(group / "cgroup.events")
    if events is None:
        return bool((read_attr(group / "cgroup.procs") or "").split())
    return "populated 1" in events.splitlines()


def end_group(group: Path, root: str | Path = "/") -> str | None:
    """Kill everything in ``group`` and remove it; why it could not be removed, or None when it is gone."""
    if not group.is_dir():
        return None
    _kill_all(group, root)
    deadline = time.monotonic() + _EMPTY_WAIT_S
    while _populated(group) and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        group.rmdir()
    except FileNotFoundError:
        return None
    except OSError as e:
        return "a process in it did not end" if _populated(group) else (e.strerror or str(e))
    return None


def close_cmd_cgroup(made: CmdCgroup | None, root: str | Path = "/") -> str | None:
    """End a command run's group: every process left in it killed, the group and its registration removed. Why
    it could not be removed (its registration stays, for `iosched restore`), or None."""
    if made is None:
        return None
    why = end_group(made.path, root)
    if why is None:
        made.registration.unlink(missing_ok=True)
    return why


def _ours(info: dict[str, Any], root: str | Path) -> Path | None:
    """The group a registration names when it is what iosched makes: ``iosched-cmd-PID-N`` (PID the registration's
    own) inside a cgroup2 mount. None for anything else (it is not acted on)."""
    group, owner = info.get("group"), Owner.of(info)
    if not isinstance(group, str) or owner is None or "\0" in group:
        return None
    path = Path(group)
    m = _NAME.fullmatch(path.name)
    mounts = [under_root(root, c.path) for c in cgroup_mounts(root) if c.fstype == "cgroup2"]
    if m is None or int(m.group(1)) != owner.pid or ".." in path.parts or not any(
            path.is_relative_to(mt) and path != mt for mt in mounts):
        return None
    return path


def clean_stale_cmd_cgroups(root: str | Path = "/", dry_run: bool = False) -> list[tuple[str, str | None]]:
    """End the groups of command runs whose iosched is gone (SIGKILLed: a setsid child of its command may still be
    running in one): what is in each is killed, the group removed. Each group, with why it could not be removed
    (None: removed, or would be with ``dry_run``). A registration that names anything else is dropped."""
    out: list[tuple[str, str | None]] = []
    for f, info in stale_registrations(_registry(root)):
        group = _ours(info, root)
        if group is None or not group.exists():
            if not dry_run:
                f.unlink(missing_ok=True)
            continue
        why = None if dry_run else end_group(group, root)
        if not dry_run and why is None:
            f.unlink(missing_ok=True)
        out.append((str(group), why))
    return out


def kept_cmd_cgroups(root: str | Path = "/") -> list[Left]:
    """The command groups `restore` leaves because their run may still be going, each with why."""
    out = []
    for info, why in kept_registrations(_registry(root)):
        group = _ours(info, root)
        if group is not None and group.exists():
            out.append(Left(f"a command's cgroup {group}", why))
    return out
