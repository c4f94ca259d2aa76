"""The one door for privileged writes to sysfs: validate, journal the original, write once, read back.

Kernel facts that shape this (6.x): the scheduler file accepts junk after 15 characters, any string that
starts with "none" and an empty write as a silent no-op; some devices accept a write and change nothing;
a buffered text-mode write reports EINVAL only at close(). So callers pass exact tokens, the write is one
unbuffered os.write(), and the value is always read back.

A write can also never return: a switch freezes the queue and waits for the requests in flight, and has hung for
good (kernel bugzilla 219166). So each write is made by a child process within a deadline (``_Writer``), and one
that does not return is left to the kernel: reported, journaled with the value on its way (``PendingWrite``), and
not made again while its writer lives. A thread would not do: a thread stuck in write(2) keeps its process from
ending (the group's exit waits for every thread to leave the kernel), so iosched could not quit.

The value on its way is journaled before the request is sent (on disk, naming the writer by pid and start time) and
cleared when the answer comes: whatever ends the wait first (the deadline, Ctrl-C, SIGTERM, SIGHUP, SIGKILL) leaves
the write recorded, so a change the kernel makes after iosched has stopped waiting is still put back by a restore.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import math
import os
import re
import select
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from iosched.core.base.errors import BadInput, DeviceGone, IoschedError, NotPermitted, WriteNotApplied, shown
from iosched.core.base.outfile import remove_file, write_file
from iosched.core.kernel.modules import MODULE_NAME
from iosched.core.kernel.processes import process_start, running
from iosched.core.kernel.sysfs import (
    MOVED_TO_QUEUE,
    TUNABLE_NAME,
    check_device_name,
    parse_scheduler,
    read_attr,
    read_int,
    scheduler_tunables,
    tunable_home,
)
from iosched.core.settings.device_lock import restoring
from iosched.core.settings.journal import Journal, JournalEntry, PendingWrite, default_run_dir, new_entry
from iosched.core.settings.owners import Owner

# Queue knobs the tool may change besides the scheduler and its iosched/* tunables.
QUEUE_KNOBS = frozenset({
    "nr_requests", "read_ahead_kb", "rq_affinity", "nomerges", "wbt_lat_usec", "max_sectors_kb",
    "add_random", "io_poll_delay",
})
_VALUE = re.compile(r"^-?[A-Za-z0-9_.-]{1,40}$")


@dataclass(frozen=True)
class WriteResult:
    device: str
    attr: str
    old: str
    new: str
    seconds: float  # how long the kernel took to accept the write
    time: float  # monotonic time of the write, for markers on the timeline
    note: str = ""  # what the value read back means when it is not the one written


# Values the kernel takes as "use the default" and reads back as that default instead (block/blk-sysfs.c).
_MEANS_DEFAULT = {("queue/wbt_lat_usec", "-1")}


def _check_attr(attr: str) -> None:
    if attr == "queue/scheduler" or (attr.startswith("queue/iosched/") and TUNABLE_NAME.match(attr[14:])):
        return
    if attr.startswith("queue/") and (attr[6:] in QUEUE_KNOBS or attr[6:] in MOVED_TO_QUEUE):
        return
    raise BadInput(f"{attr} is not a setting iosched changes")


def is_tunable(attr: str) -> bool:
    """Whether ``attr`` is a scheduler's tunable, wherever the kernel keeps it: it belongs to the scheduler that ran
    when it was journaled, and a switch resets it."""
    return attr.startswith("queue/iosched/") or attr.removeprefix("queue/") in MOVED_TO_QUEUE


def _current_value(path: Path, attr: str) -> str | None:
    text = read_attr(path)
    if text is None:
        return None
    if attr == "queue/scheduler":
        return parse_scheduler(text)[0]
    return text


# --- the write itself, made by a child process that can be abandoned ----------------------------------------------

# How long the kernel may take over one write before it is reported stuck. A switch freezes the queue and waits for
# the requests in flight (tens of ms under load, seconds on a slow disk under a flood); any other attribute returns
# at once.
SWITCH_DEADLINE_S = 30.0
WRITE_DEADLINE_S = 10.0
DEADLINE_ENV = "IOSCHED_WRITE_DEADLINE"  # seconds, for every write: a slow disk, or a test
SETTLE_S = 5.0  # at most this long a put-back waits for a write of its own whose wait was interrupted


def write_deadline(attr: str) -> float:
    """How long a write of ``attr`` may take: $IOSCHED_WRITE_DEADLINE seconds when set, else its default."""
    text = os.environ.get(DEADLINE_ENV)
    if not text:
        return SWITCH_DEADLINE_S if attr == "queue/scheduler" else WRITE_DEADLINE_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0.1 <= seconds <= 3600:
        raise BadInput(f"{DEADLINE_ENV} must be seconds from 0.1 to 3600, not {shown(text)}")
    return seconds


class WriteStuck(IoschedError):
    """The kernel did not return from a write within its deadline. The writer is left to it (a child process, which
    ends once the kernel lets go); the device is left as the kernel has it; nothing reads it back meanwhile (a read
    may wait on the same lock)."""

    def __init__(self, device: str, attr: str, value: str, deadline_s: float, writer: Owner) -> None:
        self.device, self.attr, self.value, self.writer = device, attr, value, writer
        self.pending = PendingWrite(value, writer.pid, writer.start, time.time())
        super().__init__(
            f"the kernel has not returned from writing {value!r} to {device} {attr.removeprefix('queue/')} within "
            f"{deadline_s:g} s (a switch can hang: kernel bugzilla 219166); {device} is left as the kernel has it, "
            f"the write is journaled and not made again, and `iosched restore` puts back the original once the "
            f"kernel lets go")


class WritePending(IoschedError):
    """A device the kernel still owes an earlier write: nothing more is written to it until that one returns."""

    def __init__(self, entry: JournalEntry, pending: PendingWrite) -> None:
        since = time.strftime("%H:%M:%S", time.localtime(pending.since)) if pending.since else "earlier"
        super().__init__(
            f"{entry.device} still has a write the kernel has not returned from ({pending.value!r} to "
            f"{entry.attr.removeprefix('queue/')}, pid {pending.pid}, since {since}): iosched writes nothing more to "
            f"{entry.device} until it returns; `iosched restore` then puts back what it changed")


class _Abandoned(Exception):
    def __init__(self, writer: Owner) -> None:
        self.writer = writer


# The writer: reads "PATHLEN VALUELEN\n" then the path and the value, opens, writes once, answers "ok 0 SECONDS" (how
# long the open and write took), "open ERRNO" or "write ERRNO". Isolated (-I) and without site (-S): it imports only
# os, sys and time.
_CHILD = r"""
import os, sys, time
i, o = sys.stdin.buffer, sys.stdout.buffer
while True:
    head = i.readline()
    if not head:
        break
    n, m = (int(x) for x in head.split())
    path, value = i.read(n), i.read(m)
    if len(path) != n or len(value) != m:
        break
    t0 = time.perf_counter()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    except OSError as e:
        o.write(b"open %d\n" % (e.errno or 0))
        o.flush()
        continue
    try:
        os.write(fd, value)
        answer = b"ok 0 %.9f\n" % (time.perf_counter() - t0)
    except OSError as e:
        answer = b"write %d\n" % (e.errno or 0)
    os.close(fd)
    o.write(answer)
    o.flush()
"""


class _Writer:
    """The child process that makes the sysfs writes, one at a time, each within its deadline. One that does not
    return is abandoned with its child: its pipes closed, so that once the kernel lets go it finds no one to answer
    and ends (a signal would wait for the kernel all the same), reaped later; the next write starts another child.
    The child is in a session of its own (a Ctrl-C at the terminal is not for it)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.left: list[subprocess.Popen[bytes]] = []  # abandoned writers, reaped once the kernel lets them go

    def write(self, path: Path, value: str, deadline_s: float,
              sending: Callable[[Owner], None] | None = None) -> tuple[str, int, float]:
        """("ok", 0, seconds the kernel took), ("open", errno, 0) or ("write", errno, 0); _Abandoned when the deadline
        passed first. ``sending`` is told the writer just before the request goes (to journal it). Anything that
        ends the wait early (Ctrl-C, SIGTERM's SystemExit) abandons the writer as a missed deadline does: its answer
        is never read as the answer to another request."""
        p, v = os.fsencode(path), value.encode()
        request = b"%d %d\n" % (len(p), len(v)) + p + v
        with self.lock:
            self.left[:] = [c for c in self.left if c.poll() is None]
            proc = self._started()
            try:
                return self._exchange(proc, request, deadline_s, sending)
            except BaseException:
                if self.proc is proc:
                    self._abandon(proc)
                raise

    def _exchange(self, proc: subprocess.Popen[bytes], request: bytes, deadline_s: float,
                  sending: Callable[[Owner], None] | None) -> tuple[str, int, float]:
        assert proc.stdin is not None and proc.stdout is not None
        writer = Owner(proc.pid, process_start(proc.pid))
        if sending is not None:
            sending(writer)
        try:
            view = memoryview(request)
            while view:
                view = view[os.write(proc.stdin.fileno(), view):]
        except OSError as e:
            self._abandon(proc)
            raise IoschedError(f"iosched's writer process is gone ({e.strerror}): nothing was written") from e
        until = time.monotonic() + deadline_s
        answer = b""
        while not answer.endswith(b"\n"):
            ready, _, _ = select.select([proc.stdout.fileno()], [], [], max(0.0, until - time.monotonic()))
            if not ready:
                self._abandon(proc)
                raise _Abandoned(writer)
            chunk = os.read(proc.stdout.fileno(), 64)
            if not chunk:
                self._abandon(proc)
                raise IoschedError("iosched's writer process ended during the write")
            answer += chunk
        step, number, *took = answer.decode().split()
        return step, int(number), float(took[0]) if took else 0.0

    def idle(self, pid: int) -> bool:
        """Whether ``pid`` is this process's writer waiting for its next request: a write journaled as on its way
        whose answer came before the journal could say so (an interruption between the two) is not pending."""
        proc = self.proc
        return proc is not None and proc.pid == pid and proc.poll() is None and not self.lock.locked()

    def _started(self) -> subprocess.Popen[bytes]:
        if self.proc is None or self.proc.poll() is not None:
            if not sys.executable:
                raise IoschedError("no Python interpreter to run the writer process with")
            self.proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", _CHILD], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0,
                                         start_new_session=True)
        return self.proc

    def _abandon(self, proc: subprocess.Popen[bytes]) -> None:
        for pipe in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError):
                pipe and pipe.close()
        self.left.append(proc)
        self.proc = None

    def settle(self, pid: int, until: float) -> None:
        """When ``pid`` is a writer this process abandoned because its wait was cut short (Ctrl-C, SIGTERM), wait
        for the kernel to let it go, up to ``until`` (time.time()): a switch usually returns within milliseconds, and
        the put-back that follows then reads the device instead of leaving it, and its entries, to a later restore."""
        for proc in self.left:
            if proc.pid == pid:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(max(0.0, min(until - time.time(), SETTLE_S)))

    def close(self) -> None:
        """At exit: the idle writer reads the end of its input and ends; an abandoned one is left to the kernel."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(1)


_WRITER = _Writer()
atexit.register(_WRITER.close)


def _raw_write(path: Path, value: str, device: str, attr: str,
               sending: Callable[[Owner], None] | None = None) -> float:
    """One write, made by the writer process within its deadline; returns the seconds the kernel took over it (as the
    writer timed its open and write: not the writer's start). Errors become our own exceptions; WriteStuck when the
    kernel has not returned by the deadline. ``sending``: told the writer before the request goes."""
    deadline = write_deadline(attr)
    try:
        step, err, seconds = _WRITER.write(path, value, deadline, sending)
    except _Abandoned as e:
        raise WriteStuck(device, attr, value, deadline, e.writer) from None
    if step == "open":
        if err == errno.ENOENT:
            raise DeviceGone(f"{device} is gone (no {attr})")
        if err in (errno.EACCES, errno.EPERM):
            raise NotPermitted(f"permission denied writing {device} {attr}: run as root")
        raise IoschedError(f"opening {device} {attr} failed: {os.strerror(err)}")
    if step == "write":
        if err == errno.EINVAL:
            raise IoschedError(f"the kernel refused {value!r} for {device} {attr} (invalid argument)")
        if err in (errno.ENODEV, errno.ENXIO, errno.ENOENT):
            raise DeviceGone(f"{device} went away during the write")
        if err in (errno.EACCES, errno.EPERM):
            raise NotPermitted(f"permission denied writing {device} {attr}: run as root")
        raise IoschedError(f"writing {value!r} to {device} {attr} failed: {os.strerror(err)}")
    return seconds


def _owed(entries: dict[str, JournalEntry], clear: bool) -> dict[str, tuple[JournalEntry, PendingWrite]]:
    """Device -> its entry whose write the kernel still holds, for each device the kernel owes a write (its writer
    runs, and is not this process's idle one). With ``clear``, a pending write whose writer has ended (the kernel let
    go) is cleared from its entry, which stays: what the write did is read like any change."""
    out: dict[str, tuple[JournalEntry, PendingWrite]] = {}
    for key, e in list(entries.items()):
        if e.pending is None:
            continue
        if running(e.pending.pid, e.pending.start) and not _WRITER.idle(e.pending.pid):
            out.setdefault(e.device, (e, e.pending))
        elif clear:
            entries[key] = replace(e, pending=None)
    return out


def _owed_words(entry: JournalEntry, pending: PendingWrite) -> str:
    return (f"the kernel has not returned from writing {pending.value!r} to {entry.attr.removeprefix('queue/')} (pid "
            f"{pending.pid}): nothing is written to {entry.device} until it does")


def _settle(entries: Iterable[JournalEntry]) -> None:
    """Wait for the writes among ``entries`` still on their way whose writers this process abandoned when their wait
    was cut short (see _Writer.settle), each up to its deadline."""
    for e in entries:
        if e.pending is not None:
            _WRITER.settle(e.pending.pid, e.pending.since + write_deadline(e.attr))


def owed_write(device: str, root: str | Path = "/") -> tuple[str, str] | None:
    """When the kernel still owes ``device`` a write (journaled as on its way, its writer alive: a stuck write, or one
    whose wait was interrupted), the attribute and why nothing is written to the device meanwhile; else None. A write
    of this process's own whose wait was interrupted is waited for first (a put-back after Ctrl-C). Read without the
    journal lock."""
    entries = Journal(default_run_dir(root)).entries()
    _settle(e for e in entries.values() if e.device == device)
    held = _owed(entries, clear=False).get(device)
    return (held[0].attr, _owed_words(*held)) if held is not None else None


def _journaled_write(journal: Journal, entries: dict[str, JournalEntry], key: str, path: Path, attr: str, *,
                     value: str, device: str) -> float:
    """``_raw_write`` of the entry ``key``'s attribute, journaled before it is made: the entry's ``pending`` names the
    value and the writer, on disk before the request is sent, and is cleared when the answer comes. A write the kernel
    does not return from (WriteStuck), or whose wait something else ends (Ctrl-C, SIGTERM), stays journaled so."""

    def sending(writer: Owner) -> None:
        entries[key] = replace(entries[key], pending=PendingWrite(value, writer.pid, writer.start, time.time()))
        journal.save_now(entries)

    try:
        seconds = _raw_write(path, value, device, attr, sending)
    except WriteStuck:
        raise
    except IoschedError:
        entries[key] = replace(entries[key], pending=None)  # answered, or never sent
        raise
    entries[key] = replace(entries[key], pending=None)
    return seconds


def _identity(sysdir: Path) -> dict[str, object]:
    return {
        "maj_min": read_attr(sysdir / "dev"),
        "diskseq": read_int(sysdir / "diskseq"),
        "serial": read_attr(sysdir / "serial") or read_attr(sysdir / "device/serial") or None,
        "backing_file": read_attr(sysdir / "loop/backing_file") or None,
    }


def journal_identity(device: str, root: str | Path = "/") -> dict[str, object]:
    """The device's identity as a journal entry keeps it (maj:min, diskseq, serial, a loop's backing file)."""
    return _identity(check_device_name(device, root))


def write_attr(device: str, attr: str, value: str, root: str | Path = "/",
               journal: Journal | None = None) -> WriteResult:
    """Set ``/sys/block/DEVICE/ATTR`` to ``value``, journaling the original; raises if it does not stick."""
    sysdir = check_device_name(device, root)
    _check_attr(attr)
    if not _VALUE.match(value):
        raise BadInput(f"value {shown(value)} is not a plain token")
    write_deadline(attr)  # a bad deadline is refused before anything is journaled
    attr = tunable_home(sysdir, attr)
    path = sysdir / attr
    journal = journal or Journal(default_run_dir(root))
    stuck: WriteStuck | None = None
    stored = new = None
    with journal.locked() as entries:
        held = _owed(entries, clear=True).get(device)
        if held is not None:
            raise WritePending(*held)
        old = _current_value(path, attr)
        if old is None:
            raise DeviceGone(f"{device} has no {attr} (device gone, or not available with this scheduler)")
        if old == value:
            return WriteResult(device, attr, old, value, 0.0, time.monotonic())
        key = f"{device}/{attr}"
        fresh = key not in entries
        if fresh:
            sched = None
            if is_tunable(attr):
                sched = _current_value(sysdir / "queue/scheduler", "queue/scheduler")
            entries[key] = new_entry(device, attr, old, scheduler=sched, **_identity(sysdir))
            if attr == "queue/scheduler":
                _journal_reset_by_switch(entries, device, sysdir, old)
        at = time.monotonic()
        answered = False
        try:
            seconds = _journaled_write(journal, entries, key, path, attr, value=value, device=device)
            answered = True
        except WriteStuck as e:
            # The kernel has the write: the original stays journaled with the value on its way, so a restore knows,
            # and nothing is read back or written again until the writer ends.
            stuck = e
        except IoschedError:
            answered = True  # refused: read back below, then raised
            raise
        finally:
            # Anything else ended the wait (Ctrl-C, SIGTERM): the write stays journaled as on its way, read no more.
            if answered:
                stored = new = _current_value(path, attr)
                if new is not None and new not in (old, value) and (attr, value) not in _MEANS_DEFAULT:
                    # The kernel kept something else (clamped, rounded to its clock, overflowed): not what was
                    # asked for, so the previous value goes back rather than a surprise staying in place.
                    new = _put_back(journal, entries, key, path, old, device, attr)
                if fresh and new == old and entries[key].pending is None:
                    # Nothing changed (refused, ignored, or put back): nothing to restore either. Saved now: the
                    # entry went to disk before the write, and a refusal leaves the block by its error.
                    del entries[key]
                    journal.save_now(entries)
    if stuck is not None:
        raise stuck
    if stored is None or new is None:
        raise DeviceGone(f"{device} vanished right after the write")
    if stored != value and (attr, value) in _MEANS_DEFAULT:
        return WriteResult(device, attr, old, new, seconds, at, note="kernel default applied")
    if stored == old != value:
        raise WriteNotApplied(f"{device} accepted {value!r} for {attr} but it still reads {new!r}")
    if stored != value and new == old:
        raise WriteNotApplied(f"{device} stored {stored!r} for {attr} when given {value!r}, so the previous "
                              f"{old!r} was put back")
    if stored != value:
        raise WriteNotApplied(f"{device} stored {stored!r} for {attr} when given {value!r} and the previous "
                              f"{old!r} could not be put back (it reads {new!r}): `iosched restore` puts it back")
    return WriteResult(device, attr, old, new, seconds, at)


def _put_back(journal: Journal, entries: dict[str, JournalEntry], key: str, path: Path, old: str, device: str,
              attr: str) -> str | None:
    """Write ``old`` again after a read-back that differed (journaled as on its way, as any write); returns what reads
    back then."""
    with contextlib.suppress(IoschedError):  # the read-back below says whether it went back
        _journaled_write(journal, entries, key, path, attr, value=old, device=device)
    return _current_value(path, attr)


def _journal_reset_by_switch(entries: dict[str, JournalEntry], device: str, sysdir: Path, sched: str) -> None:
    """A switch resets the old scheduler's tunables and nr_requests: journal them too, so that a restore
    brings back hand-tuned values, not just the scheduler's name."""
    identity = _identity(sysdir)
    for attr, value in scheduler_tunables(sysdir).items():
        if f"{device}/{attr}" not in entries:
            entries[f"{device}/{attr}"] = new_entry(device, attr, value, scheduler=sched, **identity)
    nr = read_attr(sysdir / "queue/nr_requests")
    if nr is not None and f"{device}/queue/nr_requests" not in entries:
        entries[f"{device}/queue/nr_requests"] = new_entry(device, "queue/nr_requests", nr, **identity)


@dataclass(frozen=True)
class RestoreOutcome:
    device: str
    attr: str
    original: str
    current: str | None
    # "restored", "would restore", "unchanged", "gone", "replaced", "skipped", "failed"; left alone: "held" (the
    # device is under load from another iosched, detail names it), "not ours" (another process made the entry),
    # "stuck" (the kernel has not returned from a write to the device: nothing is written to it until it does)
    status: str
    detail: str = ""
    pending: PendingWrite | None = None  # "stuck" by this restore's own write: the value on its way, its writer


def _same_device(entry: JournalEntry, sysdir: Path) -> str | None:
    """Why the device under this name is not the one the entry was made for, or None when it is."""
    now = _identity(sysdir)
    for key in ("maj_min", "diskseq", "serial", "backing_file"):
        was, is_ = getattr(entry, key), now[key]
        if was is not None and is_ is not None and was != is_:
            return f"{key} was {was}, now {is_}"
    return None


def _order(entry: JournalEntry) -> int:
    # The scheduler first (a switch resets nr_requests and iosched/*), then knobs, then tunables (a moved one too:
    # the kernel scales queue/async_depth with nr_requests).
    if entry.attr == "queue/scheduler":
        return 0
    return 2 if is_tunable(entry.attr) else 1


def restore(root: str | Path = "/", journal: Journal | None = None, dry_run: bool = False,
            devices: set[str] | None = None, only: set[tuple[str, str]] | None = None,
            pid: int | None = None) -> list[RestoreOutcome]:
    """Put back every value the tool changed that still differs (only on ``devices``, and only the
    (device, attribute) pairs in ``only``, when given: a TUI undoes its own writes, not those of others).
    A scheduler in ``only`` takes along what its switch journaled on that device (nr_requests, iosched/*).
    With ``pid``, only the entries that process made (a quit): another's, or an older iosched's that
    recorded none, are left, and those in ``only`` are named as left alone.

    A device under load from another live iosched (its load lock is held) is left alone, its entries kept:
    putting its values back would invalidate that process's run, and the process puts back its own.
    Idempotent; entries done with are dropped; entries left out stay in the journal.
    """
    journal = journal or Journal(default_run_dir(root))
    outcomes: list[RestoreOutcome] = []
    switched = {device for device, attr in only or () if attr == "queue/scheduler"}

    def wanted(e: JournalEntry) -> bool:
        if devices is not None and e.device not in devices:
            return False
        if only is None or (e.device, e.attr) in only:
            return True
        return e.device in switched and (e.attr == "queue/nr_requests" or is_tunable(e.attr))

    def mine(entries: dict[str, JournalEntry]) -> list[JournalEntry]:
        return sorted((e for e in entries.values() if wanted(e)), key=_order)

    def left_alone(entry: JournalEntry, held: dict[str, str], owed: dict[str, str]) -> RestoreOutcome | None:
        if entry.device in owed:
            return RestoreOutcome(entry.device, entry.attr, entry.original, None, "stuck", owed[entry.device])
        if pid is not None and entry.pid != pid:
            who = f"pid {entry.pid}" if entry.pid else "an earlier iosched that recorded no process"
            return RestoreOutcome(entry.device, entry.attr, entry.original, None, "not ours",
                                  f"first changed by {who}, not by this one")
        if entry.device in held:
            return RestoreOutcome(entry.device, entry.attr, entry.original, None, "held", held[entry.device])
        return None

    def go(todo: list[JournalEntry], entries: dict[str, JournalEntry] | None, owed: dict[str, str]) -> None:
        with restoring({e.device for e in todo if pid is None or e.pid == pid}, root) as held:
            for entry in todo:
                skipped = left_alone(entry, held, owed)
                if skipped is not None:
                    # Another process's take-along (nr_requests, iosched/*) is not worth naming.
                    if skipped.status in ("held", "stuck") or only is None or (entry.device, entry.attr) in only:
                        outcomes.append(skipped)
                    continue
                if entries is None:
                    outcomes.append(_restore_one(entry, root, None))
                    continue
                outcome = _restore_one(entry, root, functools.partial(_journaled_write, journal, entries, entry.key,
                                                                      value=entry.original, device=entry.device))
                outcomes.append(outcome)
                if outcome.pending is not None:  # this restore's own write did not return: never made again
                    owed[entry.device] = outcome.detail
                elif outcome.status != "failed":
                    del entries[entry.key]

    def why(entries: dict[str, JournalEntry], clear: bool) -> dict[str, str]:
        return {device: f"{_owed_words(*held)}; `iosched restore` then puts back the rest"
                for device, held in _owed(entries, clear).items()}

    if dry_run:
        found = journal.entries()
        go(mine(found), None, why(found, clear=False))
        return outcomes
    with journal.locked() as entries:
        _settle(mine(entries))
        go(mine(entries), entries, why(entries, clear=True))
    return outcomes


def _restore_one(entry: JournalEntry, root: str | Path,
                 write: Callable[[Path, str], float] | None) -> RestoreOutcome:
    """Put ``entry``'s original back with ``write(path, attr)`` (None: a dry run, nothing written)."""
    def out(status: str, current: str | None = None, detail: str = "") -> RestoreOutcome:
        return RestoreOutcome(entry.device, entry.attr, entry.original, current, status, detail)

    sysdir = Path(root, "sys/block", entry.device)
    if not sysdir.is_dir():
        return out("gone", detail="device no longer exists")
    why = _same_device(entry, sysdir)
    if why:
        return out("replaced", detail=f"another device now has this name ({why}); left alone")
    attr = tunable_home(sysdir, entry.attr)  # a moved tunable is put back where this kernel keeps it
    path = sysdir / attr
    if entry.scheduler is not None:
        sched = _current_value(sysdir / "queue/scheduler", "queue/scheduler")
        if sched != entry.scheduler:
            return out("skipped", None, f"belongs to {entry.scheduler}, device now runs {sched}")
    current = _current_value(path, attr)
    if current is None:
        return out("skipped", detail=f"{entry.attr} no longer exists")
    if current == entry.original:
        return out("unchanged", current)
    if write is None:
        return out("would restore", current)
    try:
        write(path, attr)
    except WriteStuck as e:
        return replace(out("stuck", current, str(e)), pending=e.pending)
    except IoschedError as e:
        return out("failed", current, str(e))
    after = _current_value(path, attr)
    if after != entry.original:
        return out("failed", after, f"still reads {after!r}")
    return out("restored", current)


# Where modprobe is looked for: fixed places, never the PATH (root would run whatever a PATH entry holds).
MODPROBE = ("/usr/sbin/modprobe", "/sbin/modprobe", "/usr/bin/modprobe", "/bin/modprobe")


def _modprobe() -> str:
    """The first of ``MODPROBE`` that is there and that only root could have put there: the program it leads to, and
    every folder above it and above the link to it, owned by root and writable by no one else. Run by the name found
    (modprobe is often a link to kmod, which acts on the name it is run by)."""
    for candidate in MODPROBE:
        real = Path(os.path.realpath(candidate))
        if not real.is_file():
            continue
        why = _not_roots(real) or _not_roots(Path(candidate).parent)
        if why is not None:
            raise IoschedError(f"{candidate} is not run: {why}")
        return candidate
    raise IoschedError(f"modprobe is not in {' or '.join(MODPROBE[:2])} (apt-get install -y kmod)")


def _not_roots(path: Path) -> str | None:
    """Why ``path`` could have been put or changed by someone other than root, or None: it and each folder above it
    owned by root and writable by no one else (a sticky folder's other entries aside, as /tmp's)."""
    for p in (path, *path.parents):
        st = os.stat(p)
        if st.st_uid != 0:
            return f"{p} is owned by uid {st.st_uid}, not root"
        if st.st_mode & 0o022 and not (p != path and st.st_mode & stat.S_ISVTX and st.st_mode & 0o002):
            return f"{p} is writable by others than root"
    return None


def load_module(module: str) -> None:
    """``modprobe MODULE`` within the write deadline: a scheduler the kernel has not loaded (core/kernel/modules.py
    names its module). Not journaled: loading changes no device's setting, and a scheduler's module cannot be taken
    out while a device runs it; `iosched restore` leaves it loaded. A modprobe that does not end in time is left to
    the kernel like a stuck write."""
    if not MODULE_NAME.match(module):
        raise BadInput(f"{shown(module)} is not a module name")
    deadline = write_deadline("module")
    modprobe = _modprobe()
    try:
        proc = subprocess.Popen([modprobe, "--", module], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as e:
        raise IoschedError(f"cannot run {modprobe} to load {module}: {e.strerror}") from e
    try:
        _, err = proc.communicate(timeout=deadline)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            proc.kill()
        _WRITER.left.append(proc)
        raise IoschedError(f"`modprobe {module}` has not ended within {deadline:g} s; it is left to the kernel and "
                           "not run again") from None
    if proc.returncode == 0:
        return
    said = " ".join(err.decode(errors="replace").split())[:200]
    if os.geteuid() != 0:
        raise NotPermitted(f"loading {module} needs root: run as root")
    raise IoschedError(f"`modprobe {module}` failed{': ' + said if said else ''}")


def drop_caches(root: str | Path = "/") -> None:
    """sync, then drop the page cache, dentries and inodes, so a run starts cold. Changes no setting."""
    os.sync()
    try:
        with open(Path(root, "proc/sys/vm/drop_caches"), "w") as f:
            f.write("3")
    except PermissionError as e:
        raise NotPermitted("permission denied dropping caches: run as root") from e
    except OSError as e:
        raise IoschedError(f"dropping caches failed: {e.strerror}") from e


def write_rules_file(path: str | Path, text: str | None) -> None:
    """Replace a udev rules file atomically (core/base/outfile.py: a temporary file beside it, synced, renamed over
    it, the file keeping its mode and owner); ``None`` removes it. WriteRefused (nothing written) when the name
    holds a link, a folder or a device by the time it is written."""
    path = Path(path)
    if not path.parent.is_dir():
        raise BadInput(f"rules directory {path.parent} does not exist")
    try:
        if text is None:
            remove_file(path)
        else:
            write_file(path, text, sync=True)
    except PermissionError as e:
        raise NotPermitted(f"permission denied {'removing' if text is None else 'writing'} {path}: run as root") from e
    except OSError as e:
        raise IoschedError(f"{'removing' if text is None else 'writing'} {path} failed: {e.strerror}") from e
