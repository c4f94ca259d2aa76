"""Where results are kept: every experiment and matrix the TUI runs is saved, a matrix after each run, so
`iosched report FILE` shows it again and an interrupted matrix can be resumed (in the TUI or with --resume).

Files live in ROOT/var/lib/iosched/results ($IOSCHED_RESULTS_DIR in tests), named
``YYYYmmdd-HHMMSS-DEVICE-KIND.json``; they are written atomically, so a crash leaves the previous save.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import time
from pathlib import Path

_NAME = re.compile(r"^\d{8}-\d{6}-(?P<device>[^/]+)-(?P<kind>compare|alternate|matrix)(?:-(?P<n>\d+))?\.json$")


def default_results_dir(root: str | Path = "/") -> Path:
    env = os.environ.get("IOSCHED_RESULTS_DIR")
    return Path(env) if env else Path(root, "var/lib/iosched/results")


def save_result(doc: dict, path: str | Path) -> None:
    """Write atomically (a crash mid-write leaves the previous save, never half a file)."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a result is as readable as any file we write
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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
    """The matrices saved for ``device`` in ``directory``, newest first (the names' time stamps sort by time)."""
    found: list[tuple[str, int, Path]] = []
    try:
        for p in Path(directory).iterdir():
            m = _NAME.match(p.name)
            if m and m["device"] == device and m["kind"] == "matrix" and p.is_file():
                found.append((p.name[:15], int(m["n"] or 1), p))  # the time stamp, then -2, -3 …
    except OSError:
        return []
    return [p for *_, p in sorted(found, key=lambda f: f[:2], reverse=True)]
