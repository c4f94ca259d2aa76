"""The CPU time of the kernel's workers that submit block IO: the ``kworker`` threads, read per thread from their
stat (utime + stime, clock ticks), as pidstat reads them; a kernel thread is a thread group of its own, so
/proc/PID/stat is its one task's /proc/PID/task/PID/stat.

With any scheduler but none, blk-mq may dispatch a queue's requests from the kblockd workqueue instead of the
submitting task (blk_mq_run_hw_queue's async path): that CPU shows on no process of the workload. A kworker serves
whichever workqueue has work, and names the last one it ran after a dash ("kworker/1:1H-kblockd", since 4.20:
wq_worker_comm), so a worker counts when it names kblockd or the device's own workqueue (the loop driver's
"loop3") at either edge of the window: other kworkers (a filesystem's, writeback's, memory reclaim's) are another
load. kblockd is one workqueue for every disk: its workers' time is the machine's block dispatch during the window,
not the device's alone (nothing in /proc tells it apart). A worker that ran kblockd work between two other names is
missed: the figure is a lower bound of every block worker's.

Pure parsing of stat text; a thin reader with a movable root. Bounded: at most ``MAX_TASKS`` threads are read (a
machine has a few thousand), each stat line at most 4 KiB.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from iosched.core.kernel.processes import stat_fields

PF_KTHREAD = 0x00200000  # include/linux/sched.h: a kernel thread
MAX_TASKS = 100_000
BLOCK_QUEUES = ("kblockd",)  # the block layer's own workqueue (block/blk-core.c)


@dataclass(frozen=True)
class WorkerTime:
    comm: str  # "kworker/1:1H-kblockd"
    ticks: int  # utime + stime, clock ticks since it started


def parse_worker(text: str) -> WorkerTime | None:
    """A kernel worker's name and CPU ticks from its stat text; None for any other task or a line that does not
    parse (a user thread calling itself kworker has no PF_KTHREAD flag)."""
    start, end = text.find("("), text.rfind(")")
    fields = stat_fields(text)
    if start < 0 or end < start or fields is None:
        return None
    comm = text[start + 1:end]
    flags, utime, stime = fields[6], fields[11], fields[12]  # fields 9, 14 and 15 of proc(5)
    if not comm.startswith("kworker/") or not all(x.isascii() and x.isdigit() and len(x) <= 20
                                                   for x in (flags, utime, stime)):
        return None
    if not int(flags) & PF_KTHREAD:
        return None
    return WorkerTime(comm, int(utime) + int(stime))


Workers = dict[int, WorkerTime]  # tid -> its name and ticks


def read_workers(root: str | Path = "/") -> Workers:
    """Every kernel worker thread now (kworkers are kernel threads, each its own thread group)."""
    proc = Path(root, "proc")
    out: Workers = {}
    try:
        with os.scandir(proc) as entries:
            pids = [e.name for e in entries if e.name.isascii() and e.name.isdigit()]
    except OSError:
        return out
    for pid in pids[:MAX_TASKS]:
        try:
            with open(proc / pid / "stat", "rb") as f:
                text = f.read(4096).decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        w = parse_worker(text)
        if w is not None:
            out[int(pid)] = w
    return out


def _queue(comm: str) -> str:
    """The workqueue a worker names after its dash ("" when it names none)."""
    _, dash, queue = comm.partition("-")
    return queue if dash else ""


def worker_seconds(before: Workers, after: Workers, device: str, hz: int = 100) -> float:
    """CPU seconds the device's workers spent between two reads: each worker present at both whose name, at either
    read, is kblockd's or ``device``'s workqueue (see the module's docstring)."""
    mine = (*BLOCK_QUEUES, device)
    ticks = 0
    for tid, b in after.items():
        a = before.get(tid)
        if a is None or b.ticks < a.ticks:  # a new worker with a reused tid is another thread
            continue
        if _queue(a.comm) in mine or _queue(b.comm) in mine:
            ticks += b.ticks - a.ticks
    return ticks / hz


def clock_ticks() -> int:
    """USER_HZ: the unit of /proc's times (100 on Linux)."""
    try:
        return os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError):
        return 100
