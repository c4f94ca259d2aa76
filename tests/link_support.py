"""Links planted by another user while iosched writes: the folder anyone may write, the victim outside it, and
the planting itself done as an unprivileged user (``nobody``), as an adversary on the machine would."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

NOBODY = 65534


def nobody(*argv: str) -> list[str]:
    """``argv`` run as the unprivileged user (root only: a test that is not root runs it as itself)."""
    if os.geteuid() != 0:
        return list(argv)
    return [shutil.which("setpriv") or "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]


def as_nobody(*argv: str) -> None:
    subprocess.run(nobody(*argv), check=True, timeout=10)


def plant(link: Path, target: Path, over: bool = False) -> None:
    """A symbolic link at ``link`` to ``target``, made by the unprivileged user; ``over``: in place of whatever
    is there (a file iosched wrote in a folder others may write)."""
    as_nobody("ln", "-sfn" if over else "-s", str(target), str(link))


def make_victim(folder: Path, text: str = "root's own secret\n") -> Path:
    """A private root file outside the shared folder: what a planted link points at."""
    victim = folder / "victim"
    victim.write_text(text)
    os.chmod(victim, 0o600)
    return victim


def digest(path: Path) -> tuple[str, int, int]:
    """The victim's checksum, mode and size: all must be as before."""
    st = os.lstat(path)
    return hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mode, st.st_uid


def temporaries(folder: Path) -> list[str]:
    """What a writer could have left behind: hidden names (the temporary files)."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def plant_while_writing(monkeypatch, link: Path, target: Path) -> None:
    """Plant ``link`` -> ``target`` (as the unprivileged user) the moment the writer has made its temporary file:
    after every look a command takes before it writes, before the rename."""
    from iosched.core.base import outfile

    made = outfile._make_temp

    def planting(dirfd: int, name: str) -> tuple[int, str]:
        out = made(dirfd, name)
        if not os.path.lexists(link):
            plant(link, target)
        return out

    monkeypatch.setattr(outfile, "_make_temp", planting)
