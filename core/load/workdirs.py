"""fio's working directories (the job file iosched writes): named by the owning pid and its start time
(core/settings/owners.py), so a SIGKILLed run's directory can be told from a live one, even once its pid is
another process's, and removed by ``restore``."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from pathlib import Path

from iosched.core.settings.owners import Owner

PREFIX = "iosched-fio-"
# iosched-fio-PID-START-XXXX; before the start time was kept, iosched-fio-PID-XXXX, and before that iosched-fio-XXXX.
_OURS = re.compile(rf"^{PREFIX}(?:(\d{{1,12}})-(?:(\d{{1,20}})-)?)?[A-Za-z0-9_]+$")
_OLD_EMPTY_AGE_S = 86400  # directories from before the pid was in the name: only when empty and a day old


def workdir_prefix() -> str:
    me = Owner.me()
    return f"{PREFIX}{me.pid}-" + (f"{me.start}-" if me.start is not None else "")


def remove_tree(d: Path) -> bool:
    """Remove a leftover folder and what it holds; whether it is gone."""
    shutil.rmtree(d, ignore_errors=True)
    return not d.exists()


def _owner(m: re.Match[str]) -> Owner | None:
    if m.group(1) is None:
        return None
    return Owner.of({"pid": int(m.group(1)), "start": int(m.group(2)) if m.group(2) is not None else None})


def clean_stale_workdirs(dry_run: bool = False, tmp: str | Path | None = None) -> list[str]:
    """Remove fio working directories whose process is gone; returns what was (or would be) removed."""
    base = Path(tmp or tempfile.gettempdir())
    removed: list[str] = []
    try:
        candidates = sorted(base.glob(f"{PREFIX}*"))
    except OSError:
        return removed
    for d in candidates:
        m = _OURS.match(d.name)
        if not m or d.is_symlink() or not d.is_dir():
            continue
        try:
            st = d.stat()
            if st.st_uid != os.geteuid():
                continue
            if m.group(1) is not None:
                owner = _owner(m)
                if owner is None or owner.alive() is not None:
                    continue
                # Only what fio's run leaves there: the job file iosched wrote, a replay's checked iolog.
                if any(p.name not in ("job.fio", "replay.iolog") or not p.is_file() for p in d.iterdir()):
                    continue
            elif any(d.iterdir()) or time.time() - st.st_mtime < _OLD_EMPTY_AGE_S:
                continue
        except OSError:
            continue
        if dry_run or remove_tree(d):
            removed.append(str(d))
    return removed
