"""One Monitor, many views: samples, rates, bounded history, markers and inventory diffs in one place.

The live TUI, `iosched watch`, `iosched record` and the experiment runner consume a Monitor; a replay is a
Monitor fed from a recording (``Monitor.replay``) with the same interface plus ``seek``. No view parses procfs
or keeps its own history. A Monitor is not thread-safe: one thread steps it (the TUI's UI thread, the CLI's
loop); workers only read the inventory (``read_inventory``) and hand the result back to that thread.

A new data source (a tracer, per-process IO) plugs in as a ``Probe``: ``step`` calls each probe with the
interval just measured and keeps its last value in ``extras[probe.name]``; a pane reads it from there.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from iosched.core.base.errors import IoschedError
from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.kernel.devices import list_devices
from iosched.core.kernel.sysfs import parse_scheduler, read_attr
from iosched.core.live.sampler import History, Rates, Sample, Sampler, compute_rates
from iosched.core.settings.scheduler import read_knobs, read_tunables

if TYPE_CHECKING:  # annotations only: a live Monitor does not load the reader
    from iosched.core.live.recording_reader import Cursor, Recording

# Points kept per series whatever the interval: 5 min at 0.25 s, 20 min at 1 s, 100 min at 5 s.
# Idle devices share one zero-rates object, so a full window stays small (docs/performance.md: Memory).
# Seconds between samples: a command's (watch, record, latency, top, export) anywhere in this range; the TUI's one
# of these steps (its -i snapped to the nearest, + and - step through them).
MIN_INTERVAL, MAX_INTERVAL = 0.05, 3600.0
REFRESH_STEPS = (0.25, 0.5, 1.0, 2.0, 5.0)
HISTORY_POINTS = 1200
MARKERS_KEPT = 500
MARK_DEDUP_S = 5.0  # our own switch and the inventory poll both see one change: mark it once


class SampleSource(Protocol):
    """Anything that takes a Sample: the procfs Sampler, a stepped fixture sampler, a recording."""

    def take(self) -> Sample: ...


class Probe(Protocol):
    """An extra data source stepped with the Monitor (e.g. a block-layer tracer): ``name`` keys ``extras``."""

    name: str

    def step(self, rates: Rates) -> object: ...


@dataclass(frozen=True)
class Marker:
    """A moment on the timeline (monotonic time) of one device with a short label, e.g. a scheduler switch.

    ``kind``: "switch" (ours), "tunable" (ours), "job", "end" (a job ended), "run" (an experiment's run
    began under the labelled scheduler), "outside" (a change made by someone else).
    """

    time: float
    device: str
    label: str
    kind: str = "switch"


@dataclass(frozen=True)
class InventoryDiff:
    """What changed between two inventories: devices that came and went, schedulers changed meanwhile."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    schedulers: tuple[tuple[str, str | None, str | None], ...] = ()  # (device, old, new)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.schedulers)


def diff_inventory(before: Sequence[DeviceDoc], after: Sequence[DeviceDoc]) -> InventoryDiff:
    old = {d.name: d for d in before}
    new = {d.name: d for d in after}
    sched = tuple((n, old[n].scheduler, d.scheduler) for n, d in sorted(new.items())
                  if n in old and d.scheduler and d.scheduler != old[n].scheduler)
    return InventoryDiff(tuple(sorted(new.keys() - old.keys())), tuple(sorted(old.keys() - new.keys())), sched)


@dataclass(frozen=True)
class SettingChange:
    """A scheduler, tunable or queue knob that changed between two reads, whoever changed it."""

    device: str
    name: str  # "scheduler" or a tunable / knob name
    old: str | None
    new: str | None


def read_settings(device: str, root: str | Path = "/") -> dict[str, str]:
    """The scheduler, its tunables and the queue knobs of one device (about 20 sysfs reads)."""
    text = read_attr(Path(root, "sys/block", device, "queue/scheduler"))
    current = parse_scheduler(text)[0] if text else None
    out = {"scheduler": current or ""}
    try:
        out.update(read_tunables(device, root))
        out.update(read_knobs(device, root))
    except IoschedError:
        pass  # the device went away: its samples stop, nothing more to read
    return out


def diff_settings(device: str, before: dict[str, str], now: dict[str, str]) -> list[SettingChange]:
    # A switch resets the tunables and nr_requests: only the switch itself is news then.
    switched = now.get("scheduler") != before.get("scheduler")
    keys = ["scheduler"] if switched else sorted(now.keys() | before.keys())
    return [SettingChange(device, k, before.get(k), now.get(k)) for k in keys if now.get(k) != before.get(k)]


class SettingsWatch:
    """Reads the settings of some devices on each ``poll`` and reports what changed since the last one."""

    def __init__(self, devices: Iterable[str], root: str | Path = "/") -> None:
        self.devices = list(devices)
        self.root = root
        self._last: dict[str, dict[str, str]] = {}

    def watch(self, device: str) -> None:
        """Watch one more device (attached meanwhile); its first poll is its baseline."""
        if device not in self.devices:
            self.devices.append(device)

    def forget(self, device: str) -> None:
        """Stop watching a device that went away; attached again, it starts from a new baseline."""
        if device in self.devices:
            self.devices.remove(device)
        self._last.pop(device, None)

    def poll(self) -> list[SettingChange]:
        changes: list[SettingChange] = []
        for name in self.devices:
            now = read_settings(name, self.root)
            before = self._last.get(name)
            if before is not None:
                changes.extend(diff_settings(name, before, now))
            self._last[name] = now
        return changes


class Monitor:
    """Sampler + bounded history + markers + inventory. ``step()`` once per interval from one thread."""

    seekable = False

    def __init__(self, source: SampleSource | None = None, root: str | Path = "/",
                 capacity: int = HISTORY_POINTS, probes: Iterable[Probe] = ()) -> None:
        self.root = Path(root)
        self.source: SampleSource = source or Sampler(root)
        self.history = History(capacity)
        self.markers: deque[Marker] = deque(maxlen=MARKERS_KEPT)
        self.marks_made = 0  # markers ever added: a view tells a new one by this (the deque stops growing)
        self.devices: list[DeviceDoc] = []
        self.probes = list(probes)
        self.extras: dict[str, object] = {}
        self.last_sample: Sample | None = None
        self.last_rates: Rates | None = None
        self._disk_names: frozenset[str] = frozenset()
        self._inventory_asked = 0  # tokens handed to readers
        self._inventory_applied = 0  # the newest token applied: an older read arriving late is dropped

    # ---- samples ------------------------------------------------------------------------------
    def baseline(self) -> Sample:
        """A fresh first sample (at start, after a pause): the next rates cover only the time since."""
        self.last_sample = self.source.take()
        self._disk_names = frozenset(self.last_sample.disks)
        return self.last_sample

    def step(self) -> Rates | None:
        """One sample, the rates since the previous one, into the history. None on the very first call."""
        cur = self.source.take()
        prev, self.last_sample = self.last_sample, cur
        if prev is None:
            self._disk_names = frozenset(cur.disks)
            return None
        rates = compute_rates(prev, cur)
        self.history.append(rates)
        self.last_rates = rates
        for probe in self.probes:
            self.extras[probe.name] = probe.step(rates)
        return rates

    def snapshot(self) -> Sample:
        """A sample outside the history (the edges of an experiment's run window)."""
        return self.source.take()

    def take_disks_changed(self) -> bool:
        """Whether the set of disks in the last sample differs from the one last taken: time to re-read the
        inventory. Taking it resets it, so each change is reported once."""
        if self.last_sample is None:
            return False
        names = frozenset(self.last_sample.disks)
        if names == self._disk_names:
            return False
        self._disk_names = names
        return True

    # ---- markers ------------------------------------------------------------------------------
    def mark(self, device: str, label: str, at: float | None = None, kind: str = "switch") -> bool:
        """Add a marker unless the same label on the same device is already there within a few seconds."""
        at = time.monotonic() if at is None else at
        if kind in ("switch", "outside", "tunable") and any(
                m.device == device and m.label == label and abs(at - m.time) < MARK_DEDUP_S for m in self.markers):
            return False
        self.markers.append(Marker(at, device, label, kind))
        self.marks_made += 1
        return True

    def markers_of(self, device: str | None) -> list[Marker]:
        return [m for m in self.markers if device is not None and m.device == device]

    # ---- inventory ----------------------------------------------------------------------------
    def inventory_token(self) -> int:
        """Ask for a token before reading the inventory (any thread may read; only this one applies)."""
        self._inventory_asked += 1
        return self._inventory_asked

    def read_inventory(self) -> list[DeviceDoc]:
        """The devices under root now: sysfs and udev reads, milliseconds; run it off the UI thread."""
        return list_devices(self.root)

    def apply_inventory(self, devices: list[DeviceDoc], token: int | None = None) -> InventoryDiff | None:
        """Take a fresh inventory; None when it is older than one already applied (a late worker).

        A scheduler that changed without our switch (another `iosched`, udev, tuned) gets an "outside" marker.
        """
        if token is not None:
            if token < self._inventory_applied:
                return None
            self._inventory_applied = token
        first = not self.devices
        diff = diff_inventory(self.devices, devices)
        now = time.monotonic()
        if not first:
            for name, _old, new in diff.schedulers:
                self.mark(name, new or "?", now, "outside")
        self.devices = list(devices)
        self._disk_names = frozenset(self.last_sample.disks) if self.last_sample else self._disk_names
        return diff

    def device(self, name: str | None) -> DeviceDoc | None:
        return next((d for d in self.devices if d.name == name), None)

    # ---- replay -------------------------------------------------------------------------------
    @classmethod
    def replay(cls, recording: Recording) -> ReplayMonitor:
        return ReplayMonitor(recording)


class _NoSamples:
    """A replay takes no samples: it moves by ``seek``."""

    def take(self) -> Sample:
        raise IoschedError("a replay is moved with seek, not sampled")


class ReplayMonitor(Monitor):
    """A Monitor fed from a recording: ``seek(pos)`` shows it up to interval ``pos`` (1 .. ``length``).

    It holds one window (the history's capacity), never the recording: a seek reads from the recording's
    checkpoint before the window (core/live/recording_reader.py), a step forward within reach reads only the new
    lines. The setting events in the window are its markers, its inventory is the recorded one with each
    device's scheduler as it was at the shown moment.
    """

    seekable = True

    def __init__(self, recording: Recording, capacity: int = HISTORY_POINTS) -> None:
        self.recording = recording
        super().__init__(_NoSamples(), root="/", capacity=capacity)
        self._start = recording.inventory
        self.devices = list(self._start)
        self.length = max(0, recording.count - 1)
        self.pos = 0
        self._cursor: Cursor | None = None  # reads on from the shown moment

    def read_inventory(self) -> list[DeviceDoc]:
        return list(self.devices)

    def step(self) -> Rates | None:
        self.seek(self.pos + 1)
        return self.last_rates

    def seek(self, pos: int) -> None:
        if self.length == 0:
            return  # fewer than two samples: no interval to show
        pos = max(1, min(self.length, pos))
        cursor = self._cursor
        if cursor is not None and self.pos < pos <= self.pos + self.history.capacity:
            for _ in range(pos - self.pos):
                self._advance(cursor)
        elif pos != self.pos or cursor is None:
            first = max(0, pos - self.history.capacity)
            if cursor is not None:
                cursor.close()
            cursor = self._cursor = self.recording.read(first)
            self.history = History(self.history.capacity)
            self.markers.clear()
            self.last_sample = next(cursor)
            self._mark_events(cursor)
            for _ in range(pos - first):
                self._advance(cursor)
        self.pos = pos
        sched = {d.name: d.scheduler for d in self._start}
        sched.update(cursor.schedulers)
        self.devices = [replace(d, scheduler=sched.get(d.name, d.scheduler)) for d in self._start]

    def _advance(self, cursor: Cursor) -> None:
        prev = self.last_sample
        assert prev is not None  # a seek reads the window's first sample before it advances
        cur = next(cursor)
        rates = compute_rates(prev, cur)
        self.history.append(rates)
        self.last_rates, self.last_sample = rates, cur
        self._mark_events(cursor)

    def _mark_events(self, cursor: Cursor) -> None:
        for e in cursor.events:
            self.markers.append(Marker(e.time, e.device, e.label, "outside"))
            self.marks_made += 1

    @property
    def elapsed(self) -> float:
        """Seconds from the recording's first sample to the shown moment."""
        return (self.last_rates.time - self.recording.t0) if self.last_rates else 0.0

    @property
    def span(self) -> float:
        return self.recording.span


@dataclass
class Ticker:
    """Absolute deadlines (start + k*interval) so a loop of ``step``s does not drift; waits on ``stop``."""

    interval: float
    wait: Callable[[float], object] = time.sleep
    start: float = field(default_factory=time.monotonic)
    k: int = 0

    def next(self) -> None:
        self.k += 1
        delay = self.start + self.k * self.interval - time.monotonic()
        if delay > 0:
            self.wait(delay)
