"""Where the block-IO cgroup controller lives, read from /proc/self/mountinfo and the cgroup files (movable root).

bfq weighs a cgroup's IO by ``io.bfq.weight`` on cgroup v2 and ``blkio.bfq.weight`` on v1. A controller is bound
to one hierarchy: on a v2-only system the io controller is in the cgroup2 mount; on a hybrid one (v1 controllers
beside a cgroup2 mount, as this machine has) blkio is usually bound to its v1 mount and the cgroup2 mount lacks io.
Both weight files appear only in a cgroup below the root (bfq declares them "not on root"), so whether bfq's
weights exist can only be seen in a cgroup made for the purpose (core/settings/cgroups.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from iosched.core.base.errors import BadInput
from iosched.core.kernel.devices import unescape_mount
from iosched.core.kernel.sysfs import read_attr


class CgroupsUnavailable(BadInput):
    """This system cannot give processes different bfq weights (no io/blkio controller, no bfq weights)."""


@dataclass(frozen=True)
class CgroupMount:
    path: str  # the mount point, as the kernel names it (unescaped)
    fstype: str  # "cgroup2" or "cgroup"
    options: tuple[str, ...]  # the super options: a v1 hierarchy's controllers ("blkio") are among them


@dataclass(frozen=True)
class IoHierarchy:
    """The cgroup hierarchy that carries the block-IO controller, and the name of bfq's weight file in it."""

    version: int  # 2 or 1
    mount: Path  # its mount point under the root
    weight_file: str  # "io.bfq.weight" (v2) or "blkio.bfq.weight" (v1)

    @property
    def base(self) -> Path:
        """iosched's own hierarchy: every cgroup iosched makes lives here."""
        return self.mount / "iosched"


def parse_cgroup_mounts(text: str) -> list[CgroupMount]:
    """The cgroup and cgroup2 mounts in mountinfo text (fields after " - ": fstype, source, super options)."""
    out = []
    for line in text.splitlines():
        head, sep, tail = line.partition(" - ")
        parts, rest = head.split(), tail.split()
        if not sep or len(parts) < 5 or len(rest) < 3 or rest[0] not in ("cgroup", "cgroup2"):
            continue
        out.append(CgroupMount(unescape_mount(parts[4]), rest[0], tuple(rest[2].split(","))))
    return out


def cgroup_mounts(root: str | Path = "/") -> list[CgroupMount]:
    return parse_cgroup_mounts(read_attr(Path(root, "proc/self/mountinfo"), "") or "")


def under_root(root: str | Path, path: str) -> Path:
    return Path(root, path.lstrip("/"))


def io_hierarchy(root: str | Path = "/") -> IoHierarchy:
    """The hierarchy bfq's cgroup weights live in: cgroup v2 with the io controller, else v1's blkio.

    CgroupsUnavailable (one sentence) when neither is there, or v2's io controller is not handed down from the
    root (its cgroup.subtree_control lacks io: iosched does not change what the root hands down).
    """
    mounts = cgroup_mounts(root)
    for m in mounts:
        if m.fstype != "cgroup2":
            continue
        mount = under_root(root, m.path)
        if "io" not in (read_attr(mount / "cgroup.controllers") or "").split():
            continue
        if "io" not in (read_attr(mount / "cgroup.subtree_control") or "").split():
            raise CgroupsUnavailable(f"the io controller is not enabled below the cgroup root ({m.path}/"
                                     f"cgroup.subtree_control lacks io; `echo +io > {m.path}/cgroup.subtree_control` "
                                     "enables it)")
        return IoHierarchy(2, mount, "io.bfq.weight")
    for m in mounts:
        if m.fstype == "cgroup" and "blkio" in m.options:
            return IoHierarchy(1, under_root(root, m.path), "blkio.bfq.weight")
    if not mounts:
        raise CgroupsUnavailable("no cgroup file system is mounted")
    raise CgroupsUnavailable("neither cgroup v2's io controller nor cgroup v1's blkio controller is available")


def parse_weight(text: str) -> int | None:
    """A bfq weight file's default weight: "default 500" (v2, maybe with per-device lines after it) or "500" (v1)."""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 1 and parts[0].isdigit():
            return int(parts[0])
        if len(parts) == 2 and parts[0] == "default" and parts[1].isdigit():
            return int(parts[1])
    return None
