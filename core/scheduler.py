"""Scheduler switching: validate the name against the device's own list, then one journaled write."""

from __future__ import annotations

from pathlib import Path

from core.errors import BadInput, DeviceGone, NoScheduler, UnknownScheduler
from core.journal import Journal
from core.sysfs import check_device_name, parse_scheduler, read_attr, read_int
from core.writes import WriteResult, write_attr


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
        raise BadInput(f"scheduler name {name!r} is empty or contains white space")
    _, available = available_schedulers(device, root)
    if name not in available:
        raise UnknownScheduler(f"{device} has no scheduler {name!r}; available: {', '.join(available)}")
    return write_attr(device, "queue/scheduler", name, root=root, journal=journal)
