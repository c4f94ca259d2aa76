"""What a result was measured on, beyond the device's name: the CPU's model (/proc/cpuinfo) and the device's firmware
revision (udev's ID_REVISION, else sysfs: NVMe's ``device/firmware_rev``, SCSI's ``device/rev``).

Pure parsers and thin readers with a movable root, as core/kernel/procfs.py. Each read is bounded: a cpuinfo of a
machine with thousands of CPUs is a few MiB, and the model name is on its first screen.
"""

from __future__ import annotations

from pathlib import Path

from iosched.core.kernel.devices import udev_properties
from iosched.core.kernel.sysfs import read_attr

CPUINFO_BYTES = 64 << 10  # the first CPU's lines are well within it
MAX_WORDS = 120  # a model or firmware name longer than this is not one

# The key that names the CPU's model, per architecture: x86 "model name", arm64 "Model" (a board) or "CPU part",
# POWER "cpu", s390 "processor 0" lines hold no name: the first of these found wins.
_CPU_KEYS = ("model name", "cpu model", "hardware", "model", "cpu")


def _clean(text: str | None) -> str | None:
    """A name as the kernel gave it, on one line, printable, bounded; None when empty."""
    if text is None:
        return None
    words = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return words[:MAX_WORDS] or None


def parse_cpu_model(text: str) -> str | None:
    """The CPU's model from /proc/cpuinfo text (its first processor's), or None when it names none."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if sep and key in _CPU_KEYS and key not in found and value.strip():
            found[key] = value
    return next((_clean(found[k]) for k in _CPU_KEYS if k in found), None)


def read_cpu_model(root: str | Path = "/") -> str | None:
    try:
        with open(Path(root, "proc/cpuinfo"), "rb") as f:
            text = f.read(CPUINFO_BYTES).decode(errors="replace")
    except OSError:
        return None
    return parse_cpu_model(text)


def read_firmware(name: str, root: str | Path = "/") -> str | None:
    """The firmware revision of whole disk ``name``, or None where the device has none (a loop device, zram)."""
    sysdir = Path(root, "sys/block", name)
    maj_min = read_attr(sysdir / "dev")
    props = udev_properties(root, maj_min) if maj_min else {}
    return _clean(props.get("ID_REVISION") or read_attr(sysdir / "device/firmware_rev")
                  or read_attr(sysdir / "device/rev"))
