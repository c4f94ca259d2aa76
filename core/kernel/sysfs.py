"""Safe readers of sysfs attributes and device-name validation (reads only; writes live in writes.py)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from iosched.core.base.errors import BadInput, UnknownDevice, shown

# Kernel block device names: letters, digits and a few separators; never a path.
DEVICE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:+!-]{0,63}$")
_NVME_PATH = re.compile(r"^nvme(\d+)c\d+n(\d+)$")


def multipath_head(name: str) -> str | None:
    """The namespace a hidden NVMe multipath path belongs to: nvme0c1n2 -> nvme0n2."""
    m = _NVME_PATH.match(name)
    return f"nvme{m.group(1)}n{m.group(2)}" if m else None


def read_attr(path: Path, default: str | None = None) -> str | None:
    """An attribute's text, stripped; ``default`` when it is absent or unreadable."""
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace").strip()
    except OSError:
        return default


def read_int(path: Path, default: int | None = None) -> int | None:
    text = read_attr(path)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        return default


def parse_scheduler(text: str | None) -> tuple[str | None, list[str]]:
    """``"none [mq-deadline] kyber"`` -> ("mq-deadline", ["none", "mq-deadline", "kyber"]).

    A missing file (None) means the device has no elevator: (None, []).
    """
    if text is None:
        return None, []
    current: str | None = None
    available: list[str] = []
    for token in text.split():
        if token.startswith("[") and token.endswith("]"):
            token = token[1:-1]
            current = token
        available.append(token)
    return current, available


def partition_parent(name: str, root: str | Path = "/") -> str | None:
    """The whole disk a partition belongs to, or None when ``name`` is not a partition."""
    target = Path(root, "sys/class/block", name)
    if not (target / "partition").exists():
        return None
    try:
        return Path(os.path.realpath(target)).parent.name
    except OSError:
        return None


def check_device_name(name: str, root: str | Path = "/") -> Path:
    """Validate a whole-disk name and return its /sys/block directory; BadInput says what is wrong."""
    if not isinstance(name, str) or not name:
        raise BadInput("no device name given")
    if name != name.strip() or any(c.isspace() for c in name):
        raise BadInput(f"device name {shown(name)} contains white space")
    if "/" in name or name in (".", ".."):
        raise BadInput(f"device name {shown(name)} must be a bare name like sda, not a path")
    if not DEVICE_NAME.match(name):
        raise BadInput(f"device name {shown(name)} has characters no block device name has")
    path = Path(root, "sys/block", name)
    if not path.is_dir():
        parent = partition_parent(name, root)
        if parent:
            raise BadInput(f"{name} is a partition; schedulers belong to the whole disk {parent}")
        raise UnknownDevice(f"no block device named {name}")
    return path


def device_identity(name: str, root: str | Path = "/") -> tuple[str | None, int | None]:
    """What tells this device apart from a later one under the same name: its major:minor and disk sequence."""
    sysdir = Path(root, "sys/block", name)
    return read_attr(sysdir / "dev"), read_int(sysdir / "diskseq")


def gone_reason(name: str, was: tuple[str | None, int | None], root: str | Path = "/") -> str | None:
    """Why the device ``name`` (``was`` its identity when first seen) is gone, or None while it is there.

    A detached loop device keeps its node in /sys/block with size 0: gone all the same.
    """
    sysdir = Path(root, "sys/block", name)
    if not sysdir.is_dir():
        return "removed"
    if not read_int(sysdir / "size"):
        return "no medium attached"
    now = device_identity(name, root)
    if any(a is not None and b is not None and a != b for a, b in zip(was, now)):
        return "another device now has its name"
    return None
