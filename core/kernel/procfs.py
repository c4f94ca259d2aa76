"""Raw counters from /proc/diskstats and /proc/stat: pure parsers plus thin readers with a movable root."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class DiskCounters(NamedTuple):
    """One /proc/diskstats line (Documentation/admin-guide/iostats.rst).

    Fields missing from older kernels are 0: 14 columns before 4.18 (no discards), 18 before 5.5 (no flushes).
    """

    major: int
    minor: int
    reads: int
    reads_merged: int
    sectors_read: int
    ms_reading: int
    writes: int
    writes_merged: int
    sectors_written: int
    ms_writing: int
    in_flight: int
    io_ticks: int
    time_in_queue: int
    discards: int = 0
    discards_merged: int = 0
    sectors_discarded: int = 0
    ms_discarding: int = 0
    flushes: int = 0
    ms_flushing: int = 0


_DISK_VALUES = len(DiskCounters._fields) - 2  # counters after major, minor


def _counter(text: str) -> bool:
    # int() would also take "-5", "+5", "1_000" and non-ASCII digits; a kernel counter is none of those.
    return text.isascii() and text.isdigit() and len(text) <= 20


def parse_diskstats_line(line: str) -> tuple[str, DiskCounters] | None:
    """One line of /proc/diskstats (14, 18 or 20 columns); None for anything else."""
    parts = line.split()
    n = len(parts)
    if n != 20 and n != 18 and n != 14:
        return None
    if not all(_counter(p) for p in parts[:2] + parts[3:]):
        return None
    values = list(map(int, parts[3:]))
    major, minor = int(parts[0]), int(parts[1])
    if n < 20:
        values.extend([0] * (_DISK_VALUES - len(values)))
    return parts[2], DiskCounters(major, minor, *values)


def parse_diskstats(text: str) -> dict[str, DiskCounters]:
    """Parse /proc/diskstats text; lines of 14, 18 and 20 columns are accepted, others ignored."""
    disks: dict[str, DiskCounters] = {}
    for line in text.splitlines():
        parsed = parse_diskstats_line(line)
        if parsed is not None:
            disks[parsed[0]] = parsed[1]
    return disks


def read_diskstats(root: str | Path = "/") -> dict[str, DiskCounters]:
    return parse_diskstats(Path(root, "proc/diskstats").read_text())


class CpuCounters(NamedTuple):
    """One cpu line of /proc/stat, in USER_HZ ticks. ``user`` includes guest, ``nice`` includes guest_nice."""

    user: int
    nice: int
    system: int
    idle: int
    iowait: int = 0
    irq: int = 0
    softirq: int = 0
    steal: int = 0
    guest: int = 0
    guest_nice: int = 0


def parse_proc_stat(text: str) -> dict[str, CpuCounters]:
    """CPU lines of /proc/stat keyed "all", "0", "1", ...; offline CPUs simply have no line."""
    cpus: dict[str, CpuCounters] = {}
    for line in text.splitlines():
        if not line.startswith("cpu"):
            if cpus:
                break  # cpu lines come first; stop before intr/ctxt
            continue
        parts = line.split()
        key = parts[0][3:] or "all"
        if not all(_counter(p) for p in parts[1:11]):
            continue
        values = [int(p) for p in parts[1:11]]
        if len(values) < 4:
            continue
        cpus[key] = CpuCounters(*values)
    return cpus


def read_proc_stat(root: str | Path = "/") -> dict[str, CpuCounters]:
    return parse_proc_stat(Path(root, "proc/stat").read_text())
