"""What `iosched export` exposes, as plain data: per device its identity and scheduler, the iostat rates of the
last interval, and the scheduler switches seen since the start, whoever made them, counted per old and new
scheduler. The command line turns a snapshot into Prometheus metric families (cli/export.py); nothing here
knows the client library.

One thread steps it (``step`` each interval); a scrape reads the newest ``snapshot`` from another, under a
lock. The inventory (devices that come and go, identity) is read again every ``INVENTORY_EVERY`` steps.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from iosched.core.kernel.devices import BlockDevice
from iosched.core.live.monitor import Monitor, SettingsWatch
from iosched.core.live.rates import DiskRates

INVENTORY_EVERY = 10


@dataclass(frozen=True)
class DeviceState:
    device: BlockDevice
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
        self.watch = SettingsWatch([d.name for d in self._devices()], root)
        self.watch.poll()  # the baseline: a switch is counted from the next poll on
        # Before the first interval: the devices, without rates.
        self._snapshot = Snapshot({d.name: DeviceState(d, None) for d in self._devices()})

    def _devices(self) -> list[BlockDevice]:
        return [d for d in self.monitor.devices if self.only is None or d.name in self.only]

    def _inventory(self) -> None:
        self.monitor.apply_inventory(self.monitor.read_inventory())

    def step(self) -> Snapshot:
        """One interval: rates, switches seen, and every INVENTORY_EVERY steps the inventory again."""
        rates = self.monitor.step()
        self._steps += 1
        if self._steps % INVENTORY_EVERY == 0 or self.monitor.take_disks_changed():
            self._inventory()
            names = {d.name for d in self._devices()}
            for gone in set(self.watch.devices) - names:
                self.watch.forget(gone)
            for name in names:
                self.watch.watch(name)
        for change in self.watch.poll():
            if change.name == "scheduler" and change.old and change.new:
                key = (change.device, change.old, change.new)
                self._switches[key] = self._switches.get(key, 0) + 1
        devices: dict[str, DeviceState] = {}
        for d in self._devices():
            # The scheduler as just read (the poll above), not as the slower inventory last saw it.
            now = self.watch_scheduler(d.name) or d.scheduler
            dev = d if now == d.scheduler else replace(d, scheduler=now)
            devices[d.name] = DeviceState(dev, rates.disks.get(d.name) if rates is not None else None)
        snap = Snapshot(devices, dict(self._switches), rates.interval if rates is not None else 0.0)
        with self._lock:
            self._snapshot = snap
        return snap

    def watch_scheduler(self, device: str) -> str | None:
        return self.watch.last(device).get("scheduler") or None

    def snapshot(self) -> Snapshot:
        with self._lock:
            return self._snapshot


