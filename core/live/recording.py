"""Record and replay: raw counters and setting changes, one JSON line per interval, appended as they come.

Raw counters (not rates) are stored, so a replay computes rates with the very code the live views use.
A disk whose counters did not change since the previous line is left out (idle disks cost nothing);
a line is written with one unbuffered write, so a crash loses at most the interval in progress and a
cut-off last line is simply ignored on replay. Setting changes (scheduler, tunables, queue knobs) are
found by reading the recorded devices' settings every interval, so changes from any source show up; a
device attached while recording gets a line of its own and is watched from then on.
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from iosched.core.base.errors import BadInput
from iosched.core.base.infile import read_bounded
from iosched.core.kernel.devices import BlockDevice, list_devices
from iosched.core.kernel.procfs import CpuCounters, DiskCounters
from iosched.core.kernel.sysfs import read_attr
from iosched.core.live.monitor import Monitor, SettingsWatch, Ticker
from iosched.core.live.sampler import Rates, Sample, compute_rates

VERSION = 1
INVENTORY_EVERY_S = 10.0  # how often the recorder re-reads the whole inventory besides the cheap checks
MAX_RECORDING_BYTES = 512 << 20  # a day at 1 s with a dozen busy disks is about 100 MiB


@dataclass(frozen=True)
class SettingEvent:
    time: float  # seconds since the recording started (same clock as the samples)
    device: str
    name: str  # "scheduler" or a tunable / knob name
    old: str | None
    new: str | None

    @property
    def label(self) -> str:
        return (self.new or "?") if self.name == "scheduler" else f"{self.name}={self.new}"


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
            self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        except FileExistsError:
            raise BadInput(f"{self.path} exists: record into a new file") from None
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
        self._write({"t": "header", "version": VERSION, "start_wall": time.time(), "interval": interval,
                     "devices": devices, "kernel": platform.uname().release, "host": platform.uname().node,
                     "inventory": [d.to_json() for d in inventory]})

    def _write(self, obj: dict) -> None:
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
        line: dict = {"t": "s", "m": m, "d": disks, "c": {k: list(v) for k, v in s.cpus.items()}}
        if gone:
            line["gone"] = gone
        self._write(line)
        if self.devices is None:
            fresh = any(n not in self._known and n not in self._not_devices for n in disks)
            if fresh or self._sized() or self._reattached() or time.monotonic() >= self._next_inventory:
                self._add_attached(m)
        for c in self.settings.poll():
            self._write({"t": "e", "m": m, "dev": c.device, "name": c.name, "old": c.old, "new": c.new})
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
                self._write({"t": "dev", "m": m, "device": dev.to_json()})
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


@dataclass
class Recording:
    header: dict
    samples: list[Sample] = field(default_factory=list)
    events: list[SettingEvent] = field(default_factory=list)
    truncated: bool = False
    attached: list[dict] = field(default_factory=list)  # devices attached while recording, as first seen

    @property
    def inventory(self) -> list[BlockDevice]:
        """The devices at the start and those attached later (one row per name, the first one seen)."""
        fields = set(BlockDevice.__dataclass_fields__)
        out: dict[str, BlockDevice] = {}
        for d in [*self.header["inventory"], *self.attached]:
            if d["name"] not in out:
                out[d["name"]] = BlockDevice(**{k: v for k, v in d.items() if k in fields})
        return list(out.values())

    def rates(self) -> Iterator[Rates]:
        for prev, cur in zip(self.samples, self.samples[1:]):
            yield compute_rates(prev, cur)


def is_recording(path: str | Path) -> bool:
    try:
        if not Path(path).is_file():
            return False
        with open(path, "rb") as f:
            return f.read(32).startswith(b'{"t":"header"')
    except OSError:
        return False


def load(path: str | Path) -> Recording:
    """Read a recording; a cut-off last line (a crash mid-write) is ignored and flagged."""
    try:
        text = read_bounded(path, MAX_RECORDING_BYTES, "recording").decode()
    except UnicodeDecodeError:
        raise BadInput(f"{path} is not an iosched recording (not text)") from None
    lines = text.split("\n")
    rec: Recording | None = None
    current: dict[str, DiskCounters] = {}
    for i, line in enumerate(lines):
        if not line:
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            if i >= len(lines) - 2 and rec is not None:  # the last line, cut off
                rec.truncated = True
                break
            raise BadInput(f"{path} line {i + 1} is not a recording line") from None
        kind = obj.get("t") if isinstance(obj, dict) else None
        if rec is None:
            if kind != "header" or obj.get("version") != VERSION:
                raise BadInput(f"{path} is not an iosched recording")
            _check_header(obj, path)
            rec = Recording(obj)
            continue
        try:
            if kind == "s":
                m = _time(obj["m"], rec)
                for name in obj.get("gone", []):
                    current.pop(_text(name), None)
                for name, values in obj["d"].items():
                    current[name] = DiskCounters(*_counters(values, DiskCounters))
                cpus = {k: CpuCounters(*_counters(v, CpuCounters)) for k, v in obj["c"].items()}
                rec.samples.append(Sample(m, dict(current), cpus))
            elif kind == "e":
                rec.events.append(SettingEvent(_time(obj["m"], None), _text(obj["dev"]), _text(obj["name"]),
                                               _text_or_none(obj["old"]), _text_or_none(obj["new"])))
            elif kind == "dev":
                _time(obj["m"], None)
                rec.attached.append(_device(obj["device"]))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise BadInput(f"{path} line {i + 1} is damaged ({e.__class__.__name__})") from None
    if rec is None:
        raise BadInput(f"{path} is empty")
    return rec


def _num(x: object) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or abs(x) > 1e12:
        raise ValueError("not a number")
    return float(x)


def _time(x: object, rec: Recording | None) -> float:
    t = _num(x)
    if rec is not None and rec.samples and t <= rec.samples[-1].time:
        raise ValueError("time goes backwards")
    return t


def _text(x: object) -> str:
    if not isinstance(x, str):
        raise TypeError("not text")
    return x


def _text_or_none(x: object) -> str | None:
    return None if x is None else _text(x)


def _counters(values: object, kind: type) -> list[int]:
    n = len(kind._fields)  # type: ignore[attr-defined]
    if not isinstance(values, list) or not 4 <= len(values) <= n:
        raise ValueError("wrong number of counters")
    if not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 64 for v in values):
        raise ValueError("counters are not whole numbers")
    return values


_DEVICE_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,), "maj_min": (str,), "size_bytes": (int,), "rotational": (bool,), "removable": (bool,),
    "read_only": (bool,), "scheduler": (str, type(None)), "schedulers": (list,), "nr_requests": (int, type(None)),
    "read_ahead_kb": (int, type(None)),
}


def _device(d: object) -> dict:
    if not isinstance(d, dict):
        raise TypeError("a device is not an object")
    for key, types in _DEVICE_TYPES.items():
        if not isinstance(d.get(key), types):
            raise TypeError(f"device {key}")
    if not all(isinstance(x, str) for x in d["schedulers"]):
        raise TypeError("device schedulers")
    fields = set(BlockDevice.__dataclass_fields__)
    BlockDevice(**{k: v for k, v in d.items() if k in fields})  # anything else it cannot take
    return d


def _check_header(h: dict, path: str | Path) -> None:
    try:
        if _num(h.get("interval")) <= 0:
            raise ValueError("interval")
        _num(h.get("start_wall"))
        devices = h.get("devices")
        if devices is not None and not (isinstance(devices, list) and all(isinstance(x, str) for x in devices)):
            raise TypeError("devices")
        if not isinstance(h.get("inventory"), list):
            raise TypeError("inventory")
        for d in h["inventory"]:
            _device(d)
    except (TypeError, ValueError) as e:
        raise BadInput(f"{path} has a damaged header ({e})") from None
