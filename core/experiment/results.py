"""Where results are kept: every experiment and matrix the TUI runs is saved, a matrix after each run, so
`iosched report FILE` shows it again and an interrupted matrix can be resumed (in the TUI or with --resume).

Files live in ROOT/var/lib/iosched/results ($IOSCHED_RESULTS_DIR in tests), named
``YYYYmmdd-HHMMSS-DEVICE-KIND.json``; they are written atomically, so a crash leaves the previous save.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.base.outfile import check_target, replacing
from iosched.core.settings.journal import default_run_dir
from iosched.core.settings.pidlock import Held, holding

_NAME = re.compile(r"^\d{8}-\d{6}-(?P<device>[^/]+)-(?P<kind>compare|alternate|matrix)(?:-\d+)?\.json$")


def default_results_dir(root: str | Path = "/") -> Path:
    env = os.environ.get("IOSCHED_RESULTS_DIR")
    return Path(env) if env else Path(root, "var/lib/iosched/results")


def check_save_path(path: str | Path) -> os.stat_result | None:
    """The existing file's status (None when there is none yet); BadInput unless ``path`` is a regular file or
    a new name in an existing directory that takes a new file now (outfile.check_target makes and removes one).
    A save replaces the file whole, so a device node (/dev/null), a FIFO or a symlink there would itself be
    replaced, not written to. The early look of a command: the save looks again when it writes."""
    if not str(path):
        raise BadInput("no file name given to save to")
    try:
        return check_target(path)
    except (FileNotFoundError, NotADirectoryError) as e:
        if os.path.isdir(os.path.dirname(os.fspath(path)) or "."):  # /proc/self: a folder that takes no file
            raise BadInput(f"cannot save to {path}: its folder takes no new file ({e.strerror})") from None
        raise BadInput(f"cannot save to {path}: not a file in an existing directory") from None
    except OSError as e:
        raise BadInput(f"cannot save to {path}: {e.strerror or e}") from None


def save_result(doc: object, path: str | Path) -> None:
    """``doc`` (JSON: a document encoded, core/base/encode.py) written atomically (a crash mid-write leaves the
    previous save, never half a file); a file that is replaced keeps its mode and owner. BadInput for a path that
    is not a regular file (check_save_path), also when one is planted there while the experiment runs
    (WriteRefused: nothing written)."""
    check_save_path(path)
    with replacing(path) as f:
        json.dump(doc, f)


def new_result_path(device: str, kind: str, directory: str | Path, now: float | None = None) -> Path:
    """A file name not yet taken for a result of ``kind`` (compare, alternate, matrix) on ``device``; the
    directory is made if needed. OSError when it cannot be."""
    d = Path(directory)
    d.mkdir(mode=0o755, parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    for n in range(1, 1000):
        p = d / f"{stamp}-{device}-{kind}{'' if n == 1 else f'-{n}'}.json"
        if not p.exists():
            return p
    raise FileExistsError(f"{d} already holds 999 results named {stamp}-{device}-{kind}")


def saved_matrices(device: str, directory: str | Path) -> list[Path]:
    """The matrices saved for ``device`` in ``directory``, the most recently saved first (a matrix is saved
    after every run, so that is the one last worked on)."""
    found: list[tuple[float, Path]] = []
    try:
        for p in Path(directory).iterdir():
            m = _NAME.match(p.name)
            if m and m["device"] == device and m["kind"] == "matrix":
                st = p.lstat()
                if stat.S_ISREG(st.st_mode):
                    found.append((st.st_mtime, p))
    except OSError:
        return []
    return [p for _, p in sorted(found, key=lambda f: f[0], reverse=True)]


class ResultBusy(IoschedError):
    """Another iosched is writing the same saved result."""


@contextlib.contextmanager
def result_lock(path: str | Path, root: str | Path = "/") -> Iterator[None]:
    """Hold an exclusive lock on the saved result ``path`` (by its real path) while a matrix writes it, so the
    TUI and `compare --resume` never both go on with one file; ResultBusy names the other's pid. The lock lives
    in the run directory (the file itself is replaced on every save, so it cannot carry one) and dies with us.
    Without a run directory (not root) nothing is locked: such a process cannot run a matrix either."""
    key = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:24]
    with contextlib.ExitStack() as held:
        try:  # only the taking: whatever the body raises goes on as it is
            held.enter_context(holding(default_run_dir(root) / "results" / f"{key}.lock", f"pid {os.getpid()}"))
        except Held as e:
            raise ResultBusy(f"{path} is being written by another iosched ({e.holder}); let it finish, "
                             "or stop it first") from None
        yield
