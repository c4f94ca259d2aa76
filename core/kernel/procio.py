"""Per-process IO without tracing: /proc/PID/io through psutil, system-wide (no per-device split).

This is what `iosched top` and the TUI show when block-layer tracing is unavailable. ``read_bytes`` and
``write_bytes`` count what a process caused to be fetched from or sent to storage (write_bytes at the time
pages are dirtied, so writeback is charged to the writer, not to the flusher thread).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psutil


@dataclass(frozen=True)
class ProcCounters:
    pid: int
    comm: str
    create_time: float  # tells a reused pid apart
    read_bytes: int
    write_bytes: int
    read_count: int  # syscalls, not block IOs
    write_count: int


@dataclass(frozen=True)
class ProcessRate:
    pid: int
    comm: str
    read_bytes_s: float
    write_bytes_s: float

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "comm": self.comm, "read_bytes_s": round(self.read_bytes_s, 1),
                "write_bytes_s": round(self.write_bytes_s, 1)}


def read_process_io() -> dict[int, ProcCounters]:
    """Counters of every process we may read (others are skipped: not root, or gone meanwhile)."""
    out: dict[int, ProcCounters] = {}
    for p in psutil.process_iter(["pid", "name", "create_time"]):
        try:
            io = p.io_counters()
        except (psutil.Error, OSError):
            continue
        out[p.pid] = ProcCounters(p.pid, p.info.get("name") or "?", p.info.get("create_time") or 0.0,
                                  io.read_bytes, io.write_bytes, io.read_count, io.write_count)
    return out


def process_rates(prev: Mapping[int, ProcCounters], cur: Mapping[int, ProcCounters], dt: float,
                  top: int | None = None) -> list[ProcessRate]:
    """Bytes per second per process between two readings, busiest first; idle processes left out.

    A process seen only once, or whose pid was reused (another start time), has no rate this interval.
    """
    if dt <= 0:
        return []
    rates = []
    for pid, c in cur.items():
        p = prev.get(pid)
        if p is None or p.create_time != c.create_time:
            continue
        rd = max(c.read_bytes - p.read_bytes, 0)
        wr = max(c.write_bytes - p.write_bytes, 0)
        if rd or wr:
            rates.append(ProcessRate(pid, c.comm, rd / dt, wr / dt))
    rates.sort(key=lambda r: (-(r.read_bytes_s + r.write_bytes_s), r.pid))
    return rates[:top] if top is not None else rates
