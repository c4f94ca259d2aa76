"""What `iosched export` exposes, as plain data: per device its identity and scheduler, the iostat rates of the
last interval, and the scheduler switches seen since the start, whoever made them (each device's scheduler file
read every interval), counted per old and new scheduler. The command line turns a snapshot into Prometheus
metric families (cli/export.py); nothing here knows the client library.

One thread steps it (``step`` each interval); a scrape reads the newest ``snapshot`` from another, under a
lock. The inventory (devices that come and go, identity) is read again every ``INVENTORY_EVERY`` steps.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.kernel.sysfs import parse_scheduler, read_attr
from iosched.core.live.monitor import Monitor
from iosched.core.live.rates import DiskRates

INVENTORY_EVERY = 10


@dataclass(frozen=True)
class DeviceState:
    device: DeviceDoc
    rates: DiskRates | None  # None before the first interval


@dataclass(frozen=True)
class Snapshot:
    devices: dict[str, DeviceState] = field(default_factory=dict)
    switches: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (device, old, new) -> count
    interval: float = 0.0  # seconds the rates cover


class ExportState:
    def __init__(self, monitor: Monitor, only: Iterable[str] | None = None, root: str | Path = "/") -> None:
        self.monitor = monitor
        self.only = list(only) if only else None
        self.root = root
        self._switches: dict[tuple[str, str, str], int] = {}
        self._steps = 0
        self._lock = threading.Lock()
        self._inventory()
        # Each device's scheduler as last read: one sysfs file a device each interval, not its tunables.
        self._schedulers = {d.name: self._scheduler(d.name) for d in self._devices()}
        # Before the first interval: the devices, without rates.
        self._snapshot = Snapshot({d.name: DeviceState(d, None) for d in self._devices()})

    def _devices(self) -> list[DeviceDoc]:
        return [d for d in self.monitor.devices if self.only is None or d.name in self.only]

    def _inventory(self) -> None:
        self.monitor.apply_inventory(self.monitor.read_inventory())

    def _scheduler(self, device: str) -> str | None:
        return parse_scheduler(read_attr(Path(self.root, "sys/block", device, "queue/scheduler")))[0]

    def step(self) -> Snapshot:
        """One interval: rates, switches seen, and every INVENTORY_EVERY steps the inventory again."""
        rates = self.monitor.step()
        self._steps += 1
        if self._steps % INVENTORY_EVERY == 0 or self.monitor.take_disks_changed():
            self._inventory()
        devices: dict[str, DeviceState] = {}
        seen: dict[str, str | None] = {}
        for d in self._devices():
            now = seen[d.name] = self._scheduler(d.name)
            old = self._schedulers.get(d.name)
            if old and now and old != now:  # a device attached meanwhile starts from its first read
                key = (d.name, old, now)
                self._switches[key] = self._switches.get(key, 0) + 1
            dev = d if now == d.scheduler else replace(d, scheduler=now)
            devices[d.name] = DeviceState(dev, rates.disks.get(d.name) if rates is not None else None)
        self._schedulers = seen
        snap = Snapshot(devices, dict(self._switches), rates.interval if rates is not None else 0.0)
        with self._lock:
            self._snapshot = snap
        return snap

    def snapshot(self) -> Snapshot:
        with self._lock:
            return self._snapshot
