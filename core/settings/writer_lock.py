"""One writer per machine: the TUI that may switch, tune and run jobs holds an exclusive lock; viewers take none.

Read-only views (browser tabs of `iosched serve`, `iosched --read-only`) only read procfs and sysfs, so any
number of them may run beside the writer. A second writer is refused with the first one's pid.
"""

from __future__ import annotations

import os
from pathlib import Path

from iosched.core.base.errors import IoschedError
from iosched.core.settings.pidlock import Held, take

LOCK_NAME = "tui.lock"


class WriterBusy(IoschedError):
    """Another iosched holds the writer lock."""

    def __init__(self, pid: str) -> None:
        super().__init__(f"another iosched is already running on this machine (pid {pid}); "
                         "`iosched --read-only` opens a view beside it")
        self.pid = pid


def acquire_writer_lock(run_dir: Path) -> int | None:
    """Take the writer lock and write our pid in it; the descriptor holds it until closed.

    None: the lock cannot be made (not root); such a TUI cannot write anything either.
    """
    try:
        return take(run_dir / LOCK_NAME, str(os.getpid()))
    except Held as e:
        raise WriterBusy(e.holder) from None
