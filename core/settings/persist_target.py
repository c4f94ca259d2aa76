"""What a persistence rule should match: the most stable identity a device has, or a class of disks; the words
for what it reaches, and a warning when only its kernel name is left and that name is not stable. Pure reads of
sysfs and the udev database (movable root).

``rule_for`` is the whole choice in one call, for any front end: the rule that keeps a scheduler (and settings)
for this device or this class, with its scope in words and its warning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iosched.core.base.errors import BadInput
from iosched.core.kernel.devices import read_device
from iosched.core.settings.persist import (
    BY,
    Rule,
    build_class_rule,
    build_rule,
    class_label,
    covers,
    disk_kinds,
    match_value,
    tuned_snippet,
)

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
        return class_label(value)
    kind = runtime_kind(device)
    if kind is not None:
        return f'KERNEL=="{device}" (this name only; {kind} numbers are not stable)'
    return f'KERNEL=="{device}" (this name only; names follow the order disks are found)'


@dataclass(frozen=True)
class RuleChoice:
    """A rule to keep a setting, with what it reaches in words and, when there is one, a warning (a kernel name
    that may not follow the device; a class rule that does not reach the device named)."""

    rule: Rule
    scope: str
    warning: str | None = None

    @property
    def tuned(self) -> str:
        """The same setting as a tuned profile snippet."""
        return tuned_snippet(self.rule)

    def to_json(self) -> dict[str, Any]:
        return {**self.rule.to_json(), "scope": self.scope, "warning": self.warning}


def rule_for(scheduler: str, settings: Sequence[tuple[str, str]] = (), *, device: str | None = None,
             by: str = "auto", klass: str | None = None, root: str | Path = "/") -> RuleChoice:
    """The rule that keeps ``scheduler`` and ``settings`` (tunables after it, queue knobs): for ``device`` matched
    ``by`` (auto: its most stable identity), or, with ``klass`` (non-rotational/ssd, rotational/hdd), for every
    disk of that class, ``device`` then optional and only checked against. BadInput says why none can be made;
    nothing is read but sysfs and udev's database, nothing written."""
    pairs = list(settings)
    if klass is not None:
        if by not in ("auto", "rotational"):
            raise BadInput(f"--class makes a rule by rotational flag; --by {by} does not apply")
        rule = build_class_rule(klass, scheduler, pairs, device, root)
        warning = None
        if device is not None and not covers(device):
            warning = (f"{device} is not among the disks a class rule reaches ({disk_kinds()}): "
                       "the rule leaves it as it is.")
        elif device is not None and match_value(device, "rotational", root) != rule.match:
            warning = f"{device} is not in this class: the rule leaves it as it is."
        return RuleChoice(rule, class_label(rule.match), warning)
    if device is None:
        raise BadInput("a rule needs a device, or a class of disks (--class)")
    chosen = auto_by(device, root) if by == "auto" else by
    rule = build_rule(device, scheduler, pairs, chosen, root)
    return RuleChoice(rule, match_label(device, rule.by, rule.match), name_warning(device, rule.by))
