"""An exclusive, non-blocking flock on a file that names its holder: the lock dies with its process (even
SIGKILLed), and a second taker learns who holds it.

The file goes with its lock: its holder removes it while still holding it (``release``), and ``sweep`` removes those
whose holder died without (SIGKILL), each only once its own flock is taken, so never a live holder's. A taker that
opened a file removed meanwhile finds, once it holds the flock, that the name no longer leads to what it locked, and
takes the lock again under the name: two processes never both hold one name."""

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
    it until closed (``release``). Held when another holds it; None when the lock file cannot be made (not root, a
    read-only /run): then nothing is locked."""
    for _ in range(100):  # another removing the file each time between our open and our flock: not for long
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
        if not _named(path, fd):  # removed by its last holder (or a sweep) after we opened it: again
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.write(fd, label.encode())
        return fd
    return None


def _named(path: Path, fd: int) -> bool:
    """``path`` still leads to the file ``fd`` has open."""
    try:
        here, there = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def release(path: Path, fd: int) -> None:
    """Give up the lock ``take`` returned: its file removed while still held (no one else can hold it meanwhile),
    then the descriptor closed."""
    try:
        if _named(path, fd):
            with contextlib.suppress(OSError):
                path.unlink()
    finally:
        os.close(fd)


def sweep(folder: Path, pattern: str = "*.lock") -> list[Path]:
    """Remove the lock files in ``folder`` whose holder is gone (their flock free), each while holding it, so a
    live holder's never; the files removed."""
    removed = []
    with contextlib.suppress(OSError):
        for path in sorted(folder.glob(pattern)):
            try:
                fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # held: its holder is alive
                os.close(fd)
                continue
            if _named(path, fd):
                removed.append(path)
            release(path, fd)
    return removed


@contextlib.contextmanager
def holding(path: Path, label: str) -> Iterator[None]:
    """``take`` for the length of a ``with`` block."""
    fd = take(path, label)
    try:
        yield
    finally:
        if fd is not None:
            release(path, fd)
