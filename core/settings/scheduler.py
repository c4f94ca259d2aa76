"""Scheduler switching: validate the name against the device's own list (any scheduler the kernel lists, in-tree or
not; one it has not loaded, by its module on request), then one journaled write."""

from __future__ import annotations

from pathlib import Path

from iosched.core.base.errors import BadInput, DeviceGone, IoschedError, NoScheduler, UnknownScheduler, shown
from iosched.core.kernel.modules import scheduler_module
from iosched.core.kernel.sysfs import check_device_name, parse_scheduler, read_attr, read_int, scheduler_tunables
from iosched.core.settings.journal import Journal
from iosched.core.settings.writes import QUEUE_KNOBS, WriteResult, load_module, write_attr


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


def not_listed(device: str, name: str, available: list[str], root: str | Path = "/") -> UnknownScheduler:
    """The refusal of a scheduler ``device`` does not list: with the modprobe that would load it, when its module is
    installed for this kernel."""
    module = scheduler_module(name, root)
    if module is None:
        return UnknownScheduler(f"{device} has no scheduler {shown(name)}; available: {', '.join(available)}")
    return UnknownScheduler(f"{device} has no scheduler {shown(name)} loaded; its module {module} is installed: load "
                            f"it with `modprobe {module}` (or `iosched set {device} {name} --load-module`); "
                            f"available now: {', '.join(available)}")


def switch_scheduler(device: str, name: str, root: str | Path = "/",
                     journal: Journal | None = None, load: bool = False) -> WriteResult:
    """Switch ``device`` to scheduler ``name``; returns old/new and how long the kernel took. A scheduler the kernel
    has not loaded is refused, naming its module; with ``load``, its module is loaded first (modprobe)."""
    if not name or name != name.strip() or any(c.isspace() for c in name):
        raise BadInput(f"scheduler name {shown(name)} is empty or contains white space")
    _, available = available_schedulers(device, root)
    if name not in available:
        refusal = not_listed(device, name, available, root)
        module = scheduler_module(name, root)
        if not load or module is None:
            raise refusal
        load_module(module)
        _, available = available_schedulers(device, root)
        if name not in available:
            raise IoschedError(f"`modprobe {module}` loaded, yet {device} lists no scheduler {shown(name)}; "
                               f"available: {', '.join(available)}")
    return write_attr(device, "queue/scheduler", name, root=root, journal=journal)


def read_tunables(device: str, root: str | Path = "/") -> dict[str, str]:
    """The current scheduler's tunables, name -> value, read from where this kernel keeps them (its folder
    queue/iosched/, and queue/ for a moved one: async_depth on newer kernels); only those it lets be written and
    that read as whole numbers. Empty for none or no elevator."""
    sysdir = check_device_name(device, root)
    return {attr.rsplit("/", 1)[-1]: value for attr, value in scheduler_tunables(sysdir).items()}


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
