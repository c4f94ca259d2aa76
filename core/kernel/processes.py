"""Processes as /proc names them: a process's session and start time (/proc/PID/stat), and a signal that reaches
only the process a check found.

A pid read from /proc may be given to another process before a signal sent by pid arrives; a pidfd names one
process for good, so a signal goes through one opened before the check is repeated (``signal_if``).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterable
from pathlib import Path


def stat_fields(text: str) -> list[str] | None:
    """The fields of /proc/PID/stat text from field 3 (state) on, or None when the text is not one.

    The command name (field 2, in parentheses) may hold spaces and parentheses itself: the fields after it are
    counted from the last ')'."""
    _, paren, rest = text.rpartition(")")
    fields = rest.split()
    return fields if paren and len(fields) >= 20 else None


def _number(fields: list[str] | None, field: int) -> int | None:
    if fields is None:
        return None
    value = fields[field - 3]
    return int(value) if value.isascii() and value.isdigit() else None


def parse_start(text: str) -> int | None:
    """A process's start time, clock ticks after boot (field 22), from its /proc/PID/stat text."""
    return _number(stat_fields(text), 22)


def parse_session(text: str) -> int | None:
    """A process's session id (field 6) from its /proc/PID/stat text."""
    return _number(stat_fields(text), 6)


def read_stat(pid: int) -> str | None:
    """/proc/PID/stat, or None when the process is gone or cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read(4096).decode(errors="replace")
    except OSError:
        return None


def process_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks after boot), or None when it is gone or cannot be read."""
    text = read_stat(pid)
    return parse_start(text) if text is not None else None


def running(pid: int, start: int | None) -> bool:
    """Whether process ``pid``, started at ``start`` (None: whenever), is still running: neither gone, nor a zombie
    waiting to be reaped, nor another process that got its pid."""
    fields = stat_fields(read_stat(pid) or "")
    if fields is None or fields[0] in ("Z", "X", "x"):
        return False
    return start is None or _number(fields, 22) == start


def all_pids() -> list[int]:
    try:
        return [int(n) for n in os.listdir("/proc") if n.isascii() and n.isdigit()]
    except OSError:
        return []


def signal_if(pid: int, sig: int, still: Callable[[int], bool]) -> bool:
    """Send ``sig`` to ``pid`` only when ``still(pid)`` holds once a pidfd names it: a pid given to another
    process meanwhile fails the check (or the pidfd names the gone process, and the signal goes nowhere).
    Whether it was sent."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return False  # gone
    try:
        if not still(pid):
            return False
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(fd, sig)
            return True
        return False
    finally:
        os.close(fd)


def kill_session(sid: int, sig: int = signal.SIGKILL) -> int:
    """Send ``sig`` to every process of session ``sid`` (a child started with its own session: its double-forked
    descendants stay in it unless they call setsid). Returns how many were sent it."""
    def member(pid: int) -> bool:
        text = read_stat(pid)
        return text is not None and parse_session(text) == sid

    return sum(signal_if(pid, sig, member) for pid in all_pids() if member(pid))


MAX_OPEN_FILES_SEEN = 200_000  # a machine's open files read for one look: thousands as a rule; then it stops


def device_users(names: Iterable[str], root: str | Path = "/", me: int | None = None) -> dict[str, list[str]]:
    """The processes holding each of the disks ``names`` open (or one of their partitions), as "fio (pid 4242)",
    read from /proc/PID/fd (links, never followed: a file on a hung mount costs nothing); this process (``me``,
    default os.getpid()) left out. Root sees every process, anyone else their own. Bounded: at most
    MAX_OPEN_FILES_SEEN links are read."""
    disks = {n for n in names if n}
    proc = Path(root, "proc")
    me = os.getpid() if me is None else me
    found: dict[str, list[str]] = {}
    seen = 0
    try:
        pids = sorted(int(n) for n in os.listdir(proc) if n.isascii() and n.isdigit() and len(n) < 12)
    except OSError:
        return found
    for pid in pids:
        if pid == me:
            continue
        try:
            fds = os.listdir(proc / str(pid) / "fd")
        except OSError:
            continue  # gone, or another user's
        held: set[str] = set()
        for fd in fds:
            seen += 1
            if seen > MAX_OPEN_FILES_SEEN:
                return found
            try:
                target = os.readlink(proc / str(pid) / "fd" / fd)
            except OSError:
                continue
            if target.startswith("/dev/") and (disk := _disk_of_node(target[5:], disks)) is not None:
                held.add(disk)
        if held:
            try:
                with open(proc / str(pid) / "comm", "rb") as f:
                    comm = f.read(64).decode(errors="replace").strip() or "?"
            except OSError:
                comm = "?"
            for disk in held:
                found.setdefault(disk, []).append(f"{comm} (pid {pid})")
    return found


def _disk_of_node(node: str, disks: set[str]) -> str | None:
    """The disk of ``disks`` a /dev node names: the disk itself or one of its partitions (sda1, nvme0n1p2)."""
    if node in disks:
        return node
    stem = node.rstrip("0123456789")
    if stem != node and (stem in disks or (stem.endswith("p") and stem[:-1] in disks and stem[-2:-1].isdigit())):
        return stem if stem in disks else stem[:-1]
    return None
