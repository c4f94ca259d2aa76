"""One load per device across iosched processes: an experiment, a matrix or a job holds its device's lock
for as long as it runs, so a second one started elsewhere on the same device (another terminal, the TUI, a
browser tab) is refused instead of measuring both loads and judging the mix.

The lock is an flock on /run/iosched/devices/DEVICE.lock: it dies with its process, even SIGKILLed. Switching a
scheduler by hand takes no lock (an experiment notices that and marks its run invalid).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from iosched.core.errors import IoschedError
from iosched.core.journal import default_run_dir
from iosched.core.pidlock import Held, holding
from iosched.core.sysfs import check_device_name


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
        yield
