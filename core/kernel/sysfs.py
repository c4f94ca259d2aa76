"""Safe readers of sysfs attributes and device-name validation (reads only; writes live in writes.py)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
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


# Scheduler tunables the kernel moved from each scheduler's folder to queue/, where every scheduler shares them
# (async_depth: a 2025 series, merged in 2026). Each is read and written where the device keeps it, and listed with
# the scheduler's tunables either way: a switch resets it like them.
MOVED_TO_QUEUE = ("async_depth",)
WHOLE_NUMBER = re.compile(r"^-?[0-9]{1,20}$")  # ASCII digits alone: int() would also take " 5", "1_000", "٥"
TUNABLE_NAME = re.compile(r"^[a-z0-9_]{1,40}$")  # what iosched writes under queue/iosched/: a name, never a path


def tunable_home(sysdir: Path, attr: str) -> str:
    """Where this device keeps ``attr`` (a path under it): a moved tunable named in the other place goes where its
    file is, so a journal, a rule or a variant written for either layout finds it; anything else as it is."""
    folder, _, name = attr.rpartition("/")
    if name in MOVED_TO_QUEUE and folder in ("queue", "queue/iosched") and not (sysdir / attr).is_file():
        other = f"queue/{name}" if folder == "queue/iosched" else f"queue/iosched/{name}"
        if (sysdir / other).is_file():
            return other
    return attr


def moved_here(root: str | Path = "/") -> tuple[str, ...]:
    """The moved tunables this kernel keeps in queue/ (one kernel, one layout): those some disk has there."""
    disks = sorted(Path(root, "sys/block").glob("*"))
    return tuple(name for name in MOVED_TO_QUEUE if any((d / "queue" / name).is_file() for d in disks))


def scheduler_tunables(sysdir: Path) -> dict[str, str]:
    """The current scheduler's tunables as attribute (a path under ``sysdir``) -> value: each file of queue/iosched/
    the kernel lets be written that reads as a whole number, then the moved ones this kernel keeps in queue/ while a
    scheduler runs. An out-of-tree scheduler also lists read-only statistics, tables and write-only triggers there
    (adios: batch_actual_max, lat_model_read, reset_lat_model): none of those is a setting to change, journal or put
    back."""
    out: dict[str, str] = {}
    folder = sysdir / "queue/iosched"
    try:
        files = sorted(folder.iterdir())
    except OSError:
        files = []
    for path in files:
        if not TUNABLE_NAME.match(path.name):
            continue
        try:
            writable = path.is_file() and bool(path.stat().st_mode & stat.S_IWUSR)
        except OSError:
            continue
        value = read_attr(path) if writable else None
        if value is not None and WHOLE_NUMBER.match(value):
            out[f"queue/iosched/{path.name}"] = value
    current, _ = parse_scheduler(read_attr(sysdir / "queue/scheduler"))
    if current not in (None, "none"):
        for name in MOVED_TO_QUEUE:
            value = read_attr(sysdir / "queue" / name)
            if f"queue/iosched/{name}" not in out and value is not None and WHOLE_NUMBER.match(value):
                out[f"queue/{name}"] = value
    return out


def disk_schedulers(root: str | Path = "/", first: Path | None = None) -> Iterator[tuple[Path, str | None, list[str]]]:
    """Each disk of /sys/block with its scheduler listing (current, available), ``first`` first (a disk's folder),
    then the others in name order."""
    try:
        others = sorted(p for p in Path(root, "sys/block").iterdir() if p != first)
    except OSError:
        others = []
    for d in [first, *others] if first is not None else others:
        current, available = parse_scheduler(read_attr(d / "queue/scheduler"))
        yield d, current, available


def running_tunables(scheduler: str, root: str | Path = "/", first: Path | None = None) -> set[str] | None:
    """The tunables ``scheduler`` has, read from the folder of a disk running it (``first`` when it does: one module,
    one set of files on every disk), or None when no disk here runs it now."""
    for d, current, _ in disk_schedulers(root, first):
        if current == scheduler:
            return {attr.rsplit("/", 1)[-1] for attr in scheduler_tunables(d)}
    return None


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
