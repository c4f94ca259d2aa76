"""Scheduler switching: validate the name against the device's own list, then one journaled write."""

from __future__ import annotations

from pathlib import Path

from iosched.core.base.errors import BadInput, DeviceGone, NoScheduler, UnknownScheduler, shown
from iosched.core.kernel.sysfs import check_device_name, parse_scheduler, read_attr, read_int
from iosched.core.settings.journal import Journal
from iosched.core.settings.writes import QUEUE_KNOBS, WriteResult, write_attr


def available_schedulers(device: str, root: str | Path = "/") -> tuple[str | None, list[str]]:
    """(current, available) for a validated whole disk; NoScheduler when it has no elevator."""
    sysdir = check_device_name(device, root)
    text = read_attr(sysdir / "queue/scheduler")
    if text is None:
        if not sysdir.exists():
            raise DeviceGone(f"{device} is gone")
        raise NoScheduler(f"{device} has no IO scheduler (its driver bypasses the elevator)")
    if not read_int(sysdir / "size"):
        # Unattached loop devices and empty drives keep their sysfs entry; a switch there means nothing.
        raise DeviceGone(f"{device} has no medium attached (size 0)")
    return parse_scheduler(text)


def switch_scheduler(device: str, name: str, root: str | Path = "/",
                     journal: Journal | None = None) -> WriteResult:
    """Switch ``device`` to scheduler ``name``; returns old/new and how long the kernel took."""
    if not name or name != name.strip() or any(c.isspace() for c in name):
        raise BadInput(f"scheduler name {shown(name)} is empty or contains white space")
    _, available = available_schedulers(device, root)
    if name not in available:
        raise UnknownScheduler(f"{device} has no scheduler {shown(name)}; available: {', '.join(available)}")
    return write_attr(device, "queue/scheduler", name, root=root, journal=journal)


def read_tunables(device: str, root: str | Path = "/") -> dict[str, str]:
    """The current scheduler's tunables (queue/iosched/*), name -> value; empty for none or no elevator."""
    d = check_device_name(device, root) / "queue/iosched"
    out: dict[str, str] = {}
    try:
        names = sorted(p.name for p in d.iterdir())
    except OSError:
        return out
    for name in names:
        value = read_attr(d / name)
        if value is not None:
            out[name] = value
    return out


def read_knobs(device: str, root: str | Path = "/") -> dict[str, str]:
    """Queue knobs iosched may change (nr_requests, read_ahead_kb, ...), name -> value."""
    d = check_device_name(device, root) / "queue"
    out: dict[str, str] = {}
    for name in sorted(QUEUE_KNOBS):
        value = read_attr(d / name)
        if value is not None:
            out[name] = value
    return out


def setting_attr(key: str) -> str:
    """The sysfs attribute under /sys/block/DEV for a setting name: a queue knob or a scheduler tunable."""
    return f"queue/{key}" if key in QUEUE_KNOBS else f"queue/iosched/{key}"
