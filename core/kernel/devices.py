"""Inventory of whole-disk block devices: what each one is, how it is stacked and where it is mounted, as the
``DeviceDoc`` a saved file holds (core/kernel/device_doc.py).

Read from sysfs, procfs and the udev database under a movable root, so fixture trees can stand in.
Costs about 50 µs per device: call it at start, on device events and on a slow poll, not every tick.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.kernel.sysfs import multipath_head, parse_scheduler, read_attr, read_int


def udev_properties(root: str | Path, maj_min: str) -> dict[str, str]:
    """Properties udev recorded for a block device (``E:KEY=VALUE`` lines of /run/udev/data/bMAJ:MIN)."""
    props: dict[str, str] = {}
    text = read_attr(Path(root, "run/udev/data", f"b{maj_min}"))
    for line in (text or "").splitlines():
        if line.startswith("E:") and "=" in line:
            key, _, value = line[2:].partition("=")
            props[key] = value
    return props


def unescape_mount(path: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def parse_mountinfo(text: str) -> dict[str, list[str]]:
    """MAJ:MIN -> mountpoints, from /proc/self/mountinfo."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) > 4:
            out.setdefault(parts[2], []).append(unescape_mount(parts[4]))
    return out


def parse_swaps(text: str) -> list[str]:
    """Device names in use as swap, from /proc/swaps."""
    names = []
    for line in text.splitlines()[1:]:
        parts = line.split()
        if parts and parts[0].startswith("/dev/"):
            names.append(parts[0][5:])
    return names


def _transport(sysdir: Path, name: str, props: dict[str, str]) -> str | None:
    if props.get("ID_BUS"):
        return props["ID_BUS"]
    for prefix in ("loop", "zram", "dm-", "md", "nbd", "ram", "nvme", "mmcblk", "vd"):
        if name.startswith(prefix):
            return {"dm-": "dm", "vd": "virtio", "mmcblk": "mmc"}.get(prefix, prefix)
    try:
        return os.path.basename(os.readlink(sysdir / "device/subsystem"))
    except OSError:
        return None


def _sysfs_vendor(sysdir: Path) -> str | None:
    vendor = read_attr(sysdir / "device/vendor")
    # virtio and PCI expose a numeric vendor id there, which tells a user nothing.
    return None if not vendor or vendor.startswith("0x") else vendor


def _list_dir(path: Path) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def read_device(name: str, root: str | Path = "/", mounts: dict[str, list[str]] | None = None,
                swaps: list[str] | None = None, block_names: list[str] | None = None) -> DeviceDoc | None:
    """One whole disk, or None when it vanished while being read. ``block_names``: /sys/block, if listed."""
    root = Path(root)
    sysdir = root / "sys/block" / name
    maj_min = read_attr(sysdir / "dev")
    if maj_min is None:
        return None
    if mounts is None:
        mounts = parse_mountinfo(read_attr(root / "proc/self/mountinfo", "") or "")
    if swaps is None:
        swaps = parse_swaps(read_attr(root / "proc/swaps", "") or "")
    q = sysdir / "queue"
    current, available = parse_scheduler(read_attr(q / "scheduler"))
    props = udev_properties(root, maj_min)

    # Partitions are named after their disk (sda1, nvme0n1p1): no need to look into the other entries.
    partitions = [p for p in _list_dir(sysdir) if p.startswith(name) and os.path.exists(sysdir / p / "partition")]
    mountpoints = list(mounts.get(maj_min, []))
    holders = _list_dir(sysdir / "holders")
    fs_type = props.get("ID_FS_TYPE") or None
    for part in partitions:
        pmm = read_attr(sysdir / part / "dev")
        if pmm:
            mountpoints += mounts.get(pmm, [])
        holders += _list_dir(sysdir / part / "holders")
        if part in swaps:
            mountpoints.append("[SWAP]")
    if name in swaps:
        mountpoints.append("[SWAP]")

    model = props.get("ID_MODEL") or read_attr(sysdir / "device/model") or None
    if model is None and name.startswith("dm-"):
        model = read_attr(sysdir / "dm/name")
    serial = (props.get("ID_SERIAL_SHORT") or props.get("ID_SERIAL") or read_attr(sysdir / "serial")
              or read_attr(sysdir / "device/serial") or read_attr(sysdir / "device/wwid") or None)
    if block_names is None:
        block_names = _list_dir(root / "sys/block")
    paths = [p for p in block_names if p.startswith("nvme") and multipath_head(p) == name]
    rotational, multi_queue = read_attr(q / "rotational") == "1", (sysdir / "mq").is_dir()
    return DeviceDoc(
        name=name,
        maj_min=maj_min,
        size_bytes=(read_int(sysdir / "size", 0) or 0) * 512,
        rotational=rotational,
        removable=read_attr(sysdir / "removable") == "1",
        read_only=read_attr(sysdir / "ro") == "1",
        scheduler=current,
        schedulers=available,
        nr_requests=read_int(q / "nr_requests"),
        read_ahead_kb=read_int(q / "read_ahead_kb"),
        model=model,
        vendor=props.get("ID_VENDOR") or _sysfs_vendor(sysdir),
        serial=serial,
        transport=_transport(sysdir, name, props),
        diskseq=read_int(sysdir / "diskseq"),
        partitions=partitions,
        mountpoints=mountpoints,
        holders=holders,
        sits_on=_list_dir(sysdir / "slaves"),
        backing_file=read_attr(sysdir / "loop/backing_file") or None,
        fs_type=fs_type,
        part_table=props.get("ID_PART_TABLE_TYPE") or None,
        multi_queue=multi_queue,
        iostats=read_attr(q / "iostats", "1") != "0",
        multipath_paths=paths,
        util_is_saturation=rotational or not multi_queue,
    )


def device_order(name: str) -> tuple[tuple[int, int | str], ...]:
    """A device name's place in natural order, as lsblk lists them: loop2 before loop10, sda before sdaa."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.findall(r"\d+|\D+", name))


def disks_below(maj_min: str, root: str | Path = "/") -> list[str]:
    """The whole disks with a request queue of their own that block device ``maj_min`` reaches: itself, the disk of
    a partition, the disks under a dm or md device (whose bios go on to them); [] for no block device (tmpfs,
    overlay and btrfs give their files an anonymous device number)."""
    found: list[str] = []

    def walk(node: Path, depth: int) -> None:
        try:
            real = node.resolve(strict=True)
        except (OSError, RuntimeError):
            return
        if (real / "partition").exists():
            real = real.parent
        disk = Path(root, "sys/block", real.name)
        if (disk / "mq").is_dir():
            if real.name not in found:
                found.append(real.name)
        elif depth < 8:  # a stack is a few levels deep; a loop in it ends here
            for below in _list_dir(disk / "slaves"):
                walk(disk / "slaves" / below, depth + 1)

    if re.fullmatch(r"\d{1,10}:\d{1,10}", maj_min) and not maj_min.startswith("0:"):
        walk(Path(root, "sys/dev/block", maj_min), 0)
    return sorted(found, key=device_order)


def disks_holding(path: str | Path, root: str | Path = "/") -> list[str]:
    """The disks a file's blocks are on (``disks_below`` its filesystem's device); [] when it is on none."""
    st = os.stat(path)
    return disks_below(f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}", root)


def list_devices(root: str | Path = "/", include_empty: bool = False) -> list[DeviceDoc]:
    """Every whole disk under ``root``; hidden multipath paths and (unless asked) zero-size devices left out.

    Unattached loop devices and empty zram slots have size 0: listing them only adds noise.
    """
    root = Path(root)
    mounts = parse_mountinfo(read_attr(root / "proc/self/mountinfo", "") or "")
    swaps = parse_swaps(read_attr(root / "proc/swaps", "") or "")
    devices = []
    names = sorted(_list_dir(root / "sys/block"), key=device_order)
    for name in names:
        if multipath_head(name) or read_attr(root / "sys/block" / name / "hidden") == "1":
            continue
        # Unattached loop nodes and empty zram slots: one read each instead of twenty (a machine that has
        # run loop-device tests can hold a hundred of them).
        if not include_empty and read_int(root / "sys/block" / name / "size", 0) == 0:
            continue
        dev = read_device(name, root, mounts, swaps, names)
        if dev is None or (dev.size_bytes == 0 and not include_empty):
            continue
        devices.append(dev)
    return devices


def inventory_signature(root: str | Path = "/") -> tuple[object, ...]:
    """A cheap token for a slow poll: when it is unchanged, so is what list_devices shows of each device.

    The block devices with their sizes (/proc/partitions), each one's scheduler line, and the mount and swap
    tables: about 1 ms for 40 devices, where list_devices takes 20-30 ms. Anything else changes with a
    uevent, which re-reads the whole inventory.
    """
    root = Path(root)
    partitions = read_attr(root / "proc/partitions", "") or ""
    names = [line.split()[3] for line in partitions.splitlines()[2:] if len(line.split()) == 4]
    schedulers = tuple(read_attr(root / "sys/block" / name / "queue/scheduler") for name in names)
    return (partitions, schedulers, read_attr(root / "proc/self/mountinfo"), read_attr(root / "proc/swaps"))
