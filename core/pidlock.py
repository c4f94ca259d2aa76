"""An exclusive, non-blocking flock on a file that names its holder: the lock dies with its process (even
SIGKILLed), and a second taker learns who holds it."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


class Held(Exception):
    """The lock is taken; ``holder`` is what its holder wrote (e.g. "pid 4242, compare")."""

    def __init__(self, holder: str) -> None:
        super().__init__(holder)
        self.holder = holder


@contextlib.contextmanager
def holding(path: Path, label: str) -> Iterator[None]:
    """Hold the lock at ``path`` (its folder is made, private) with ``label`` written in it; Held when another
    holds it. When the lock file cannot be made (not root, a read-only /run) nothing is locked."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Held(os.read(fd, 200).decode(errors="replace").strip() or "?") from None
        os.ftruncate(fd, 0)
        os.write(fd, label.encode())
        yield
    finally:
        os.close(fd)
