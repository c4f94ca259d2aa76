"""Record and replay: raw counters and setting changes, one JSON line per interval, appended as they come.

Raw counters (not rates) are stored, so a replay computes rates with the very code the live views use.
A disk whose counters did not change since the previous line is left out (idle disks cost nothing);
a line is written with one unbuffered write, so a crash loses at most the interval in progress and a
cut-off last line is simply ignored on replay. Setting changes (scheduler, tunables, queue knobs) are
found by reading the recorded devices' settings every interval, so changes from any source show up.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from iosched.core.devices import BlockDevice, list_devices
from iosched.core.errors import BadInput
from iosched.core.monitor import Monitor, SettingsWatch, Ticker
from iosched.core.procfs import CpuCounters, DiskCounters
from iosched.core.sampler import Rates, Sample, compute_rates

VERSION = 1


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
        for c in self.settings.poll():
            self._write({"t": "e", "m": m, "dev": c.device, "name": c.name, "old": c.old, "new": c.new})
        return s

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

    @property
    def inventory(self) -> list[BlockDevice]:
        fields = set(BlockDevice.__dataclass_fields__)
        return [BlockDevice(**{k: v for k, v in d.items() if k in fields}) for d in self.header["inventory"]]

    def rates(self) -> Iterator[Rates]:
        for prev, cur in zip(self.samples, self.samples[1:]):
            yield compute_rates(prev, cur)


def is_recording(path: str | Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(32).startswith(b'{"t":"header"')
    except OSError:
        return False


def load(path: str | Path) -> Recording:
    """Read a recording; a cut-off last line (a crash mid-write) is ignored and flagged."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise BadInput(f"no such file {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"cannot read {path}: {e}") from None
    lines = text.split("\n")
    rec: Recording | None = None
    current: dict[str, DiskCounters] = {}
    for i, line in enumerate(lines):
        if not line:
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            if i >= len(lines) - 2 and rec is not None:  # the last line, cut off
                rec.truncated = True
                break
            raise BadInput(f"{path} line {i + 1} is not a recording line") from None
        kind = obj.get("t") if isinstance(obj, dict) else None
        if rec is None:
            if kind != "header" or obj.get("version") != VERSION:
                raise BadInput(f"{path} is not an iosched recording")
            rec = Recording(obj)
            continue
        try:
            if kind == "s":
                for name in obj.get("gone", []):
                    current.pop(name, None)
                for name, values in obj["d"].items():
                    current[name] = DiskCounters(*values)
                cpus = {k: CpuCounters(*v) for k, v in obj["c"].items()}
                rec.samples.append(Sample(float(obj["m"]), dict(current), cpus))
            elif kind == "e":
                rec.events.append(SettingEvent(float(obj["m"]), obj["dev"], obj["name"], obj["old"], obj["new"]))
        except (KeyError, TypeError, ValueError) as e:
            raise BadInput(f"{path} line {i + 1} is damaged ({e})") from None
    if rec is None:
        raise BadInput(f"{path} is empty")
    return rec
