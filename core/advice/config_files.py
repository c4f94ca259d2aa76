"""Reading other programs' configuration (udev rules, tuned profiles) under a movable root: bounded, regular files
only, never followed into a FIFO or a device; a file that cannot be read is named with why, never raised."""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_CONFIG_BYTES = 1 << 20  # a rules file or a profile larger than this is not configuration


def read_config(path: Path, limit: int = MAX_CONFIG_BYTES) -> tuple[str | None, str | None]:
    """(text, None), or (None, why) when ``path`` is missing, not a regular file, unreadable or over ``limit``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, "missing"
    except OSError as e:
        return None, e.strerror or type(e).__name__
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, "not a regular file"
        data = os.read(fd, limit + 1)
    except OSError as e:
        return None, e.strerror or type(e).__name__
    finally:
        os.close(fd)
    if len(data) > limit:
        return None, f"larger than {limit >> 10} KiB"
    if b"\0" in data:
        return None, "binary"
    return data.decode(errors="replace"), None


def shown_path(path: Path, root: str | Path) -> str:
    """``path`` as the machine under ``root`` names it: /etc/udev/rules.d/x.rules, whatever the root."""
    try:
        return "/" + str(path.relative_to(Path(root)))
    except ValueError:
        return str(path)
