"""One sampler, many views: a cheap tick that reads /proc/diskstats and /proc/stat, and rates between ticks.

The TUI, `iosched watch` and the experiment runner all consume the Sample/Rates produced here.
"""

from __future__ import annotations

import itertools
import os
import time
from array import array
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from iosched.core.kernel.procfs import CpuCounters, DiskCounters, parse_diskstats_line, parse_proc_stat
from iosched.core.kernel.sysfs import multipath_head
from iosched.core.live.rates import CpuRates, DiskRates, cpu_rates, disk_rates


@dataclass(frozen=True)
class Sample:
    """Raw counters of every whole disk and CPU, taken at ``time`` (monotonic seconds)."""

    time: float
    disks: dict[str, DiskCounters]
    cpus: dict[str, CpuCounters]


@dataclass(frozen=True)
class Rates:
    """Per-disk and per-CPU rates over the interval ``prev.time`` .. ``time``."""

    time: float
    interval: float
    disks: dict[str, DiskRates]
    cpus: dict[str, CpuRates]


def _ios(c: DiskCounters) -> int:
    return c.reads + c.writes + c.discards + c.flushes


def fold_multipath(disks: dict[str, DiskCounters]) -> dict[str, DiskCounters]:
    """Give a multipath namespace the summed counters of its hidden paths when its own stay at zero.

    With native NVMe multipath the IO is accounted on the hidden nvmeXcYnZ paths, so the namespace the
    user knows would otherwise show no IO at all. Paths are dropped from the result either way.
    """
    paths: dict[str, list[DiskCounters]] = {}
    out: dict[str, DiskCounters] = {}
    for name, c in disks.items():
        head = multipath_head(name)
        if head is None:
            out[name] = c
        else:
            paths.setdefault(head, []).append(c)
    for head, counters in paths.items():
        own = out.get(head)
        if own is None or _ios(own) > 0:
            continue
        summed = [sum(vals) for vals in zip(*counters)]
        out[head] = DiskCounters(own.major, own.minor, *summed[2:])
    return out


_ZERO_RATES = DiskRates._make([0.0] * (len(DiskRates._fields) - 1) + [0])  # in_flight, the last, is a count


def compute_rates(prev: Sample, cur: Sample) -> Rates:
    """Rates between two samples; a disk or CPU present in only one of them gets none for this interval."""
    dt = cur.time - prev.time
    disks: dict[str, DiskRates] = {}
    if dt > 0:
        for name, c in cur.disks.items():
            p = prev.disks.get(name)
            if p is None:
                continue
            if p == c:
                # Idle device: identical counters, nothing to compute (most devices, most ticks).
                disks[name] = _ZERO_RATES if not c.in_flight else _ZERO_RATES._replace(in_flight=c.in_flight)
                continue
            r = disk_rates(p, c, dt)
            if r is not None:
                disks[name] = r
    cpus = {k: cpu_rates(prev.cpus[k], c) for k, c in cur.cpus.items() if k in prev.cpus}
    return Rates(time=cur.time, interval=dt, disks=disks, cpus=cpus)


class Sampler:
    """Takes samples of whole disks and CPUs under ``root``.

    Cheap by design (it runs every tick): diskstats lines that did not change since the last tick are not
    parsed again, and the set of whole disks is re-listed only when the set of names in diskstats changes.
    """

    def __init__(self, root: str | Path = "/") -> None:
        self.root = Path(root)
        self._diskstats = str(self.root / "proc/diskstats")
        self._stat = str(self.root / "proc/stat")
        self._sys_block = self.root / "sys/block"
        self._line_cache: dict[str, tuple[str, DiskCounters]] = {}
        self._names_seen: frozenset[str] = frozenset()
        self._whole: frozenset[str] = frozenset()

    def _whole_disks(self, names: frozenset[str]) -> frozenset[str]:
        if names != self._names_seen:
            self._names_seen = names
            try:
                self._whole = frozenset(os.listdir(self._sys_block))
            except FileNotFoundError:
                self._whole = names  # no sysfs under this root: take every line as a disk
        return self._whole

    def _read_disks(self) -> dict[str, DiskCounters]:
        with open(self._diskstats, "rb") as f:
            text = f.read().decode()
        cache = self._line_cache
        fresh: dict[str, tuple[str, DiskCounters]] = {}
        disks: dict[str, DiskCounters] = {}
        for line in text.splitlines():
            hit = cache.get(line)
            if hit is None:
                parsed = parse_diskstats_line(line)
                if parsed is None:
                    continue
                hit = parsed
            fresh[line] = hit
            disks[hit[0]] = hit[1]
        self._line_cache = fresh
        whole = self._whole_disks(frozenset(disks))
        disks = {n: c for n, c in disks.items() if n in whole}
        return fold_multipath(disks)

    def take(self) -> Sample:
        disks = self._read_disks()
        with open(self._stat, "rb") as f:
            cpus = parse_proc_stat(f.read().decode())
        # One clock reading next to the reads: the interval is measured, never assumed.
        return Sample(time=time.monotonic(), disks=disks, cpus=cpus)


_T = TypeVar("_T")

# A device's point in the history: its DiskRates as one array of doubles, about 250 bytes where the
# NamedTuple of 23 float objects takes about 790 (40 busy devices over a full window: 13.6 MB, not 37.4;
# bench/history_memory.py).
_DISK_INDEX = {name: i for i, name in enumerate(DiskRates._fields)}


@dataclass
class History:
    """Bounded rate history for graphs: ``capacity`` points per series, oldest dropped first."""

    capacity: int
    # Only these CPU series are kept: the views draw the "all" line and each CPU's latest figure (from the
    # rates, not the history); 1200 points of every CPU of a 64-CPU server would be about 30 MB.
    cpu_names: tuple[str, ...] = ("all",)
    times: deque[float] = field(init=False)
    disks: dict[str, deque[array[float] | None]] = field(init=False, default_factory=dict)
    cpus: dict[str, deque[CpuRates | None]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.times = deque(maxlen=self.capacity)

    def append(self, rates: Rates) -> None:
        n_before = len(self.times)
        self.times.append(rates.time)
        self._extend(self.disks, {name: array("d", value) for name, value in rates.disks.items()}, n_before)
        self._extend(self.cpus, {k: v for k, v in rates.cpus.items() if k in self.cpu_names}, n_before)

    def _extend(self, store: dict[str, deque[_T | None]], values: dict[str, _T], n_before: int) -> None:
        # Every series stays aligned with ``times``: a device absent this tick gets a gap (None).
        for name, value in values.items():
            series = store.get(name)
            if series is None:
                series = store[name] = deque([None] * min(n_before, self.capacity), maxlen=self.capacity)
            elif series and (last := series[-1]) is not None and last == value:
                # An idle device repeats one all-zero record tick after tick: holding one object instead of
                # a new one each time keeps a full window of 40 idle devices near 0.4 MB instead of about 12 MB.
                value = last
            series.append(value)
        for name in store.keys() - values.keys():
            store[name].append(None)
        # Forget series that are all gaps (device gone for the whole window).
        for name in [n for n, s in store.items() if s[-1] is None and not any(s)]:  # a row is never falsy
            del store[name]

    def disk_series(self, name: str, field_name: str, last: int | None = None) -> list[float | None]:
        """One field of one disk, oldest first; ``last`` keeps only the newest points (what a graph shows)."""
        series = _tail(self.disks.get(name, ()), last)
        i = _DISK_INDEX[field_name]
        return [None if r is None else r[i] for r in series]

    def recent_times(self, last: int | None = None) -> list[float]:
        return _tail(self.times, last)

    def cpu_rates(self, name: str, last: int | None = None) -> list[CpuRates | None]:
        return _tail(self.cpus.get(name, ()), last)


def _tail(items: Sequence[_T], last: int | None) -> list[_T]:
    if last is None or last >= len(items):
        return list(items)
    return list(itertools.islice(items, len(items) - last, None))

