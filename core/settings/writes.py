"""The one door for privileged writes to sysfs: validate, journal the original, write once, read back.

Kernel facts that shape this (6.x): the scheduler file accepts junk after 15 characters, any string that
starts with "none" and an empty write as a silent no-op; some devices accept a write and change nothing;
a buffered text-mode write reports EINVAL only at close(). So callers pass exact tokens, the write is one
unbuffered os.write(), and the value is always read back.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from iosched.core.base.errors import BadInput, DeviceGone, IoschedError, NotPermitted, WriteNotApplied, shown
from iosched.core.base.outfile import remove_file, write_file
from iosched.core.kernel.sysfs import check_device_name, parse_scheduler, read_attr, read_int
from iosched.core.settings.device_lock import restoring
from iosched.core.settings.journal import Journal, JournalEntry, default_run_dir, new_entry

# Queue knobs the tool may change besides the scheduler and its iosched/* tunables.
QUEUE_KNOBS = frozenset({
    "nr_requests", "read_ahead_kb", "rq_affinity", "nomerges", "wbt_lat_usec", "max_sectors_kb",
    "add_random", "io_poll_delay",
})
_TUNABLE = re.compile(r"^queue/iosched/[a-z0-9_]{1,40}$")
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
    if attr == "queue/scheduler" or _TUNABLE.match(attr):
        return
    if attr.startswith("queue/") and attr[6:] in QUEUE_KNOBS:
        return
    raise BadInput(f"{attr} is not a setting iosched changes")


def _current_value(path: Path, attr: str) -> str | None:
    text = read_attr(path)
    if text is None:
        return None
    if attr == "queue/scheduler":
        return parse_scheduler(text)[0]
    return text


def _raw_write(path: Path, value: str, device: str, attr: str) -> float:
    """One unbuffered write; returns the seconds it took. Errors become our own exceptions."""
    t0 = time.perf_counter()
    try:
        fd = os.open(path, os.O_WRONLY)
    except FileNotFoundError as e:
        raise DeviceGone(f"{device} is gone (no {attr})") from e
    except PermissionError as e:
        raise NotPermitted(f"permission denied writing {device} {attr}: run as root") from e
    try:
        os.write(fd, value.encode())
    except OSError as e:
        if e.errno == errno.EINVAL:
            raise IoschedError(f"the kernel refused {value!r} for {device} {attr} (invalid argument)") from e
        if e.errno in (errno.ENODEV, errno.ENXIO, errno.ENOENT):
            raise DeviceGone(f"{device} went away during the write") from e
        if e.errno in (errno.EACCES, errno.EPERM):
            raise NotPermitted(f"permission denied writing {device} {attr}: run as root") from e
        raise IoschedError(f"writing {value!r} to {device} {attr} failed: {e.strerror}") from e
    finally:
        os.close(fd)
    return time.perf_counter() - t0


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
    path = sysdir / attr
    journal = journal or Journal(default_run_dir(root))
    with journal.locked() as entries:
        old = _current_value(path, attr)
        if old is None:
            raise DeviceGone(f"{device} has no {attr} (device gone, or not available with this scheduler)")
        if old == value:
            return WriteResult(device, attr, old, value, 0.0, time.monotonic())
        key = f"{device}/{attr}"
        fresh = key not in entries
        if fresh:
            sched = None
            if attr.startswith("queue/iosched/"):
                sched = _current_value(sysdir / "queue/scheduler", "queue/scheduler")
            entries[key] = new_entry(device, attr, old, scheduler=sched, **_identity(sysdir))
            if attr == "queue/scheduler":
                _journal_reset_by_switch(entries, device, sysdir, old)
        at = time.monotonic()
        try:
            seconds = _raw_write(path, value, device, attr)
        finally:
            stored = new = _current_value(path, attr)
            if new is not None and new not in (old, value) and (attr, value) not in _MEANS_DEFAULT:
                # The kernel kept something else (clamped, rounded to its clock, overflowed): not what was
                # asked for, so the previous value goes back rather than a surprise staying in place.
                new = _put_back(path, old, device, attr)
            if fresh and new == old:
                # Nothing changed (refused, ignored, or put back): nothing to restore either.
                del entries[key]
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


def _put_back(path: Path, old: str, device: str, attr: str) -> str | None:
    """Write ``old`` again after a read-back that differed; returns what reads back then."""
    with contextlib.suppress(IoschedError):  # the read-back below says whether it went back
        _raw_write(path, old, device, attr)
    return _current_value(path, attr)


def _journal_reset_by_switch(entries: dict[str, JournalEntry], device: str, sysdir: Path, sched: str) -> None:
    """A switch resets the old scheduler's tunables and nr_requests: journal them too, so that a restore
    brings back hand-tuned values, not just the scheduler's name."""
    identity = _identity(sysdir)
    values = {f"queue/iosched/{p.name}": read_attr(p) for p in sorted((sysdir / "queue/iosched").glob("*"))}
    for attr, value in values.items():
        if value is not None and f"{device}/{attr}" not in entries:
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
    # device is under load from another iosched, detail names it), "not ours" (another process made the entry)
    status: str
    detail: str = ""


def _same_device(entry: JournalEntry, sysdir: Path) -> str | None:
    """Why the device under this name is not the one the entry was made for, or None when it is."""
    now = _identity(sysdir)
    for key in ("maj_min", "diskseq", "serial", "backing_file"):
        was, is_ = getattr(entry, key), now[key]
        if was is not None and is_ is not None and was != is_:
            return f"{key} was {was}, now {is_}"
    return None


def _order(entry: JournalEntry) -> int:
    # The scheduler first (a switch resets nr_requests and iosched/*), then knobs, then tunables.
    if entry.attr == "queue/scheduler":
        return 0
    return 2 if entry.attr.startswith("queue/iosched/") else 1


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
        return e.device in switched and (e.attr == "queue/nr_requests" or e.attr.startswith("queue/iosched/"))

    def mine(entries: dict[str, JournalEntry]) -> list[JournalEntry]:
        return sorted((e for e in entries.values() if wanted(e)), key=_order)

    def left_alone(entry: JournalEntry, held: dict[str, str]) -> RestoreOutcome | None:
        if pid is not None and entry.pid != pid:
            who = f"pid {entry.pid}" if entry.pid else "an earlier iosched that recorded no process"
            return RestoreOutcome(entry.device, entry.attr, entry.original, None, "not ours",
                                  f"first changed by {who}, not by this one")
        if entry.device in held:
            return RestoreOutcome(entry.device, entry.attr, entry.original, None, "held", held[entry.device])
        return None

    def go(todo: list[JournalEntry], entries: dict[str, JournalEntry] | None) -> None:
        with restoring({e.device for e in todo if pid is None or e.pid == pid}, root) as held:
            for entry in todo:
                skipped = left_alone(entry, held)
                if skipped is not None:
                    # Another process's take-along (nr_requests, iosched/*) is not worth naming.
                    if skipped.status == "held" or only is None or (entry.device, entry.attr) in only:
                        outcomes.append(skipped)
                    continue
                outcome = _restore_one(entry, root, dry_run=entries is None)
                outcomes.append(outcome)
                if entries is not None and outcome.status != "failed":
                    del entries[entry.key]

    if dry_run:
        go(mine(journal.entries()), None)
        return outcomes
    with journal.locked() as entries:
        go(mine(entries), entries)
    return outcomes


def _restore_one(entry: JournalEntry, root: str | Path, dry_run: bool) -> RestoreOutcome:
    def out(status: str, current: str | None = None, detail: str = "") -> RestoreOutcome:
        return RestoreOutcome(entry.device, entry.attr, entry.original, current, status, detail)

    sysdir = Path(root, "sys/block", entry.device)
    if not sysdir.is_dir():
        return out("gone", detail="device no longer exists")
    why = _same_device(entry, sysdir)
    if why:
        return out("replaced", detail=f"another device now has this name ({why}); left alone")
    path = sysdir / entry.attr
    if entry.scheduler is not None:
        sched = _current_value(sysdir / "queue/scheduler", "queue/scheduler")
        if sched != entry.scheduler:
            return out("skipped", None, f"belongs to {entry.scheduler}, device now runs {sched}")
    current = _current_value(path, entry.attr)
    if current is None:
        return out("skipped", detail=f"{entry.attr} no longer exists")
    if current == entry.original:
        return out("unchanged", current)
    if dry_run:
        return out("would restore", current)
    try:
        _raw_write(path, entry.original, entry.device, entry.attr)
    except IoschedError as e:
        return out("failed", current, str(e))
    after = _current_value(path, entry.attr)
    if after != entry.original:
        return out("failed", after, f"still reads {after!r}")
    return out("restored", current)


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
