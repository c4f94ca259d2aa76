"""Signalling a child's process group without racing the thread that reaps it.

Once a child is reaped its pid (and so its process-group id) may be given to an unrelated process, so a
``poll()`` then ``killpg()`` from another thread can hit a stranger. Here the reaper first waits for the
exit without reaping (``waitid`` with ``WNOWAIT``: the zombie keeps the pid), then reaps under a lock; a
signal is sent only under that lock while the child is still unreaped.
"""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import threading
import time
from typing import Any


class Child:
    """A started ``Popen`` (its own session) with race-free group signals and a reap that keeps the rusage."""

    def __init__(self, proc: subprocess.Popen[Any]) -> None:  # text or bytes: only signals and reaps
        self.proc = proc
        self.rusage: resource.struct_rusage | None = None
        self._lock = threading.Lock()

    @property
    def reaped(self) -> bool:
        return self.proc.returncode is not None

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to the child's process group, only while the child is unreaped; from any thread."""
        with self._lock:
            if self.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, sig)

    def _exited(self, block: bool) -> bool:
        flags = os.WEXITED | os.WNOWAIT | (0 if block else os.WNOHANG)
        try:
            return os.waitid(os.P_PID, self.proc.pid, flags) is not None
        except ChildProcessError:
            return True  # already reaped
        except InterruptedError:
            return False

    def exited(self, timeout: float) -> bool:
        """Whether the child has ended, waiting up to ``timeout`` s, without reaping it: while it is a zombie its
        pid, and so its process group's and session's id, is still its own, and ``signal_group`` may end what it
        left behind in them."""
        if self.proc.returncode is not None:
            return True
        deadline = time.monotonic() + timeout
        while not self._exited(block=False):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True

    def wait(self, timeout: float | None = None) -> int | None:
        """Block until the child ends, reap it (keeping its rusage); its exit code, or None on timeout.

        Call from one thread only (the one that started the child, for `setpriv --pdeathsig`).
        """
        if self.proc.returncode is not None:
            return self.proc.returncode
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._exited(block=deadline is None):
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(0.02)
        with self._lock:
            if self.proc.returncode is None:
                try:
                    _pid, status, self.rusage = os.wait4(self.proc.pid, 0)
                    self.proc.returncode = os.waitstatus_to_exitcode(status)
                except ChildProcessError:
                    self.proc.wait()
            return self.proc.returncode
