"""What competes with an experiment, by name: processes outside iosched's own tree that use a CPU, and other block
devices under load, between two looks at /proc (each process's /proc/PID/stat, /proc/diskstats, /proc/uptime).

Pure functions of the two looks decide who is named (``cpu_hogs``, ``device_loads``); ``look`` reads them, bounded
(at most ``MAX_PROCESSES`` processes, 4 KiB of each). iosched's own tree (this process and its descendants: fio, a
command under test) and kernel threads are never named (a loop device's worker threads serve the tested device
too), nor are the disks the tested device's IO reaches itself (a loop device's backing file's disk, a dm or md
device's members): their load is the experiment's own.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Set
from dataclasses import dataclass
from pathlib import Path

from iosched.core.kernel.devices import disks_below, disks_holding
from iosched.core.kernel.processes import stat_fields
from iosched.core.kernel.procfs import DiskCounters, read_diskstats
from iosched.core.kernel.sysfs import read_attr

HOG_PERCENT = 25.0  # of one CPU, over the window: a process worth naming
DEVICE_UTIL = 25.0  # percent of the window a device was busy
DEVICE_MB_S = 20.0  # or this much moved, whatever its util says (a device with internal queueing)
MAX_PROCESSES = 8192  # processes read at one look; the rest are not looked at
NAMED_AT_MOST = 3  # of each kind, per look; busiest first
KTHREADD = 2  # the parent of every kernel thread


@dataclass(frozen=True)
class ProcTimes:
    pid: int
    ppid: int
    comm: str
    start: int  # clock ticks after boot: tells a reused pid apart
    cpu: int  # user and system clock ticks so far


def parse_proc_times(pid: int, text: str) -> ProcTimes | None:
    """One /proc/PID/stat text as the times it holds; None when it is not one."""
    fields = stat_fields(text)
    head, paren, _ = text.rpartition(")")
    if fields is None or not paren or "(" not in head:
        return None
    comm = head.split("(", 1)[1][:32]
    try:
        ppid, utime, stime, start = int(fields[1]), int(fields[11]), int(fields[12]), int(fields[19])
    except ValueError:
        return None
    if min(ppid, utime, stime, start) < 0:
        return None
    shown = comm if comm.isprintable() else repr(comm)[1:-1]  # a name is the process's to choose: no control bytes
    return ProcTimes(pid, ppid, shown, start, utime + stime)


def own_tree(procs: Mapping[int, ProcTimes], me: int) -> set[int]:
    """``me`` and every process descended from it."""
    children: dict[int, list[int]] = {}
    for p in procs.values():
        children.setdefault(p.ppid, []).append(p.pid)
    out, todo = {me}, [me]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out


@dataclass(frozen=True)
class Hog:
    pid: int
    comm: str
    percent: float  # of one CPU over the window

    def words(self) -> str:
        return f"{self.comm} (pid {self.pid}) {self.percent:.0f}% of a CPU"


def cpu_hogs(before: Mapping[int, ProcTimes], after: Mapping[int, ProcTimes], seconds: float, hz: float,
             own: Set[int], at_least: float = HOG_PERCENT) -> list[Hog]:
    """Processes outside ``own`` (and not kernel threads) that used at least ``at_least`` percent of one CPU over the
    ``seconds`` between the two looks, busiest first. A process born between them counts from nothing."""
    if seconds <= 0 or hz <= 0:
        return []
    out = []
    for pid, p in after.items():
        if pid in own or pid == KTHREADD or p.ppid == KTHREADD:
            continue
        was = before.get(pid)
        used = p.cpu - (was.cpu if was is not None and was.start == p.start else 0)
        percent = 100.0 * used / hz / seconds
        if percent >= at_least:
            out.append(Hog(pid, p.comm, percent))
    out.sort(key=lambda h: (-h.percent, h.pid))
    return out


@dataclass(frozen=True)
class DeviceLoad:
    name: str
    iops: float
    mb_s: float
    util: float  # percent

    def words(self) -> str:
        return f"{self.name} {_rate(self.iops)} IO/s, {self.mb_s:.0f} MB/s, {self.util:.0f}% busy"


def _rate(x: float) -> str:
    return f"{x / 1000:.1f}k" if x >= 1000 else f"{x:.0f}"


def device_loads(before: Mapping[str, DiskCounters], after: Mapping[str, DiskCounters], seconds: float,
                 disks: Set[str], mine: Set[str], util: float = DEVICE_UTIL,
                 mb_s: float = DEVICE_MB_S) -> list[DeviceLoad]:
    """Whole disks (``disks``) other than ``mine`` busy at least ``util`` percent of the window, or moving at least
    ``mb_s``, busiest first. A counter that went back (a device detached and attached again) gives nothing."""
    if seconds <= 0:
        return []
    out = []
    for name in disks - mine:
        a, b = before.get(name), after.get(name)
        if a is None or b is None or (a.major, a.minor) != (b.major, b.minor):
            continue
        ios = (b.reads - a.reads) + (b.writes - a.writes)
        sectors = (b.sectors_read - a.sectors_read) + (b.sectors_written - a.sectors_written)
        ticks = b.io_ticks - a.io_ticks
        if min(ios, sectors, ticks) < 0:
            continue
        load = DeviceLoad(name, ios / seconds, sectors * 512 / 1e6 / seconds, min(100.0, ticks / 10.0 / seconds))
        if load.util >= util or load.mb_s >= mb_s:
            out.append(load)
    out.sort(key=lambda d: (-d.util, -d.mb_s, d.name))
    return out


def own_disks(device: str, root: str | Path = "/") -> set[str]:
    """The disks the tested device's IO reaches: itself, a dm or md device's members, a loop device's backing file's
    disks."""
    out = {device}
    sysdir = Path(root, "sys/block", device)
    dev = read_attr(sysdir / "dev")
    if dev is not None:
        out.update(disks_below(dev, root))
    backing = read_attr(sysdir / "loop/backing_file")
    if backing:
        with contextlib.suppress(OSError, ValueError):
            out.update(disks_holding(Path(root, backing.lstrip("/")), root))
    return out


@dataclass(frozen=True)
class Look:
    """One look at the machine: the time since boot, every process's times, every disk's counters."""

    uptime: float
    procs: dict[int, ProcTimes]
    disks: dict[str, DiskCounters]
    whole: frozenset[str]  # the whole disks (names under /sys/block)


def look(root: str | Path = "/") -> Look | None:
    """The machine now; None when /proc cannot say."""
    try:
        uptime = float(Path(root, "proc/uptime").read_text().split()[0])
        disks = read_diskstats(root)
        names = [n for n in os.listdir(Path(root, "proc")) if n.isascii() and n.isdigit()][:MAX_PROCESSES]
        whole = frozenset(os.listdir(Path(root, "sys/block")))
    except (OSError, ValueError, IndexError):
        return None
    procs: dict[int, ProcTimes] = {}
    for n in names:
        try:
            with open(Path(root, "proc", n, "stat"), "rb") as f:
                text = f.read(4096).decode(errors="replace")
        except OSError:
            continue
        p = parse_proc_times(int(n), text)
        if p is not None:
            procs[p.pid] = p
    return Look(uptime, procs, disks, whole)


def competitors(before: Look, after: Look, mine: Set[str], me: int | None = None,
                hz: float | None = None) -> tuple[list[Hog], list[DeviceLoad]]:
    """Who competed between two looks: processes outside iosched's tree, and disks other than ``mine``."""
    seconds = after.uptime - before.uptime
    hz = hz if hz is not None else float(os.sysconf("SC_CLK_TCK"))
    own = own_tree(after.procs, os.getpid() if me is None else me)
    return (cpu_hogs(before.procs, after.procs, seconds, hz, own),
            device_loads(before.disks, after.disks, seconds, after.whole, mine))
