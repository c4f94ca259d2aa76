"""Reading a file the user names: a regular file only, never more than a bound (``report /dev/zero``)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from iosched.core.base.errors import BadInput


def open_regular(path: str | Path, what: str) -> int:
    """A descriptor of ``path`` opened for reading; BadInput (nothing left open) when it is missing, unreadable
    or not a regular file (a FIFO, a device, a directory: ``give a WHAT``)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the open
    except FileNotFoundError:
        raise BadInput(f"no such file {path}") from None
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise BadInput(f"{path} is not a regular file: give a {what}")
    return fd


def bound_words(limit: int) -> str:
    """A bound in bytes as a sentence says it: "64 MiB", "256 KiB", "900 bytes" (never "0 MiB")."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if limit >= 1 << shift:
            whole = limit / (1 << shift)
            return f"{whole:.0f} {unit}" if whole.is_integer() or whole >= 10 else f"{whole:.1f} {unit}"
    return f"{limit} bytes"


def read_bounded(path: str | Path, limit: int, what: str = "file") -> bytes:
    """The bytes of ``path``; BadInput when it is missing, not a regular file, unreadable or over ``limit``."""
    fd = open_regular(path, f"saved {what}")
    try:
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > limit:
                raise BadInput(f"{path} is larger than {bound_words(limit)}: not a {what} iosched wrote")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e.strerror}") from None
    finally:
        os.close(fd)
