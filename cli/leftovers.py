"""What runs whose process is gone left behind, put back and removed: `iosched restore`, and `iosched serve` once a
tab's app has ended (quit, or killed). One sweep, the same for both, one line each for what it did.

Each piece is core's: a run's device put back as it found it (core/settings/putback.py: the scheduler, its
tunables, the queue knobs, and the run's own journal entries), fio's work folders (core/load/workdirs.py), scratch
files (core/load/targets.py), a fleet session's folder, a demo's sandbox, cgroups. Only what a dead process made
goes; what a live one holds is kept and named with why.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from iosched.core.base.errors import IoschedError
from iosched.core.load.targets import clean_stale_scratch, kept_scratch
from iosched.core.load.workdirs import clean_stale_workdirs
from iosched.core.settings.cgroups import clean_stale_cgroups, kept_cgroups
from iosched.core.settings.cmd_cgroup import clean_stale_cmd_cgroups, kept_cmd_cgroups
from iosched.core.settings.journal import default_run_dir
from iosched.core.settings.owners import Left
from iosched.core.settings.pidlock import sweep as sweep_locks
from iosched.core.settings.putback import StartingPoint, put_back_after, put_back_left
from iosched.core.settings.sandbox import clean_stale as clean_stale_sandboxes
from iosched.core.settings.sandbox import kept_sandboxes
from iosched.core.settings.writes import owed_write


@dataclass
class Swept:
    lines: list[str] = field(default_factory=list)  # what was put back or removed (or would be), one line each
    stuck: int = 0  # how many of them could not be
    kept: list[Left] = field(default_factory=list)  # what a run that may still be going holds, with why


def sweep(root: str | Path = "/", dry_run: bool = False, ended: tuple[int, list[StartingPoint]] | None = None,
          devices: set[str] | None = None) -> Swept:
    """Put back and remove what dead runs left. ``ended``: a process that just ended (a tab's app) and the runs it
    had under way: only its devices are put back, and those it put back itself are checked (another dead run's
    device may have been set by hand since: `iosched restore` is for that). ``devices``: only theirs put back."""
    out = Swept()
    verb = "would remove" if dry_run else "removed"
    puts = put_back_left(root, dry_run, devices=devices) if ended is None else put_back_after(*ended, root)
    for done in puts:
        out.lines.append(done.line())
        out.stuck += done.status in ("failed", "not as found")
    out.kept += kept_scratch(root)  # a live run's fio work dir is not named: it goes with its run
    out.lines += [f"{verb} scratch files a crashed run left: {d}" for d in clean_stale_scratch(root, dry_run)]
    out.lines += [f"{verb} a fio work directory a killed run left: {d}" for d in clean_stale_workdirs(dry_run)]
    if str(root) == "/":  # a fleet session's folder has one fixed place, not under a test's root
        from iosched.core.fleet.fleet_host import (  # the experiment's imports: only here
            clean_stale_sessions,
            kept_sessions,
        )

        out.lines += [f"{verb} a fleet session's folder a killed fleet-host left: {d}"
                      for d in clean_stale_sessions(dry_run)]
        out.kept += kept_sessions()
    out.lines += [f"{verb} a demo sandbox a crashed demo left: {sb.device or 'no device'} over {sb.file}"
                  for sb in clean_stale_sandboxes(root, dry_run)]
    out.kept += kept_sandboxes(root)
    for path, why in clean_stale_cgroups(root, dry_run):
        out.lines.append(f"{verb} a cgroup a killed run left: {path}" if why is None else
                         f"could not remove a cgroup a killed run left: {path} ({why})")
        out.stuck += why is not None
    for path, why in clean_stale_cmd_cgroups(root, dry_run):
        out.lines.append(f"{verb} the cgroup of a killed run's command, and anything still running in it: {path}"
                         if why is None else f"could not remove the cgroup of a killed run's command: {path} ({why})")
        out.stuck += why is not None
    out.kept += [*kept_cgroups(root), *kept_cmd_cgroups(root)]
    if not dry_run:  # bookkeeping, not a setting: a lock file whose holder died goes without a word
        for folder in ("devices", "results"):
            sweep_locks(default_run_dir(root) / folder)
    return out


@contextlib.contextmanager
def owed_said(device: str, root: str | Path = "/") -> Iterator[None]:
    """Around a run of ``device``: however it ends (Ctrl-C, SIGTERM, an error), a write the kernel has not returned
    from is said in one line, since the device could not be put back meanwhile (the journal holds it)."""
    try:
        yield
    finally:
        with contextlib.suppress(IoschedError):  # an unreadable journal is said by whatever raised
            owed = owed_write(device, root)
            if owed is not None:
                print(f"iosched: {device} was not put back: {owed[1]}; `iosched restore` puts back what the run "
                      "changed once the kernel returns", file=sys.stderr)
