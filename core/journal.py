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
from dataclasses import asdict, dataclass
from pathlib import Path

from iosched.core.errors import IoschedError, NotPermitted


@dataclass(frozen=True)
class JournalEntry:
    device: str
    attr: str  # path under /sys/block/DEV, e.g. "queue/scheduler" or "queue/iosched/read_expire"
    original: str
    maj_min: str | None = None
    diskseq: int | None = None
    serial: str | None = None
    backing_file: str | None = None
    scheduler: str | None = None  # for iosched/* tunables: the scheduler they belonged to
    changed_at: float = 0.0  # wall clock, for people reading the journal
    pid: int = 0

    @property
    def key(self) -> str:
        return f"{self.device}/{self.attr}"


def default_run_dir(root: str | Path = "/") -> Path:
    """Where the journal lives: $IOSCHED_RUN_DIR if set (tests), else ROOT/run/iosched."""
    env = os.environ.get("IOSCHED_RUN_DIR")
    return Path(env) if env else Path(root, "run/iosched")


class Journal:
    def __init__(self, run_dir: str | Path) -> None:
        self.dir = Path(run_dir)
        self.path = self.dir / "journal.json"

    @contextlib.contextmanager
    def locked(self) -> Iterator[dict[str, JournalEntry]]:
        """Hold the journal lock; yields the entries, saved back on clean exit if they changed."""
        try:
            self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        except PermissionError as e:
            raise NotPermitted(f"cannot write the journal in {self.dir}: run as root") from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            entries = self.entries()
            before = dict(entries)
            yield entries
            if entries != before:
                self._save(entries)
        finally:
            os.close(fd)

    def entries(self) -> dict[str, JournalEntry]:
        try:
            raw = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            raise IoschedError(f"the journal {self.path} is unreadable ({e}); inspect or remove it") from e
        fields = JournalEntry.__dataclass_fields__
        out = {}
        for item in raw.get("entries", []):
            entry = JournalEntry(**{k: v for k, v in item.items() if k in fields})
            out[entry.key] = entry
        return out

    def _save(self, entries: dict[str, JournalEntry]) -> None:
        # Atomic: a crash leaves either the old or the new journal, never half of one.
        tmp = self.path.with_suffix(".tmp")
        data = {"version": 1, "entries": [asdict(e) for e in entries.values()]}
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


def new_entry(device: str, attr: str, original: str, **identity: object) -> JournalEntry:
    return JournalEntry(device=device, attr=attr, original=original, changed_at=time.time(), pid=os.getpid(),
                        **identity)  # type: ignore[arg-type]


def pid_alive(pid: int) -> bool:
    """Whether a process that registered something under the run dir still exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale_registrations(registry: Path) -> list[tuple[Path, dict]]:
    """Entries of a registry dir (one JSON file per thing a process made) whose process is gone.

    The shared half of `iosched restore`'s cleanups (scratch dirs, demo sandboxes): an unreadable entry is
    removed, a live owner's entry is kept, the caller undoes what a dead owner left and removes the entry.
    """
    out: list[tuple[Path, dict]] = []
    for f in sorted(registry.glob("*.json")) if registry.is_dir() else []:
        try:
            info = json.loads(f.read_text())
            pid = int(info["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            f.unlink(missing_ok=True)
            continue
        if not pid_alive(pid):
            out.append((f, info))
    return out
