"""Where a run started, and putting it back: the one path every ending of a run takes.

Before a run (a compare, a matrix, a live alternation, advise's tests, a fleet host's share) changes a device, it
writes down where the device stands: the scheduler, that scheduler's tunables, the queue knobs, the device's
identity, and which journal entries on it are someone else's already, in a file of its own under the run directory
(``starts/DEVICE.PID.json``, naming its process by pid and start time, core/settings/owners.py). However the run
ends (its last run, a cancel, Ctrl-C, SIGTERM, SIGHUP, a lost session), ``put_back`` puts that back and removes the
file. When its process dies without doing so (a browser tab's app killed, SIGKILL, the memory limit),
``put_back_left`` does it from the file: `iosched serve` once a tab's app is gone, and `iosched restore`.

The order is the kernel's (6.x): the scheduler first, since a switch resets nr_requests and the scheduler's
tunables; then the queue knobs, since a write to nr_requests resets mq-deadline's async_depth; then the tunables.
Then the run's own journal entries go: a value back at its original or where the run found it, a tunable of a
scheduler no longer in place (the switch back reset it). An entry whose value could not be put back stays, for
`iosched restore`; entries that were there before the run (a hand switch in the TUI, another process's) stay too.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

from iosched.core.base.decode import DecodeError, decode
from iosched.core.base.errors import IoschedError, NotPermitted
from iosched.core.base.outfile import write_file
from iosched.core.kernel.sysfs import DEVICE_NAME, MOVED_TO_QUEUE, TUNABLE_NAME, parse_scheduler, read_attr
from iosched.core.settings.device_lock import restoring
from iosched.core.settings.journal import Journal, Name, default_run_dir, registry_files, stale_registrations
from iosched.core.settings.owners import Owner
from iosched.core.settings.scheduler import available_schedulers, read_knobs, read_tunables
from iosched.core.settings.writes import QUEUE_KNOBS, WriteResult, journal_identity, owed_write, write_attr

Status = Literal["put back", "would put back", "as found", "not as found", "failed", "gone", "replaced", "held"]


@dataclass(frozen=True)
class StartingPoint:
    """A device as a run found it, and the run's process: the file under ``starts/``, as a declared type."""

    device: Name
    scheduler: str | None
    tunables: dict[str, str]  # the scheduler's queue/iosched/*, name -> value
    knobs: dict[str, str]  # the queue knobs iosched may change (writes.QUEUE_KNOBS), name -> value
    pid: int
    start: int | None = None  # the process's start time (core/settings/owners.py)
    journaled: list[str] | None = None  # keys of the journal's entries on the device before the run's first change
    maj_min: str | None = None
    diskseq: int | None = None
    serial: str | None = None
    backing_file: str | None = None

    def value_of(self, attr: str) -> str | None:
        """What ``attr`` (a path under /sys/block/DEV: queue/scheduler, queue/iosched/X, queue/X) read then."""
        if attr == "queue/scheduler":
            return self.scheduler
        if attr.startswith("queue/iosched/"):
            return self.tunables.get(attr.removeprefix("queue/iosched/"))
        name = attr.removeprefix("queue/")
        # A tunable this kernel keeps in queue/ (async_depth on newer kernels) is the scheduler's, read as one.
        return self.tunables.get(name) if name in MOVED_TO_QUEUE else self.knobs.get(name)


@dataclass(frozen=True)
class PutBack:
    """What putting a run's starting point back did, for the run's notes, serve's log and `iosched restore`."""

    device: str
    pid: int
    status: Status
    values: tuple[tuple[str, str], ...] = ()  # (name, value) written back, the scheduler first
    failed: tuple[str, ...] = ()  # what could not be put back, each with why
    detail: str = ""
    switched_at: float | None = None  # monotonic time of the switch back, for the run's timeline
    # A dry run's that needs a switch back: the scheduler's tunables as found, each written after the switch unless
    # the switch already gives it (its default), which cannot be known before switching.
    unless_default: tuple[tuple[str, str], ...] = ()

    def line(self) -> str:
        who = f"pid {self.pid}'s run"
        shown = ", ".join(f"{name} {value}" for name, value in self.values)
        more = ", ".join(f"{name} {value}" for name, value in self.unless_default)
        if self.status == "would put back" and more:
            return (f"{self.device}: would put back as {who} found it: {shown}; then each of its tunables the switch "
                    f"leaves at another value: {more}")
        if self.status in ("put back", "would put back"):
            return f"{self.device}: {self.status} as {who} found it: {shown}"
        if self.status == "as found":
            return f"{self.device}: as {who} found it: nothing to put back"
        if self.status == "not as found":
            had = ", ".join(x for x in (shown, more) if x)
            return (f"{self.device}: not as {who} found it, which had {had}; `iosched restore` puts back what the "
                    "journal holds")
        if self.status == "failed":
            done = f" ({shown} put back)" if shown else ""
            return (f"{self.device}: not all {who} changed could be put back{done}: {'; '.join(self.failed)}; "
                    "`iosched restore` tries again")
        if self.status == "held":
            return (f"{self.device}: left alone: under load from iosched ({self.detail}); `iosched restore` puts back "
                    f"what {who} changed once that ends")
        return f"{self.device}: {self.status}: {self.detail}; {who}'s starting point dropped"


def _registry(root: str | Path) -> Path:
    return default_run_dir(root) / "starts"


def _file(start: StartingPoint, root: str | Path) -> Path:
    return _registry(root) / f"{start.device}.{start.pid}.json"


def starting_point(device: str, root: str | Path = "/") -> StartingPoint:
    """The device as it stands now, and this process (nothing is written: ``note`` does that)."""
    current, _ = available_schedulers(device, root)
    me = Owner.me()
    return StartingPoint(device=device, scheduler=current, tunables=read_tunables(device, root),
                         knobs=read_knobs(device, root), pid=me.pid, start=me.start,
                         **journal_identity(device, root))  # type: ignore[arg-type]


def note(start: StartingPoint, root: str | Path = "/") -> StartingPoint:
    """Write ``start`` down before the run's first change, with the journal's entries on the device then (another's,
    left to them); returns what was written."""
    entries = Journal(default_run_dir(root)).entries()
    start = replace(start, journaled=sorted(k for k, e in entries.items() if e.device == start.device))
    reg = _registry(root)
    try:
        reg.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_file(_file(start, root), json.dumps(asdict(start)), mode=0o600)
    except PermissionError as e:
        raise NotPermitted(f"cannot write where a run starts in {reg}: run as root") from e
    except OSError as e:
        raise IoschedError(f"cannot write where a run starts in {reg}: {e.strerror}; nothing was changed") from e
    return start


def put_back(start: StartingPoint, root: str | Path = "/") -> PutBack:
    """Put the device back as ``start`` says (the scheduler, then the queue knobs, then the tunables), drop the run's
    own journal entries that are done with, and remove the file ``note`` wrote. Never raises for a value the kernel
    refuses: it is named in ``failed`` (status "failed") and its journal entry stays."""
    sysdir = Path(root, "sys/block", start.device)
    why = _not_the_same(start, root)
    if why is not None:
        _file(start, root).unlink(missing_ok=True)
        return PutBack(start.device, start.pid, "gone" if not sysdir.is_dir() else "replaced", detail=why)
    owed = _owed(start, root)
    if owed is not None:
        # The kernel still holds a write the run made (stuck, or its wait interrupted): what the device reads now may
        # change when it returns, so nothing is written and every journal entry stays for `iosched restore`.
        _file(start, root).unlink(missing_ok=True)
        return PutBack(start.device, start.pid, "failed", failed=(owed,))
    values: list[tuple[str, str]] = []
    failed: list[str] = []
    switched_at = None

    def write(attr: str, name: str, value: str) -> WriteResult | None:
        if attr != "queue/scheduler" and read_attr(sysdir / attr) == value:
            return None  # as found: no journal lock taken for it
        try:
            r = write_attr(start.device, attr, value, root)
        except IoschedError as e:
            failed.append(f"{name} {value} ({e})")
            return None
        if r.old != r.new:
            values.append((name, value))
        return r

    if start.scheduler is not None and _scheduler(sysdir) != start.scheduler:
        switched = write("queue/scheduler", "scheduler", start.scheduler)
        switched_at = switched.time if switched is not None else None
    back_on_it = _scheduler(sysdir) == start.scheduler
    for name, value in start.knobs.items():
        write(f"queue/{name}", name, value)
    if back_on_it:  # else its tunables are not there to write
        for name, value in start.tunables.items():
            write(f"queue/iosched/{name}", name, value)
    _forget_own(start, root)
    _file(start, root).unlink(missing_ok=True)
    if not sysdir.is_dir():
        return PutBack(start.device, start.pid, "gone", tuple(values), detail="the device went away")
    status: Status = "failed" if failed else "put back" if values else "as found"
    return PutBack(start.device, start.pid, status, tuple(values), tuple(failed), switched_at=switched_at)


def would_put_back(start: StartingPoint, root: str | Path = "/") -> PutBack:
    """What ``put_back`` would write (``iosched restore --dry-run``): the values that differ now; where the scheduler
    must be switched back, its tunables too (``unless_default``: the switch resets them to defaults unknown before
    it, and each that differs from the run's start is then written)."""
    sysdir = Path(root, "sys/block", start.device)
    why = _not_the_same(start, root)
    if why is not None:
        return PutBack(start.device, start.pid, "gone" if not sysdir.is_dir() else "replaced", detail=why)
    values: list[tuple[str, str]] = []
    same = _scheduler(sysdir) == start.scheduler
    if not same and start.scheduler is not None:
        values.append(("scheduler", start.scheduler))
    now = {**read_knobs(start.device, root), **(read_tunables(start.device, root) if same else {})}
    for name, value in [*start.knobs.items(), *(start.tunables.items() if same else ())]:
        if now.get(name) != value:
            values.append((name, value))
    after_switch = tuple(sorted(start.tunables.items())) if not same and start.scheduler is not None else ()
    return PutBack(start.device, start.pid, "would put back" if values else "as found", tuple(values),
                   unless_default=after_switch)


def put_back_left(root: str | Path = "/", dry_run: bool = False, pid: int | None = None,
                  devices: set[str] | None = None) -> list[PutBack]:
    """Put back every run whose process is gone without putting its device back (killed), from the file it wrote
    first (with ``pid``, only that process's; with ``devices``, only on those); a device another live iosched has
    under load is left to it, its file kept for later. A file that is no starting point is removed."""
    out: list[PutBack] = []
    for f, info in stale_registrations(_registry(root)):
        if pid is not None and info.get("pid") != pid:
            continue
        try:
            start = decode(StartingPoint, info, max_depth=4)
        except DecodeError:
            start = None
        # Only a file where its own device and pid put it, the device a bare name: never a path from a file.
        if start is None or not _sane(start) or f.name != _file(start, root).name:
            if not dry_run:
                f.unlink(missing_ok=True)
            continue
        if devices is not None and start.device not in devices:
            continue
        if dry_run:
            out.append(would_put_back(start, root))
            continue
        with restoring({start.device}, root) as held:
            if start.device in held:
                out.append(PutBack(start.device, start.pid, "held", detail=held[start.device]))
                continue
            out.append(put_back(start, root))
    return out


def starts_of(pid: int, root: str | Path = "/") -> list[StartingPoint]:
    """The starting points process ``pid`` has written down: its runs under way now."""
    out = []
    for f in registry_files(_registry(root)):
        if f.name.endswith(f".{pid}.json"):
            with contextlib.suppress(OSError, ValueError, RecursionError, DecodeError):
                start = decode(StartingPoint, json.loads(f.read_text()), max_depth=4)
                if start.pid == pid and _sane(start):
                    out.append(start)
    return out


def put_back_after(pid: int, starts: list[StartingPoint], root: str | Path = "/") -> list[PutBack]:
    """Once process ``pid`` has ended (its ``starts`` read while it ran): each run it did not put back, put back from
    its file; each it did put back, checked: the device as that run found it ("as found"), or what differs."""
    done = put_back_left(root, pid=pid)
    put = {d.device for d in done}
    for start in starts:
        if start.device not in put:
            seen = would_put_back(start, root)
            done.append(replace(seen, status="not as found") if seen.status == "would put back" else seen)
    return done


def _sane(start: StartingPoint) -> bool:
    """Every name in ``start`` one iosched writes: a bare device name, queue knobs it knows, tunable names."""
    return (DEVICE_NAME.match(start.device) is not None and set(start.knobs) <= QUEUE_KNOBS
            and all(TUNABLE_NAME.match(name) for name in start.tunables))


def _owed(start: StartingPoint, root: str | Path) -> str | None:
    """What could not be put back while the kernel owes the device a write, in put_back's words: "scheduler none (the
    kernel has not returned from writing 'bfq' to scheduler (pid 42): nothing is written to loop5 until it does)"."""
    owed = owed_write(start.device, root)
    if owed is None:
        return None
    attr, why = owed
    name = attr.rsplit("/", 1)[-1]
    return f"{name} {start.value_of(attr) or 'as found'} ({why})"


def _scheduler(sysdir: Path) -> str | None:
    return parse_scheduler(read_attr(sysdir / "queue/scheduler"))[0]


def _not_the_same(start: StartingPoint, root: str | Path) -> str | None:
    """Why the device under the name is not the one the run started on (gone, or another), or None."""
    try:
        now = journal_identity(start.device, root)
    except IoschedError:
        return "the device no longer exists"
    for key in ("maj_min", "diskseq", "serial", "backing_file"):
        was, is_ = getattr(start, key), now[key]
        if was is not None and is_ is not None and was != is_:
            return f"another device now has this name ({key} was {was}, now {is_})"
    return None


def _forget_own(start: StartingPoint, root: str | Path) -> None:
    """Drop the journal entries on the device that are done with: any back at its original, and of the run's own
    (made after ``note``, by its process) a value where the run found it or a tunable of a scheduler no longer in
    place, which the switch back reset."""
    sysdir = Path(root, "sys/block", start.device)
    sched = _scheduler(sysdir)
    before = set(start.journaled or ())
    with Journal(default_run_dir(root)).locked() as entries:
        for key, e in list(entries.items()):
            if e.device != start.device:
                continue
            text = read_attr(sysdir / e.attr)
            now = parse_scheduler(text)[0] if e.attr == "queue/scheduler" else text
            ours = key not in before and e.pid == start.pid
            reset = e.scheduler is not None and e.scheduler != sched
            if now == e.original or (ours and (now == start.value_of(e.attr) or reset)):
                del entries[key]
