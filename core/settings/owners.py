"""Who made a leftover (a scratch folder, a cgroup, a demo sandbox, a fleet session's folder): a process named by
its pid and its start time.

A pid alone names whoever has it now: once a SIGKILLed run's pid is given to another process, a registration by
pid keeps the run's leftovers for ever. With the start time beside it (/proc/PID/stat field 22, clock ticks after
boot: fixed for a process's life; two holders of one pid in turn would have to start within one tick), a live pid
whose process started at another time is not the owner, and what it left can go. Registrations written before the
start time was kept (a pid alone) are read as before: a live pid may be their owner.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from iosched.core.kernel.processes import process_start

_MAX_PID = 1 << 22  # the kernel's PID_MAX_LIMIT


def pid_alive(pid: int) -> bool:
    """Whether some process holds ``pid`` now (not necessarily the one that registered something)."""
    if not 0 < pid < _MAX_PID:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _whole(x: object) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 1 << 63 else None


@dataclass(frozen=True)
class Owner:
    """The process that made something: its pid and, when known, its start time."""

    pid: int
    start: int | None = None  # clock ticks after boot; None: a registration that predates it, or unreadable

    @classmethod
    def me(cls) -> Owner:
        return cls(os.getpid(), process_start(os.getpid()))

    def fields(self) -> dict[str, int]:
        """What a JSON registration holds of its owner: ``pid`` as before, ``start`` beside it."""
        return {"pid": self.pid} if self.start is None else {"pid": self.pid, "start": self.start}

    @classmethod
    def of(cls, info: dict[str, Any]) -> Owner | None:
        """The owner a registration names, or None when its pid is no pid. A start that is no whole number is
        read as none (an old registration: a live pid may be its owner)."""
        pid = _whole(info.get("pid"))
        if not pid:  # 0 would name this process's own group to kill(2)
            return None
        return cls(pid, _whole(info.get("start")))

    def text(self) -> str:
        """The owner as one line of a plain owner file: "PID START" (an old file holds the pid alone)."""
        return f"{self.pid}\n" if self.start is None else f"{self.pid} {self.start}\n"

    @classmethod
    def parse(cls, text: str) -> Owner | None:
        """The owner an owner file names ("PID" or "PID START"), or None when it names none."""
        parts = text.split()
        if not 1 <= len(parts) <= 2 or not all(p.isascii() and p.isdigit() and len(p) <= 20 for p in parts):
            return None
        return cls.of({"pid": int(parts[0]), "start": int(parts[1]) if len(parts) == 2 else None})

    def alive(self) -> str | None:
        """Why the owner may still be running, in words; None when it is gone: its pid is free, or names a process
        that started at another time (the pid was given to another process)."""
        if not pid_alive(self.pid):
            return None
        now = process_start(self.pid)
        if self.start is None:
            return (f"pid {self.pid} is running, and this registration (from an older iosched) does not say when "
                    "its owner started, so it may be its owner")
        if now is None:
            return f"pid {self.pid} is running and its start time cannot be read, so it may be the owner"
        if now != self.start:
            return None
        return f"its owner, pid {self.pid}, is still running"


@dataclass(frozen=True)
class Left:
    """A leftover kept because its owner may be alive: what it is, and why it was left."""

    what: str
    why: str

    def line(self) -> str:
        return f"left alone: {self.what}: {self.why}"
