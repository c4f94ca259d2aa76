"""What kind of device a disk is, as far as choosing a scheduler goes: rotational or not, how many hardware queues
and how deep, its model, size and transport, how it is stacked (partitions, dm/md above or below it, a loop
device's backing file), and the scheduler the kernel itself gives it.

Read from sysfs and the udev database under a movable root (core/kernel/devices.py), so fixture trees stand in for
an HDD, an NVMe drive or a SCSI disk with a queue depth.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from iosched.core.base.errors import BadInput
from iosched.core.base.units import human_size
from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.kernel.devices import read_device
from iosched.core.kernel.sysfs import check_device_name, read_attr, read_int

# The kernel's own choice (block/elevator.c, elevator_set_default() since 6.16, elevator_get_default() before):
# no scheduler when the driver's tag set asks for none (BLK_MQ_F_NO_SCHED_BY_DEFAULT, which the loop driver sets
# since 5.15) or the device has more than one hardware queue that does not share its tags; mq-deadline otherwise,
# when the kernel has it. Rotational or not plays no part.
KERNEL_RULE = "block/elevator.c, elevator_set_default()"
NO_SCHED_DRIVERS = {"loop": "5.15"}  # kernel name prefix -> the release since which its driver asks for none


@dataclass(frozen=True)
class DeviceClass:
    """A disk's class: what a scheduler's behaviour depends on."""

    name: str
    kind: str  # nvme, ssd, hdd, virtual, loop, dm, md, mmc, zram, network
    rotational: bool
    model: str | None
    vendor: str | None
    serial: str | None
    transport: str | None
    size_bytes: int
    hw_queues: int | None  # entries of /sys/block/DEV/mq; None where none are listed
    hw_depth: int | None  # the device's own queue depth (SCSI device/queue_depth), else tags per hardware queue
    nr_requests: int | None  # requests the scheduler may hold (queue/nr_requests)
    partitions: tuple[str, ...]
    holders: tuple[str, ...]  # dm/md devices built on it
    sits_on: tuple[str, ...]  # for a dm/md device: what it is built on
    backing_file: str | None
    mountpoints: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def non_rotational(self) -> bool:
        return not self.rotational

    def words(self) -> str:
        """One line: "nvme0n1: NVMe drive, Samsung SSD 980 (1.0 TB, nvme), 8 hardware queues of depth 1023"."""
        what = {"nvme": "NVMe drive", "ssd": "non-rotational disk", "hdd": "rotational disk",
                "virtual": "virtual disk", "loop": "loop device", "dm": "device-mapper device",
                "md": "software RAID (md)", "mmc": "MMC/SD card", "zram": "compressed RAM disk (zram)",
                "network": "network block device"}.get(self.kind, self.kind)
        ident = ", ".join(x for x in (self.model, human_size(self.size_bytes), self.transport) if x)
        queues = ""
        if self.hw_queues:
            queues = f", {self.hw_queues} hardware queue{'s' if self.hw_queues > 1 else ''}"
            if self.hw_depth:
                queues += f" of depth {self.hw_depth}"
        nr = f", nr_requests {self.nr_requests}" if self.nr_requests else ""
        return f"{self.name}: {what} ({ident}){queues}{nr}"

    def stack_words(self) -> list[str]:
        """How it is stacked, a phrase each (empty for a plain disk)."""
        phrases: tuple[tuple[str, Sequence[str]], ...] = (
            ("backed by", [self.backing_file] if self.backing_file else []), ("built on", self.sits_on),
            ("under", self.holders), ("partitions", self.partitions), ("mounted at", self.mountpoints))
        return [f"{what} {', '.join(names)}" for what, names in phrases if names]


def _kind(dev: DeviceDoc) -> str:
    name = dev.name
    for prefix, kind in (("loop", "loop"), ("zram", "zram"), ("dm-", "dm"), ("md", "md"), ("nvme", "nvme"),
                         ("mmcblk", "mmc"), ("nbd", "network"), ("rbd", "network")):
        if name.startswith(prefix):
            return kind
    if dev.transport in ("virtio", "xen") or name.startswith(("vd", "xvd")):
        return "virtual"
    return "hdd" if dev.rotational else "ssd"


def _hw_depth(sysdir: Path) -> int | None:
    depth = read_int(sysdir / "device/queue_depth")  # SCSI: the device's own queue (NCQ: 32)
    if depth:
        return depth
    return read_int(sysdir / "mq/0/nr_tags")


def _count_queues(sysdir: Path) -> int | None:
    try:
        n = sum(1 for p in (sysdir / "mq").iterdir() if p.name.isdigit())
    except OSError:
        return None
    return n or None


def read_device_class(name: str, root: str | Path = "/") -> DeviceClass:
    """The class of the whole disk ``name``; BadInput when it is not one (or vanished while being read)."""
    sysdir = check_device_name(name, root)
    dev = read_device(name, root)
    if dev is None:
        raise BadInput(f"{name} is not a whole-disk block device")
    kind = _kind(dev)
    notes = []
    if kind == "virtual" and dev.rotational:
        notes.append("a virtual disk says rotational whatever lies beneath: its class is a guess")
    if kind == "loop":
        notes.append("a loop device: what it measures is its backing file's filesystem and disk"
                     + (f" ({dev.backing_file})" if dev.backing_file else ""))
    if kind in ("dm", "md") and dev.sits_on:
        notes.append(f"a stacked device: the scheduler that orders requests is on {', '.join(dev.sits_on)}"
                     + (" (it has none of its own)" if not dev.schedulers else ""))
    if dev.holders:
        notes.append(f"{', '.join(dev.holders)} sit{'s' if len(dev.holders) == 1 else ''} on it: their IO reaches "
                     "this disk's scheduler")
    return DeviceClass(
        name=name, kind=kind, rotational=dev.rotational, model=dev.model, vendor=dev.vendor, serial=dev.serial,
        transport=dev.transport, size_bytes=dev.size_bytes, hw_queues=_count_queues(sysdir),
        hw_depth=_hw_depth(sysdir), nr_requests=dev.nr_requests, partitions=tuple(dev.partitions),
        holders=tuple(dev.holders), sits_on=tuple(dev.sits_on), backing_file=dev.backing_file,
        mountpoints=tuple(dev.mountpoints), notes=tuple(notes))


@dataclass(frozen=True)
class KernelDefault:
    """The scheduler the kernel gives this device when it appears (None: it has no elevator at all)."""

    scheduler: str | None
    why: str


def _debugfs_flags(name: str, root: str | Path) -> str | None:
    """The first hardware queue's flags from debugfs, which name what sysfs cannot (shared tags, no scheduler by
    default); None where debugfs is not mounted."""
    return read_attr(Path(root, "sys/kernel/debug/block", name, "hctx0/flags"))


def kernel_default(dev: DeviceClass, schedulers: list[str] | tuple[str, ...],
                   root: str | Path = "/") -> KernelDefault:
    """What the kernel picks for ``dev`` (``schedulers``: what its queue offers), with why, citing the rule."""
    if not schedulers:
        return KernelDefault(None, "its driver bypasses the scheduler layer: there is nothing to choose")
    flags = _debugfs_flags(dev.name, root) or ""
    for prefix, since in NO_SCHED_DRIVERS.items():
        if dev.name.startswith(prefix):
            return KernelDefault("none", f"the {prefix} driver asks for none (BLK_MQ_F_NO_SCHED_BY_DEFAULT, since "
                                         f"{since}; {KERNEL_RULE})")
    if "NO_SCHED_BY_DEFAULT" in flags:
        return KernelDefault("none", f"its driver asks for none (BLK_MQ_F_NO_SCHED_BY_DEFAULT; {KERNEL_RULE})")
    shared = "TAG_HCTX_SHARED" in flags
    deadline = "mq-deadline" if "mq-deadline" in schedulers else None
    if dev.hw_queues and dev.hw_queues > 1 and not shared:
        return KernelDefault("none", f"{dev.hw_queues} hardware queues: a multi-queue device gets none "
                                     f"({KERNEL_RULE})")
    if deadline is None:
        return KernelDefault("none", f"mq-deadline is not available, so none ({KERNEL_RULE})")
    if shared:
        return KernelDefault(deadline, f"{dev.hw_queues} hardware queues sharing one tag set count as one: "
                                       f"mq-deadline ({KERNEL_RULE})")
    if dev.hw_queues is None:
        return KernelDefault(deadline, f"no hardware queues listed, read as one: mq-deadline ({KERNEL_RULE})")
    return KernelDefault(deadline, f"one hardware queue: mq-deadline ({KERNEL_RULE})")
