"""The cgroups iosched makes so that a job's roles run at different bfq weights, and their removal.

They live in a hierarchy of iosched's own (``iosched/`` under the io controller's mount, core/kernel/cgroupfs.py),
one per role: ``iosched/PID-N-ROLE``. Every set is registered under the run dir (``cgroups/PID-N.json``) before
anything is made, so what a SIGKILLed iosched left is removed by the next `iosched restore`, or by the next set
made; a set is removed when its run ends. Only what a registration names, below ``iosched/`` of a cgroup mount,
is ever removed, and only with rmdir, which the kernel refuses while a cgroup holds a process.

A process joins a group by writing its own pid to the group's ``cgroup.procs`` (``joined()``), so it is in the
group before it does any IO.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from iosched.core.base.errors import BadInput, IoschedError, NotPermitted
from iosched.core.base.outfile import write_file
from iosched.core.kernel.cgroupfs import (
    CgroupsUnavailable,
    IoHierarchy,
    cgroup_mounts,
    io_hierarchy,
    parse_weight,
    under_root,
)
from iosched.core.kernel.sysfs import read_attr
from iosched.core.settings.journal import default_run_dir, kept_registrations, stale_registrations
from iosched.core.settings.owners import Left, Owner

__all__ = ["CgroupsUnavailable", "WeightedCgroups", "clean_stale_cgroups", "joined", "kept_cgroups", "make_cgroups",
           "probe_weights", "remove_cgroups", "weighted_cgroups"]

ROLE_NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")  # a role as part of a cgroup's name: never "." or ".."
_GROUP = re.compile(r"(\d+)-\d+-[A-Za-z0-9_-]{1,32}")
_SETS = itertools.count(1)  # this process's sets, so two at once (two devices) never share a name
_BUSY_WAIT_S = 2.0  # a group whose last process was just reaped may still read busy for a moment


@dataclass(frozen=True)
class WeightedCgroups:
    """A set of cgroups made for one run: role -> its cgroup directory."""

    hierarchy: IoHierarchy
    groups: dict[str, Path]
    registration: Path

    def procs(self, role: str) -> Path:
        """The file a process writes its pid to, to join ``role``'s group."""
        return self.groups[role] / "cgroup.procs"


def joined(procs: Path, argv: list[str]) -> list[str]:
    """``argv`` started in a cgroup: a shell writes its own pid to ``procs``, then execs ``argv`` in the same process.

    The process is in the group before the program starts, so before its first IO; nothing runs between fork and
    exec in our own (threaded) process, as preexec_fn would. The path is an argument, never part of the script.
    """
    script = 'echo $$ > "$1" || { echo "iosched: could not join the cgroup $1" >&2; exit 111; }; shift; exec "$@"'
    return ["/bin/sh", "-c", script, "iosched-cgroup", str(procs), *argv]


def _registry(root: str | Path) -> Path:
    return default_run_dir(root) / "cgroups"


def _needs_root(what: str) -> NotPermitted:
    return NotPermitted(f"making cgroups needs root ({what}): run as root")


def _write(path: Path, value: str) -> None:
    """One unbuffered write to a cgroup file (the kernel says no at the write, not at close)."""
    try:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, value.encode())
        finally:
            os.close(fd)
    except PermissionError as e:
        raise _needs_root(f"writing {path}") from e
    except OSError as e:
        raise IoschedError(f"writing {value!r} to {path} failed: {e.strerror}") from e


def _rmdir(path: Path) -> str | None:
    """Remove an empty cgroup; why not, or None when it is gone. Waits a moment while it reads busy."""
    deadline = time.monotonic() + _BUSY_WAIT_S
    while True:
        try:
            path.rmdir()
            return None
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno != errno.EBUSY or time.monotonic() >= deadline:
                return "it still holds a process" if e.errno == errno.EBUSY else (e.strerror or str(e))
        time.sleep(0.05)


def _remove_base(base: Path) -> None:
    """iosched's own hierarchy goes once empty; another iosched's groups in it keep it (busy, or not empty)."""
    with contextlib.suppress(OSError):
        base.rmdir()


def make_cgroups(weights: Sequence[tuple[str, int]], root: str | Path = "/") -> WeightedCgroups:
    """Make one cgroup per role at its bfq weight; registered first, removed again if anything fails.

    CgroupsUnavailable (BadInput: one sentence) when this system has no io/blkio controller or no bfq weights;
    NotPermitted without root. Stale sets of processes that are gone are removed first.
    """
    for role, weight in weights:
        if not ROLE_NAME.fullmatch(role):
            raise BadInput(f"{role!r} cannot name a cgroup (letters, digits, _ and - only)")
        if not 1 <= weight <= 1000:
            raise BadInput(f"a bfq weight is from 1 to 1000, not {weight}")
    hierarchy = io_hierarchy(root)
    clean_stale_cgroups(root)
    pid, n = os.getpid(), next(_SETS)
    groups = {role: hierarchy.base / f"{pid}-{n}-{role}" for role, _ in weights}
    reg = _registry(root)
    made = WeightedCgroups(hierarchy, groups, reg / f"{pid}-{n}.json")
    try:
        reg.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_file(made.registration, json.dumps({**Owner.me().fields(), "base": str(hierarchy.base),
                                                  "groups": [str(g) for g in groups.values()]}))
    except PermissionError as e:
        raise _needs_root(f"it lists them in {reg} first, so that a crash leaves none behind") from e
    try:
        _make(made, dict(weights))
    except BaseException:
        remove_cgroups(made)
        raise
    return made


def _make(made: WeightedCgroups, weights: dict[str, int]) -> None:
    h = made.hierarchy
    try:
        h.base.mkdir(exist_ok=True)
        if h.version == 2 and "io" not in (read_attr(h.base / "cgroup.subtree_control") or "").split():
            _write(h.base / "cgroup.subtree_control", "+io")  # the groups below get the io controller's files
        for group in made.groups.values():
            group.mkdir()
    except PermissionError as e:
        raise _needs_root(f"making a cgroup in {h.mount}") from e
    except OSError as e:
        raise IoschedError(f"making a cgroup in {h.base} failed: {e.strerror}") from e
    for role, group in made.groups.items():
        path = group / h.weight_file
        if not path.exists():
            raise CgroupsUnavailable(f"bfq's cgroup weights ({h.weight_file}) are missing: the kernel has no bfq "
                                     "group scheduling (CONFIG_BFQ_GROUP_IOSCHED), or bfq is not loaded")
        _write(path, str(weights[role]))
        got = parse_weight(read_attr(path) or "")
        if got != weights[role]:
            raise IoschedError(f"{path} reads {got} after {weights[role]} was written")


def remove_cgroups(made: WeightedCgroups) -> list[tuple[Path, str]]:
    """Remove a set's groups, then iosched's hierarchy when empty; the registration goes once every group has.
    Returns the groups left, with why."""
    left = [(g, why) for g in made.groups.values() if (why := _rmdir(g)) is not None]
    _remove_base(made.hierarchy.base)
    if not left:
        made.registration.unlink(missing_ok=True)
    return left


@contextlib.contextmanager
def weighted_cgroups(weights: Sequence[tuple[str, int]], root: str | Path = "/") -> Iterator[WeightedCgroups]:
    """The cgroups of ``weights`` (role, bfq weight) for the length of the block, then removed. A group that cannot
    be removed after a clean block raises (its registration stays, for `iosched restore`)."""
    made = make_cgroups(weights, root)
    try:
        yield made
    except BaseException:
        remove_cgroups(made)
        raise
    left = remove_cgroups(made)
    if left:
        path, why = left[0]
        raise IoschedError(f"the cgroup {path} could not be removed ({why}): `iosched restore` removes it later")


def probe_weights(root: str | Path = "/") -> None:
    """Whether cgroups with bfq weights can be made here: one is made and removed again (nothing is left).

    CgroupsUnavailable or NotPermitted (one sentence) when not."""
    with weighted_cgroups([("probe", 100)], root):
        pass


def _ours(info: dict[str, object], mounts: set[Path]) -> tuple[Path, list[Path]] | None:
    """The hierarchy and groups a registration names, when they are what iosched makes: ``iosched/PID-N-ROLE``
    right below a cgroup mount, PID the registration's own. None for anything else (it is not acted on)."""
    base, groups, pid = info.get("base"), info.get("groups"), info.get("pid")
    if not isinstance(base, str) or not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        return None
    b = Path(base)
    if b.name != "iosched" or b.parent not in mounts:
        return None
    paths = [Path(g) for g in groups]
    for p in paths:
        m = _GROUP.fullmatch(p.name)
        if p.parent != b or m is None or int(m.group(1)) != pid:
            return None
    return b, paths


def clean_stale_cgroups(root: str | Path = "/", dry_run: bool = False) -> list[tuple[str, str | None]]:
    """Remove the cgroups of sets whose process is gone (a SIGKILLed iosched): each group, with why it could not
    be removed (None: removed, or would be with ``dry_run``). A registration that names anything else is dropped,
    nothing removed."""
    out: list[tuple[str, str | None]] = []
    regs = stale_registrations(_registry(root))
    if not regs:
        return out
    mounts = {under_root(root, m.path) for m in cgroup_mounts(root)}
    for f, info in regs:
        ours = _ours(info, mounts)
        if ours is None:
            if not dry_run:
                f.unlink(missing_ok=True)
            continue
        base, groups = ours
        left = 0
        for g in groups:
            if not g.exists():
                continue
            why = None if dry_run else _rmdir(g)
            left += why is not None
            out.append((str(g), why))
        if not dry_run:
            _remove_base(base)
            if not left:
                f.unlink(missing_ok=True)
    return out


def kept_cgroups(root: str | Path = "/") -> list[Left]:
    """The cgroups `restore` leaves because the run that made them may still be going, each with why."""
    out = []
    for info, why in kept_registrations(_registry(root)):
        groups = info.get("groups")
        names = [str(g)[:200] for g in groups] if isinstance(groups, list) else []
        out += [Left(f"a cgroup {g}", why) for g in names if Path(g).exists()]
    return out
