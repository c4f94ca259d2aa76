"""What a persistence rule should match: the most stable identity a device has, and a warning when only its
kernel name is left and that name is not stable. Pure reads of sysfs and the udev database (movable root)."""

from __future__ import annotations

from pathlib import Path

from iosched.core.base.errors import BadInput
from iosched.core.kernel.devices import read_device
from iosched.core.settings.persist import BY, match_value

# Preferred first: what pins this one device, then what pins its kind, then its name.
AUTO_ORDER = ("serial", "wwn", "model", "kernel-name")
# Rules that reach every disk of a model, or of a kind: never removed on behalf of one device without --by.
SHARED_BY = ("model", "rotational")
# Kernel names numbered when the device is set up (at attach, map or connect time), not by the hardware.
RUNTIME_NAMED = {
    "loop": "loop device", "nbd": "network block device", "zram": "zram device", "ram": "RAM disk",
    "dm-": "device-mapper device", "md": "md RAID device", "rbd": "RBD device", "nullb": "null_blk device",
    "ublkb": "ublk device", "drbd": "DRBD device", "zd": "ZFS volume",
}


def runtime_kind(device: str) -> str | None:
    """'loop device' for loop3 and the like: a name handed out at run time; None for other names."""
    for prefix, kind in RUNTIME_NAMED.items():
        rest = device[len(prefix):]
        if device.startswith(prefix) and rest[:1].isdigit():
            return kind
    return None


def name_warning(device: str, by: str) -> str | None:
    """One sentence when a rule for ``device`` matched ``by`` would not follow the device; None when it would."""
    if by != "kernel-name":
        return None
    kind = runtime_kind(device)
    if kind is not None:
        return (f"{device} is a {kind} whose number is handed out when it is set up, so after a reboot or the "
                f'next set-up KERNEL=="{device}" may match another device or none.')
    return (f'KERNEL=="{device}" follows the order in which disks are found, so adding or moving a disk can give '
            "this rule to another one; a serial or WWN match pins this disk.")


def matches(device: str, root: str | Path = "/") -> list[tuple[str, str]]:
    """(by, value) for every way a rule could match ``device``, most stable first."""
    out = []
    for by in BY:
        try:
            out.append((by, match_value(device, by, root)))
        except BadInput:
            continue
    return sorted(out, key=lambda m: AUTO_ORDER.index(m[0]) if m[0] in AUTO_ORDER else len(AUTO_ORDER) - 1)


def earlier_serial(device: str, root: str | Path = "/") -> str | None:
    """The serial an earlier iosched put in a rule by serial (the inventory's: ID_SERIAL_SHORT, else sysfs's),
    when it is not the ID_SERIAL rules match now; such a rule never matched, but ``--remove`` must find it."""
    dev = read_device(device, root)
    if dev is None or not dev.serial:
        return None
    try:
        now = match_value(device, "serial", root)
    except BadInput:
        now = None
    return dev.serial if dev.serial != now else None


def auto_by(device: str, root: str | Path = "/") -> str:
    """The most stable match the device has: serial, WWN, model, else its kernel name."""
    found = [by for by, _ in matches(device, root) if by in AUTO_ORDER]
    return found[0] if found else "kernel-name"


def match_label(device: str, by: str, value: str) -> str:
    """What a rule matched ``by`` reaches, for a chooser."""
    if by == "serial":
        return f"this disk wherever it appears (serial {value})"
    if by == "wwn":
        return f"this disk wherever it appears (WWN {value})"
    if by == "model":
        return f"every disk of model {value}"
    if by == "rotational":
        return f"every {'rotational' if value == '1' else 'non-rotational'} disk"
    kind = runtime_kind(device)
    if kind is not None:
        return f'KERNEL=="{device}" (this name only; {kind} numbers are not stable)'
    return f'KERNEL=="{device}" (this name only; names follow the order disks are found)'
