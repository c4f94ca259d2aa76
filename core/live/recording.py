"""Record and replay: raw counters and setting changes, one JSON line per interval, appended as they come.

Raw counters (not rates) are stored, so a replay computes rates with the very code the live views use.
A disk whose counters did not change since the previous line is left out (idle disks cost nothing);
a line is written with one unbuffered write, so a crash loses at most the interval in progress and a
cut-off last line is simply ignored on replay. Setting changes (scheduler, tunables, queue knobs) are
found by reading the recorded devices' settings every interval, so changes from any source show up; a
device attached while recording gets a line of its own and is watched from then on. Reading one back, of
any length, is core/live/recording_reader.py.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from iosched.core.base.encode import encode
from iosched.core.base.errors import BadInput
from iosched.core.base.outfile import create_new
from iosched.core.kernel.devices import list_devices
from iosched.core.kernel.sysfs import read_attr
from iosched.core.live.monitor import Monitor, SettingsWatch, Ticker
from iosched.core.live.recording_lines import DeviceLine, EventLine, HeaderLine
from iosched.core.live.recording_reader import VERSION, Recording, SettingEvent, is_recording, load, read_header, scan
from iosched.core.live.sampler import Sample

# The reading side is re-exported: who records also reads recordings back through this module.
__all__ = ["INVENTORY_EVERY_S", "VERSION", "Recorder", "Recording", "SettingEvent", "is_recording", "load",
           "read_header", "record", "scan"]

INVENTORY_EVERY_S = 10.0  # how often the recorder re-reads the whole inventory besides the cheap checks


class Recorder:
    """Appends one line per ``step()`` to ``path``; the first line is a header with the inventory."""

    def __init__(self, path: str | Path, devices: list[str] | None, interval: float, root: str | Path = "/") -> None:
        self.path = Path(path)
        self.devices = devices
        self.interval = interval
        self.root = root
        self.monitor = Monitor(root=root, capacity=1)  # raw counters go to the file; no history needed
        self.t0 = time.monotonic()
        self._last: dict[str, list[int]] = {}
        try:
            self.fd = create_new(self.path, append=True)  # made new: never a name that exists, never a link
        except OSError as e:
            raise BadInput(f"cannot create {self.path}: {e.strerror}") from None
        inventory = [d for d in list_devices(root) if devices is None or d.name in devices]
        # Settings are read for the devices in the inventory only (not every empty loop node in diskstats):
        # about 20 sysfs reads per device and interval.
        self.settings = SettingsWatch(devices if devices is not None else [d.name for d in inventory], root)
        self._known = set(self.settings.devices)
        self._seq = {d.name: d.diskseq for d in inventory}  # a device attached anew under a name gets a new one
        self._not_devices: set[str] = set()  # names in diskstats that were no device at the last look
        self._empty: set[str] = set()  # those of them with no size (a loop node: attaching gives it one)
        self._next_inventory = self.t0 + INVENTORY_EVERY_S
        self._write(encode(HeaderLine(t="header", version=VERSION, start_wall=time.time(), interval=interval,
                                      devices=devices, kernel=platform.uname().release, host=platform.uname().node,
                                      inventory=inventory)))

    def _write(self, obj: dict[str, Any]) -> None:
        os.write(self.fd, (json.dumps(obj, separators=(",", ":")) + "\n").encode())

    def step(self) -> Sample:
        self.monitor.step()
        s = self.monitor.last_sample
        assert s is not None
        m = round(s.time - self.t0, 4)
        disks = {}
        for name, c in s.disks.items():
            if self.devices is not None and name not in self.devices:
                continue
            values = list(c)
            if self._last.get(name) != values:
                disks[name] = values
                self._last[name] = values
        gone = [n for n in self._last if n not in s.disks]
        for n in gone:
            del self._last[n]
        # A SampleLine written by hand, as the reader checks it by hand: every interval, for speed.
        line: dict[str, Any] = {"t": "s", "m": m, "d": disks, "c": {k: list(v) for k, v in s.cpus.items()}}
        if gone:
            line["gone"] = gone
        self._write(line)
        if self.devices is None:
            fresh = any(n not in self._known and n not in self._not_devices for n in disks)
            if fresh or self._sized() or self._reattached() or time.monotonic() >= self._next_inventory:
                self._add_attached(m)
        for change in self.settings.poll():
            self._write(encode(EventLine(t="e", m=m, dev=change.device, name=change.name, old=change.old,
                                         new=change.new)))
        return s

    def _sized(self) -> bool:
        # An attached loop device keeps its diskstats line and may do no IO: its size is what changes.
        return any(self._size(n) not in (None, "0") for n in self._empty)

    def _reattached(self) -> bool:
        return any(self._seq.get(n) is not None and self._diskseq(n) not in (None, self._seq[n]) for n in self._known)

    def _diskseq(self, name: str) -> int | None:
        text = read_attr(Path(self.root, "sys/block", name, "diskseq"))
        return int(text) if text and text.isdigit() else None

    def _size(self, name: str) -> str | None:
        return read_attr(Path(self.root, "sys/block", name, "size"))

    def _add_attached(self, m: float) -> None:
        """Devices attached since the start (an empty loop node has counters but is no device until then)."""
        self._next_inventory = time.monotonic() + INVENTORY_EVERY_S
        current = {d.name: d for d in list_devices(self.root)}
        self._not_devices = {n for n in self._last if n not in current}  # partitions, empty loop nodes
        self._empty = {n for n in self._not_devices if self._size(n) == "0"}
        for name, dev in current.items():
            if name not in self._known or dev.diskseq != self._seq.get(name):
                self._known.add(name)
                self._seq[name] = dev.diskseq
                self.settings.forget(name)  # another device under a known name: a new baseline
                self.settings.watch(name)
                self._write(encode(DeviceLine(t="dev", m=m, device=dev)))
        # A detached device leaves the watch list, so the same name attached again is announced again.
        for name in [n for n in self.settings.devices if n not in current]:
            self.settings.forget(name)
            self._known.discard(name)
            self._seq.pop(name, None)

    def close(self) -> None:
        os.close(self.fd)


def record(path: str | Path, devices: list[str] | None, interval: float, duration: float | None = None,
           root: str | Path = "/", on_step: Callable[[int], None] | None = None) -> int:
    """Record until ``duration`` or an interrupt; absolute deadlines so the interval does not drift."""
    rec = Recorder(path, devices, interval, root)
    n = 0
    ticker = Ticker(interval)
    try:
        while duration is None or n * interval < duration + 1e-9:
            rec.step()
            if on_step is not None:
                on_step(n)
            n += 1
            ticker.next()
    finally:
        rec.close()
    return n
