"""A busy machine, named: what else competes with an experiment for the CPUs and the device's host.

Before the first run: a load average above the CPU count while the CPUs are busy (a load average counts tasks
waiting for IO too, and stays up for a minute after a previous experiment's own fio: alone it would cry wolf),
and other iosched experiments or jobs running (their device locks, read from /proc/locks: looking never takes
a lock, so it can never refuse a starting experiment). Said when the first run starts, not before: an experiment
refused before any run says only why.
Before the first run and over each run's window: processes outside iosched's own tree that used a good part of
a CPU, and other block devices under load, each by name (core/experiment/competitors.py: pid and command, IO/s,
MB/s and util). After each run: CPU steal in the run's window (another guest of the hypervisor took the CPUs), and
experiments that started meanwhile. Each is said once, as a note the front end shows and the result keeps: figures
measured beside another load vary with it, and the verdict's noise is then partly that load.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable
from pathlib import Path

from iosched.core.documents.document import RunDoc
from iosched.core.experiment.competitors import NAMED_AT_MOST, Look, competitors, look, own_disks
from iosched.core.kernel.procfs import read_proc_stat
from iosched.core.settings.journal import default_run_dir

STEAL_PERCENT = 5.0  # CPU steal in a run's window worth a word
BUSY_PERCENT = 50.0  # with a load average above the CPUs: CPU time in use, idle and IO wait aside
BUSY_WINDOW_S = 0.25
MAX_NAMED = 12  # other loads named over one experiment


def parse_proc_locks(text: str) -> list[tuple[int, int, int, int]]:
    """/proc/locks as (pid, major, minor, inode) of each FLOCK; lines that do not parse are skipped."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 19757 fe:00:10003349 0 EOF"; a blocked waiter's line has "->" after the id.
        if len(parts) < 6 or parts[1] != "FLOCK":
            continue
        try:
            major, minor, inode = parts[5].split(":")
            out.append((int(parts[4]), int(major, 16), int(minor, 16), int(inode)))
        except ValueError:
            continue
    return out


def other_loads(root: str | Path = "/", me: int | None = None) -> dict[str, str]:
    """Devices another live iosched holds under load, each with what its lock says ("pid 4242, compare")."""
    folder = default_run_dir(root) / "devices"
    try:
        held = {(maj, mi, ino): pid for pid, maj, mi, ino in
                parse_proc_locks(Path(root, "proc/locks").read_text(errors="replace"))}
        files = list(folder.glob("*.lock"))
    except OSError:
        return {}
    me = os.getpid() if me is None else me
    out: dict[str, str] = {}
    for f in files:
        try:
            st = f.stat()
            pid = held.get((os.major(st.st_dev), os.minor(st.st_dev), st.st_ino))
            if pid is None or pid == me:
                continue
            out[f.stem] = f.read_text(errors="replace").strip()[:80] or f"pid {pid}"
        except OSError:
            continue
    return out


def load_average(root: str | Path = "/") -> float | None:
    try:
        return float(Path(root, "proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def cpu_count(root: str | Path = "/") -> int:
    try:
        cpus = read_proc_stat(root)
    except OSError:
        return os.cpu_count() or 1
    return max(1, sum(1 for key in cpus if key != "all"))


def _cpu_times(root: str | Path) -> tuple[int, int] | None:
    """(in use, all) ticks of all CPUs; idle and IO wait are not in use (guest time is inside user and nice)."""
    try:
        c = read_proc_stat(root).get("all")
    except OSError:
        return None
    if c is None:
        return None
    total = c.user + c.nice + c.system + c.idle + c.iowait + c.irq + c.softirq + c.steal
    return total - c.idle - c.iowait, total


def cpu_busy(root: str | Path = "/", window: float = BUSY_WINDOW_S) -> float | None:
    """Percent of all CPUs' time in use over ``window`` seconds, or None."""
    a = _cpu_times(root)
    time.sleep(window)
    b = _cpu_times(root)
    if a is None or b is None or b[1] <= a[1]:
        return None
    return 100.0 * (b[0] - a[0]) / (b[1] - a[1])


class BusyWatch:
    """Says each sign of a busy machine once: ``before()`` looks at the start and ``started()`` says it when the
    first run starts; ``after_run(run)`` looks after each run. ``lines``: all that was said; ``named``: the other
    loads it named, short (a device and its holder, the load average, CPU steal, a process and its share of a CPU,
    a device and its load), for the advice's `busy`: the machine-wide signs first, then the heaviest."""

    def __init__(self, device: str, root: str | Path = "/", say: Callable[[str], None] | None = None) -> None:
        self.device = device
        self.root = root
        self.say = say or (lambda text: None)
        self.lines: list[str] = []
        self._named: list[tuple[float, str]] = []  # (weight, words): a share of a CPU or a device's util
        self._pending: list[str] | None = []
        self._seen: set[str] = set()
        self._steal = False
        self._look: Look | None = None
        self._first: Look | None = None
        self._mine: set[str] | None = None

    @property
    def named(self) -> list[str]:
        return [words for _w, words in sorted(self._named, key=lambda n: -n[0])]

    def _name(self, words: str, weight: float = math.inf) -> None:
        self._named.append((weight, words))

    def _note(self, text: str) -> None:
        if self._pending is not None:
            self._pending.append(text)
            return
        self.lines.append(text)
        self.say(text)

    def started(self) -> None:
        pending, self._pending = self._pending or [], None
        for text in pending:
            self._note(text)

    def _others(self, when: str) -> None:
        for device, holder in sorted(other_loads(self.root).items()):
            if device == self.device or device in self._seen:
                continue
            self._seen.add(device)
            self._seen.update(f"pid {pid}" for pid in re.findall(r"\bpid (\d+)", holder)[:1])  # named: not again
            self._name(f"{device} ({holder})")
            self._note(f"busy machine: another iosched loads {device} ({holder}) {when}; its IO and CPU compete "
                       "with this experiment's")

    def _competitors(self, when: str) -> None:
        """Name the processes and devices that competed since the last look, or since the first (a steady load
        that a short window can miss), each said once; and look again."""
        now = look(self.root)
        was, self._look = self._look, now
        if self._first is None:
            self._first = now
            if now is not None:
                return
        if was is None or now is None:
            return
        if self._mine is None:
            self._mine = own_disks(self.device, self.root)
        hogs, loads = competitors(was, now, self._mine)
        if self._first is not None and self._first is not was:
            more_hogs, more_loads = competitors(self._first, now, self._mine)
            hogs = sorted({h.pid: h for h in [*more_hogs, *hogs]}.values(), key=lambda h: -h.percent)
            loads = sorted({d.name: d for d in [*more_loads, *loads]}.values(), key=lambda d: -d.util)
        room = max(0, MAX_NAMED - len(self._named))  # a long advice beside a busy machine names the first few
        hogs = [h for h in hogs if f"pid {h.pid}" not in self._seen][:min(NAMED_AT_MOST, room)]
        loads = [d for d in loads if d.name not in self._seen][:max(0, min(NAMED_AT_MOST, room - len(hogs)))]
        for h in hogs:
            self._seen.add(f"pid {h.pid}")
            self._name(h.words(), h.percent)
        for d in loads:
            self._seen.add(d.name)
            self._name(d.words(), d.util)
        if hogs:
            self._note(f"busy machine: other processes used the CPUs {when}: "
                       f"{', '.join(h.words() for h in hogs)}; runs will vary with them")
        if loads:
            self._note(f"busy machine: other devices were under load {when}: "
                       f"{', '.join(d.words() for d in loads)}; runs will vary with them")

    def before(self) -> None:
        self._competitors("")  # the first look: the window below is the first to name from
        load, cpus = load_average(self.root), cpu_count(self.root)
        busy = cpu_busy(self.root)  # the window the first look at the competitors spans too
        if load is not None and load > cpus and busy is not None and busy > BUSY_PERCENT:
            self._name(f"load average {load:.1f} on {cpus} CPUs")
            self._note(f"busy machine: the load average ({load:.1f}) exceeds the {cpus} CPUs, {busy:.0f}% busy "
                       "before the first run; runs will vary with that load")
        self._others("before the first run")
        self._competitors("before the first run")

    def after_run(self, run: RunDoc) -> None:
        self.started()  # a run ended: one began (a live alternation's turns have no start of their own)
        steal = run.metrics.get("cpu_steal")
        if steal is not None and steal > STEAL_PERCENT and not self._steal:
            self._steal = True
            self._name(f"CPU steal {steal:.0f}%")
            self._note(f"busy machine: CPU steal was {steal:.0f}% in run {run.index + 1} (the "
                       "hypervisor gave the CPUs to other guests); runs will vary with it")
        self._others(f"during run {run.index + 1}")
        self._competitors(f"during run {run.index + 1}")
