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


def take(path: Path, label: str) -> int | None:
    """Take the lock at ``path`` (its folder is made, private) and write ``label`` in it; the descriptor holds
    it until closed. Held when another holds it; None when the lock file cannot be made (not root, a read-only
    /run): then nothing is locked."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)  # a lock file, never a link's target
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 200).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise Held(holder) from None
    os.ftruncate(fd, 0)
    os.write(fd, label.encode())
    return fd


@contextlib.contextmanager
def holding(path: Path, label: str) -> Iterator[None]:
    """``take`` for the length of a ``with`` block."""
    fd = take(path, label)
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)
