"""One load per device across iosched processes: an experiment, a matrix or a job holds its device's lock
for as long as it runs, so a second one started elsewhere on the same device (another terminal, the TUI, a
browser tab) is refused instead of measuring both loads and judging the mix.

The lock is an flock on /run/iosched/devices/DEVICE.lock: it dies with its process, even SIGKILLed. Switching a
scheduler by hand takes no lock (an experiment notices that and marks its run invalid). A restore takes it too
(``restoring``): a device under load elsewhere is left to the process loading it, which puts it back itself.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.kernel.sysfs import check_device_name
from iosched.core.settings.journal import default_run_dir
from iosched.core.settings.pidlock import Held, holding, release, take

# Devices this process holds under load, so that its own restore (a TUI quitting while its compare ends)
# is not kept off them by its own lock: a second flock in the same process conflicts like any other.
_HELD_HERE: dict[str, int] = {}
_HELD_GUARD = threading.Lock()


class DeviceBusy(IoschedError):
    """Another experiment or job holds the device."""


@contextlib.contextmanager
def load_lock(device: str, what: str, root: str | Path = "/") -> Iterator[None]:
    """Hold ``device``'s load lock while ``what`` (e.g. "compare", "job 4k-read") runs; DeviceBusy names the
    holder. BadInput for a name that is no whole disk. Without a run directory (not root) nothing is locked:
    such a process cannot load a device through iosched either."""
    check_device_name(device, root)  # a bare, existing name: safe as a file name below
    with contextlib.ExitStack() as held:
        try:  # only the taking: whatever the body raises goes on as it is
            held.enter_context(holding(default_run_dir(root) / "devices" / f"{device}.lock",
                                       f"pid {os.getpid()}, {what}"))
        except Held as e:
            raise DeviceBusy(f"{device} is already under load from iosched ({e.holder}): a second load beside "
                             "it would be measured with it; wait for it to end or stop it") from None
        _held_here(device, +1)
        held.callback(_held_here, device, -1)
        yield


def _held_here(device: str, step: int) -> None:
    with _HELD_GUARD:
        _HELD_HERE[device] = _HELD_HERE.get(device, 0) + step
        if _HELD_HERE[device] <= 0:
            del _HELD_HERE[device]


@contextlib.contextmanager
def restoring(devices: Iterable[str], root: str | Path = "/") -> Iterator[dict[str, str]]:
    """Hold the load lock of each of ``devices`` while a restore puts their values back, so that no compare
    starts on one half restored; yields device -> holder (e.g. "pid 4242, compare") for those another live
    iosched has under load: that process's run would be invalidated by a restore, and it puts back its own
    device when it ends. This process's own loads are no obstacle. A device that is gone is no one's."""
    others: dict[str, str] = {}
    with contextlib.ExitStack() as stack:
        for device in sorted(set(devices)):
            with _HELD_GUARD:
                if device in _HELD_HERE:
                    continue
            try:
                check_device_name(device, root)  # a bare, existing name: safe as a file name below
            except BadInput:
                continue
            path = default_run_dir(root) / "devices" / f"{device}.lock"
            try:
                fd = take(path, f"pid {os.getpid()}, restore")
            except Held as e:
                others[device] = e.holder
                continue
            if fd is not None:
                stack.callback(release, path, fd)
        yield others
