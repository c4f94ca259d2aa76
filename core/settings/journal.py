"""The journal of original values: what the tool changed, so it can always be put back.

It lives under /run/iosched (tmpfs): a reboot resets schedulers and clears the journal together.
Every read-modify-write happens under an exclusive flock, so racing processes keep the true original.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from iosched.core.base.decode import DecodeError, decode
from iosched.core.base.encode import encode
from iosched.core.base.errors import IoschedError, NotPermitted
from iosched.core.base.outfile import replacing
from iosched.core.base.schema import Keywords
from iosched.core.settings.owners import Owner

JOURNAL_VERSION = 1  # the journal file's "version"
Name = Annotated[str, Keywords(minLength=1)]


@dataclass(frozen=True)
class PendingWrite:
    """A write the kernel had not returned from by its deadline: the value on its way, and the process left holding
    it (its pid and start time), so that nothing more is written to the device, and no restore made, until it ends."""

    value: Name
    pid: int
    start: int | None = None  # the writer's start time, clock ticks after boot: a pid given to another is not it
    since: float = 0.0  # wall clock, for people reading the journal


@dataclass(frozen=True)
class JournalEntry:
    """One setting iosched changed: its original value, the device's identity then, who changed it and when."""

    device: Name
    attr: Name  # path under /sys/block/DEV, e.g. "queue/scheduler" or "queue/iosched/read_expire"
    original: Name
    maj_min: str | None = None
    diskseq: int | None = None
    serial: str | None = None
    backing_file: str | None = None
    scheduler: str | None = None  # for iosched/* tunables: the scheduler they belonged to
    changed_at: float = 0.0  # wall clock, for people reading the journal
    pid: int = 0
    pending: PendingWrite | None = field(default=None, metadata={"absent": True})

    @property
    def key(self) -> str:
        return f"{self.device}/{self.attr}"


@dataclass(frozen=True)
class JournalFile:
    """The journal on disk (journal.json under the run directory): every original value not yet put back."""

    entries: list[JournalEntry] = field(metadata={"item": "entry"})
    version: int = JOURNAL_VERSION


def default_run_dir(root: str | Path = "/") -> Path:
    """Where the journal lives: $IOSCHED_RUN_DIR if set (tests), else ROOT/run/iosched."""
    env = os.environ.get("IOSCHED_RUN_DIR")
    return Path(env) if env else Path(root, "run/iosched")


class Journal:
    def __init__(self, run_dir: str | Path) -> None:
        self.dir = Path(run_dir)
        self.path = self.dir / "journal.json"
        self._on_disk: dict[str, JournalEntry] | None = None  # while locked: the entries as last read or saved

    @contextlib.contextmanager
    def locked(self) -> Iterator[dict[str, JournalEntry]]:
        """Hold the journal lock; yields the entries, saved back on clean exit if they changed. Whatever ends the
        block early (an error, Ctrl-C) leaves the file as last saved: as read, or as ``save_now`` wrote it."""
        try:
            self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except PermissionError as e:
            raise NotPermitted(f"cannot write the journal in {self.dir}: run as root") from e
        except OSError as e:  # a link where the lock should be (ELOOP), a file where the folder should be
            raise IoschedError(f"cannot lock the journal in {self.dir}: {e.strerror}; nothing was changed") from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            entries = self.entries()
            self._on_disk = dict(entries)
            yield entries
            self.save_now(entries)
        finally:
            self._on_disk = None
            os.close(fd)

    def save_now(self, entries: dict[str, JournalEntry]) -> None:
        """Within ``locked``: the entries on disk now, if they differ from what is there (a write journaled before
        it is made, so that what ends the process during the write finds it recorded)."""
        if self._on_disk is None:
            raise RuntimeError("the journal is saved only while it is locked")
        if entries != self._on_disk:
            self._save(entries)
            self._on_disk = dict(entries)

    def entries(self) -> dict[str, JournalEntry]:
        """The entries on disk, checked for shape; JournalUnreadable while the file is not a journal."""
        try:
            with open(self.path, "rb") as f:
                data = f.read(MAX_JOURNAL_BYTES + 1)
        except FileNotFoundError:
            return {}
        except PermissionError as e:
            if os.geteuid() != 0:  # not a damaged journal: a private one (/run/iosched is root's, mode 700)
                raise JournalNeedsRoot(self.path) from e
            raise JournalUnreadable(self.path, e.strerror or e.__class__.__name__) from e
        except OSError as e:
            raise JournalUnreadable(self.path, e.strerror or e.__class__.__name__) from e
        if len(data) > MAX_JOURNAL_BYTES:
            raise JournalUnreadable(self.path, f"larger than {MAX_JOURNAL_BYTES >> 20} MiB")
        try:
            raw = json.loads(data)
        except (ValueError, RecursionError) as e:  # RecursionError: nesting too deep for the decoder
            raise JournalUnreadable(self.path, "not JSON") from e
        return parse_entries(raw, self.path)

    def _save(self, entries: dict[str, JournalEntry]) -> None:
        # Atomic: a crash leaves either the old or the new journal, never half of one; never through a link.
        data = {"version": JOURNAL_VERSION, "entries": [encode(e) for e in entries.values()]}
        with replacing(self.path, sync=True) as f:
            json.dump(data, f, indent=1)


MAX_JOURNAL_BYTES = 16 << 20
_NAMES = ("device", "attr", "original")


class JournalUnreadable(IoschedError):
    """The journal exists but is not one: no change is made until it is moved aside, since the originals
    it should hold could not be kept."""

    def __init__(self, path: Path, why: str) -> None:
        self.path, self.why = path, why
        super().__init__(f"the journal {path} is unreadable ({why}), so nothing was changed: check it, then move "
                         f"it aside (mv {path} {path}.bad) to start a fresh one")


class JournalNeedsRoot(JournalUnreadable):
    """The journal is root's and this process is not: nothing to move aside, it needs root."""

    def __init__(self, path: Path) -> None:
        self.path, self.why = path, "root's alone"
        IoschedError.__init__(self, f"the journal {path} can be read by root only: run as root")


def parse_entries(raw: object, path: Path) -> dict[str, JournalEntry]:
    """Journal entries from parsed JSON, decoded as ``JournalFile`` (outside input: a file on disk)."""
    try:
        journal = decode(JournalFile, raw, max_depth=8)
    except DecodeError as e:
        raise JournalUnreadable(path, _why(e)) from None
    return {e.key: e for e in journal.entries}


def _why(e: DecodeError) -> str:
    """What is wrong with the journal, in its own words (which its users know): an entry's fault by entry."""
    p = e.path
    if len(p) < 2 or p[0] != "entries" or not isinstance(p[1], int):
        if p == () and e.fault == "unknown":
            return f"it holds {e.key!r}, which no journal holds"
        if p == ("version",):
            return "its version is not a whole number"
        return 'not an object with a list of "entries"'
    n = p[1] + 1
    key = p[2] if len(p) > 2 else e.key
    if key is None:
        return f"entry {n} is not an object"
    if e.fault == "unknown":
        return f"entry {n} holds {key!r}, which no journal entry holds"
    if key in _NAMES:
        return f"entry {n} has no {key} text"
    if key == "pid":
        return f"entry {n} has a pid that is not a whole number"
    if key == "changed_at":
        return f"entry {n} has a changed_at that is not a number"
    return f"entry {n} has a {key} of the wrong type"


def journal_problem(root: str | Path = "/") -> str | None:
    """One sentence for a front end to show at start while the journal is unreadable, else None."""
    try:
        Journal(default_run_dir(root)).entries()
    except JournalNeedsRoot as e:
        return f"The journal {e.path} can be read by root only: switching and tuning need root."
    except JournalUnreadable as e:
        return (f"The journal {e.path} is unreadable ({e.why}): no scheduler or setting can change until it is "
                f"moved aside (mv {e.path} {e.path}.bad).")
    return None


def new_entry(device: str, attr: str, original: str, **identity: object) -> JournalEntry:
    return JournalEntry(device=device, attr=attr, original=original, changed_at=time.time(), pid=os.getpid(),
                        **identity)  # type: ignore[arg-type]


def registry_files(registry: Path, holds: str = "what its runs made") -> list[Path]:
    """The entries of a registry dir under the run dir; NotPermitted (run as root) when it is root's alone."""
    try:
        return sorted(registry.glob("*.json")) if registry.is_dir() else []
    except PermissionError as e:
        raise NotPermitted(f"reading {registry}, where iosched lists {holds}, needs root: run as root") from e


def _registrations(registry: Path) -> list[tuple[Path, dict[str, Any], Owner]]:
    """Every readable entry of a registry dir with its owner; an unreadable one is removed."""
    out: list[tuple[Path, dict[str, Any], Owner]] = []
    for f in registry_files(registry):
        try:
            info = json.loads(f.read_text())
            owner = Owner.of(info) if isinstance(info, dict) else None
        except (OSError, ValueError, RecursionError):
            owner = None
        if owner is None:
            f.unlink(missing_ok=True)
            continue
        out.append((f, info, owner))
    return out


def stale_registrations(registry: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Entries of a registry dir (one JSON file per thing a process made) whose process is gone: its pid is free,
    or names a process that started at another time than the one the entry names (core/settings/owners.py).

    The shared half of `iosched restore`'s cleanups (scratch dirs, demo sandboxes): an unreadable entry is
    removed, a live owner's entry is kept, the caller undoes what a dead owner left and removes the entry.
    """
    return [(f, info) for f, info, owner in _registrations(registry) if owner.alive() is None]


def kept_registrations(registry: Path) -> list[tuple[dict[str, Any], str]]:
    """Entries whose owner may be alive, each with why (for `iosched restore` to say what it left and why)."""
    return [(info, why) for _f, info, owner in _registrations(registry) if (why := owner.alive()) is not None]
