"""Processes as /proc names them: a process's session and start time (/proc/PID/stat), and a signal that reaches
only the process a check found.

A pid read from /proc may be given to another process before a signal sent by pid arrives; a pidfd names one
process for good, so a signal goes through one opened before the check is repeated (``signal_if``).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable


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
