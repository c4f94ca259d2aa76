"""Making a choice permanent: a udev rule in the modern syntax (or the equivalent tuned snippet).

The tool owns one rules file (default /etc/udev/rules.d/61-iosched.rules). Each rule in it is preceded by
a ``# iosched: by=… match=…`` line, so rules merge by what they match (one rule per match, never two) and
lines someone else put in the file are kept as they are. ``ENV{DEVTYPE}=="disk"`` keeps partitions out;
``TEST=="queue/scheduler"`` skips devices without an elevator.

A rule matches one device (serial, WWN, model, kernel name) or a class of disks: a rule by model may name the
firmware too (``ENV{ID_REVISION}``, what systemd's persistent-storage rules set from ata_id, scsi_id and NVMe's
``firmware_rev``; its tag says ``revision=…``), one rule per model and firmware. A class of disks is every disk whose
``queue/rotational`` says 0 (non-rotational) or 1 (rotational), among the kinds ``DISK_KERNELS`` names. A class
rule needs no device at hand (``build_class_rule``): its scheduler is one the mainline kernel has, one a disk here
lists, or one whose module is installed for this kernel (the kernel loads it when udev writes its name), its
settings are checked against what that scheduler has, and each disk's kernel has the last word when udev applies it.
A moved tunable (async_depth) is written where this kernel keeps it: queue/ on newer kernels.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iosched.core.base.errors import BadInput, shown
from iosched.core.kernel.devices import read_device, udev_properties
from iosched.core.kernel.modules import SCHEDULER_NAME, installed_schedulers
from iosched.core.kernel.sysfs import disk_schedulers, moved_here
from iosched.core.settings.sandbox import is_sandbox
from iosched.core.settings.scheduler import available_schedulers, setting_attr
from iosched.core.settings.tunables import validate, validate_without_device

# 61-: udev reads rules files in name order within one event, and 60-persistent-storage.rules is what sets
# ID_SERIAL, ID_WWN and ID_MODEL; a rule matching them from a file read earlier never matches at boot.
DEFAULT_RULES = "/etc/udev/rules.d/61-iosched.rules"
EARLIER_NAME = "60-iosched.rules"  # where earlier versions wrote their rules
BY = ("serial", "wwn", "model", "rotational", "kernel-name")
HEADER = ["# Written by iosched (`iosched persist`): one rule per match. Lines without an `# iosched:` line",
          "# above them are not iosched's and are left alone."]
# Disk kinds a rule by rotational flag applies to (DEVTYPE=="disk" already keeps partitions out).
DISK_KERNELS = "sd*|vd*|xvd*|hd*|nvme[0-9]*n[0-9]*|mmcblk[0-9]*"
_TAG = re.compile(r"^# iosched: by=(?P<by>[a-z-]+) match=(?P<match>.*?)(?: revision=(?P<revision>\S+))?$")
_SAFE = re.compile(r'^[^"\\\n*?\[\]|]{1,120}$')  # no quotes, escapes or glob characters in a match value
# A firmware revision as a rule matches it: one word (ATA's 8, SCSI's 4, NVMe's 8 characters), no quote, escape or
# glob character; the tag line ends with it, so a model that holds " revision=" makes no rule by model.
_SAFE_REVISION = re.compile(r'^[^"\\\s*?\[\]|]{1,40}$')
REVISION_WORD = " revision="


# The elevators the mainline kernel has: what a rule for disks not at hand may name, besides those this machine
# lists or could load (``class_schedulers``).
KNOWN_SCHEDULERS = ("none", "mq-deadline", "kyber", "bfq")
# A class of disks by their queue/rotational flag: the names a user may give, and the flag each means.
CLASSES = {"non-rotational": "0", "rotational": "1"}
CLASS_ALIASES = {"nonrotational": "non-rotational", "ssd": "non-rotational", "0": "non-rotational",
                 "hdd": "rotational", "1": "rotational"}


def class_flag(name: str) -> str:
    """The queue/rotational value a class names: "non-rotational" (or ssd, 0) -> "0", "rotational" (or hdd,
    1) -> "1"; BadInput for anything else."""
    key = name.strip().lower()
    key = CLASS_ALIASES.get(key, key)
    if key not in CLASSES:
        raise BadInput(f"--class {shown(name)}: non-rotational (or ssd) or rotational (or hdd)")
    return CLASSES[key]


def disk_kinds() -> str:
    """The kernel names a rule by rotational flag reaches, for a sentence: "sd*, vd*, …, nvme*n*, mmcblk*"."""
    kinds = DISK_KERNELS.replace("nvme[0-9]*n[0-9]*", "nvme*n*").replace("mmcblk[0-9]*", "mmcblk*")
    return kinds.replace("|", ", ")


def class_label(flag: str) -> str:
    """What a rule by rotational flag reaches, in words, with the flag's caveat."""
    kinds = disk_kinds()
    if flag == "0":
        return f"every non-rotational disk ({kinds} whose queue/rotational is 0)"
    return (f"every rotational disk ({kinds} whose queue/rotational is 1; not a reliable HDD signal: virtio "
            "disks often say 1 whatever lies beneath)")


def covers(device: str) -> bool:
    """Whether a rule by rotational flag (which lists disk kinds by kernel name) would reach ``device``."""
    return any(fnmatch.fnmatchcase(device, pattern) for pattern in DISK_KERNELS.split("|"))


def class_schedulers(root: str | Path = "/") -> list[str]:
    """What a rule for a class of disks may name: the mainline kernel's schedulers, then any other a disk here lists
    or whose module is installed for this kernel (adios, kpp: one module, the same on every disk it reaches)."""
    out = list(KNOWN_SCHEDULERS)
    for _, _, listed in disk_schedulers(root):
        out += [s for s in listed if s not in out]
    out += [s for s in sorted(installed_schedulers(root)) if s not in out]
    return [s for s in out if SCHEDULER_NAME.match(s)]


@dataclass(frozen=True)
class Rule:
    by: str
    match: str
    scheduler: str
    settings: tuple[tuple[str, str], ...] = ()
    in_queue: tuple[str, ...] = ()  # moved tunables this kernel keeps in queue/ (async_depth on newer kernels)
    revision: str = ""  # a rule by model: the firmware it matches too ("" every firmware)

    @property
    def key(self) -> tuple[str, str, str]:
        """What the rule matches: one rule per key in the file."""
        return self.by, self.match, self.revision

    def attr(self, key: str) -> str:
        """Where the rule writes setting ``key``, under /sys/block/DEV."""
        return f"queue/{key}" if key in self.in_queue else setting_attr(key)

    def matcher(self) -> str:
        if self.by == "serial":
            return f'ENV{{ID_SERIAL}}=="{self.match}"'
        if self.by == "wwn":
            return f'ENV{{ID_WWN}}=="{self.match}"'
        if self.by == "model":
            firmware = f', ENV{{ID_REVISION}}=="{self.revision}"' if self.revision else ""
            return f'ENV{{ID_MODEL}}=="{self.match}"{firmware}'
        if self.by == "rotational":
            return f'KERNEL=="{DISK_KERNELS}", ATTR{{queue/rotational}}=="{self.match}"'
        return f'KERNEL=="{self.match}"'

    def line(self) -> str:
        assigns = [f'ATTR{{queue/scheduler}}="{self.scheduler}"']
        # After the scheduler: a switch resets its tunables and nr_requests.
        assigns += [f'ATTR{{{self.attr(k)}}}="{v}"' for k, v in self.settings]
        return ('ACTION=="add|change", SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", '
                f'{self.matcher()}, TEST=="queue/scheduler", ' + ", ".join(assigns))

    def tag(self) -> str:
        return f"# iosched: by={self.by} match={self.match}" + (REVISION_WORD + self.revision if self.revision else "")

    def named(self) -> str:
        """The rule's match in words for a listing: ``model=M`` (``revision=R`` beside it when it names one)."""
        return f"{self.by}={self.match}" + (f"{REVISION_WORD}{self.revision}" if self.revision else "")

    def to_json(self) -> dict[str, Any]:
        out = {"by": self.by, "match": self.match, "scheduler": self.scheduler, "settings": dict(self.settings),
               "rule": self.line()}
        if self.revision:
            out["revision"] = self.revision
        return out


_ASSIGN = re.compile(r'ATTR\{queue/(iosched/)?([a-z0-9_]+)\}="([^"]*)"')


def parse_rules(text: str) -> tuple[list[Rule], list[str]]:
    """Our rules (by their tag line) and every other line, in order, to be kept as it is."""
    rules: list[Rule] = []
    foreign: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _TAG.match(lines[i])
        if m and i + 1 < len(lines):
            assigns = _ASSIGN.findall(lines[i + 1])
            sched = next((v for _, k, v in assigns if k == "scheduler"), None)
            if sched:
                settings = tuple((k, v) for _, k, v in assigns if k != "scheduler")
                in_queue = tuple(k for folder, k, _ in assigns
                                 if k != "scheduler" and not folder and setting_attr(k) != f"queue/{k}")
                match, revision = m["match"], m["revision"] or ""
                if revision and (m["by"] != "model" or not safe_revision(revision)):  # a firmware names models only
                    match, revision = f"{match}{REVISION_WORD}{revision}", ""
                rules.append(Rule(m["by"], match, sched, settings, in_queue, revision))
                i += 2
                continue
        if lines[i] not in HEADER:
            foreign.append(lines[i])
        i += 1
    return rules, foreign


def render_rules(rules: list[Rule], foreign: list[str]) -> str:
    out = list(HEADER)
    for r in rules:
        out += [r.tag(), r.line()]
    # Someone else's lines are kept as they are, blank ones too; only the blank edges (our separator) go.
    kept = list(foreign)
    while kept and not kept[0].strip():
        kept.pop(0)
    while kept and not kept[-1].strip():
        kept.pop()
    if kept:
        out += ["", *kept]
    return "\n".join(out) + "\n"


MAX_RULES_BYTES = 1 << 20


def read_rules_file(path: str | Path, missing_dir_ok: bool = False) -> str:
    """The text of a rules file iosched may rewrite ("" when new); BadInput for anything else.

    Only a file named *.rules is accepted, and an existing one only when it is a plain text file in a
    udev rules directory (rules.d) or already holds rules of ours: never /etc/passwd or a symlink to it.
    ``missing_dir_ok``: a directory that does not exist holds no file ("", for a dry run or a listing on a
    machine without udev's rules directory); else BadInput, since nothing could be written there.
    """
    p = Path(path)
    if not p.name.endswith(".rules") or p.name.startswith("."):
        raise BadInput(f"{p} is not a udev rules file: its name must end in .rules")
    if not p.parent.is_dir():
        if missing_dir_ok and not p.parent.exists() and not p.parent.is_symlink():
            return ""
        raise BadInput(f"rules directory {p.parent} does not exist")
    if not p.exists() and not p.is_symlink():
        return ""
    if p.is_symlink() or not p.is_file():
        raise BadInput(f"{p} is not a regular file (a symlink or a device): iosched only rewrites plain rules files")
    try:
        with open(p, "rb") as f:
            data = f.read(MAX_RULES_BYTES + 1)
        if len(data) > MAX_RULES_BYTES or b"\0" in data:
            raise ValueError
        text = data.decode()
    except PermissionError:
        raise BadInput(f"cannot read {p}: permission denied") from None
    except (OSError, ValueError):
        raise BadInput(f"{p} is not a text rules file (binary, unreadable or larger than 1 MiB); "
                       "nothing was changed") from None
    if p.parent.name != "rules.d" and not any(_TAG.match(line) for line in text.splitlines()):
        raise BadInput(f"{p} exists outside a rules.d directory and holds no iosched rule: "
                       "name a new file or one in a udev rules directory")
    return text


def safe_match(value: str) -> bool:
    """Whether ``value`` can stand in a rule's match as it is: printable, no quote, escape or glob character."""
    return bool(_SAFE.match(value)) and value.isprintable()


def safe_model(value: str) -> bool:
    """Whether ``value`` can stand in a rule by model: a safe match that its tag line reads back as it was."""
    return safe_match(value) and REVISION_WORD not in value


def safe_revision(value: str) -> bool:
    """Whether a firmware revision can stand in a rule by model as it is: one printable word, no quote, escape or
    glob character."""
    return bool(_SAFE_REVISION.match(value)) and value.isprintable()


def device_revision(device: str, root: str | Path = "/") -> str:
    """The firmware revision udev knows for ``device`` (``ID_REVISION``) as a rule by model would match it; "" when
    udev knows none, or one no rule could match safely."""
    dev = read_device(device, root)
    value = udev_properties(root, dev.maj_min).get("ID_REVISION", "") if dev is not None else ""
    return value if safe_revision(value) else ""


def match_value(device: str, by: str, root: str | Path = "/") -> str:
    """What identifies ``device`` for a rule ``by`` serial, model, rotational flag or kernel name."""
    if by not in BY:
        raise BadInput(f"--by must be one of {', '.join(BY)}")
    dev = read_device(device, root)
    if dev is None:
        raise BadInput(f"{device} is not a whole-disk block device")
    if by == "kernel-name":
        value = device
    elif by == "rotational":
        if not covers(device):
            raise BadInput(f"a rule by rotational flag covers {disk_kinds()} disks; "
                           f"{device} is not one: use --by kernel-name")
        value = "1" if dev.rotational else "0"
    elif by == "serial":
        # The rule matches ENV{ID_SERIAL}: the value must be that property, not ID_SERIAL_SHORT or sysfs's serial.
        value = udev_properties(root, dev.maj_min).get("ID_SERIAL", "")
        if not value:
            raise BadInput(f"udev knows no serial for {device} (no ID_SERIAL): use --by model or --by kernel-name")
    elif by == "wwn":
        value = udev_properties(root, dev.maj_min).get("ID_WWN", "")
        if not value:
            raise BadInput(f"udev knows no WWN for {device} (no ID_WWN): use --by serial or --by model")
    else:
        value = udev_properties(root, dev.maj_min).get("ID_MODEL", "")  # sysfs's model is spelt differently
        if not value:
            raise BadInput(f"udev knows no model for {device} (no ID_MODEL): use --by kernel-name")
    if not _SAFE.match(value) or (by == "model" and not safe_model(value)):
        raise BadInput(f"the {by} of {device} ({value!r}) cannot be matched safely in a udev rule")
    return value


def build_rule(device: str, scheduler: str, settings: list[tuple[str, str]], by: str,
               root: str | Path = "/") -> Rule:
    _, available = available_schedulers(device, root)  # checks the name first
    if is_sandbox(device, root):
        raise BadInput(f"{device} is the demo sandbox, detached and deleted when the demo ends: a rule for it "
                       "would outlive its device and land on whatever takes its number next")
    if scheduler not in available:
        raise BadInput(f"{device} has no scheduler {shown(scheduler)}; available: {', '.join(available)}")
    if settings:
        validate(device, settings, root, scheduler=scheduler)
    return Rule(by, match_value(device, by, root), scheduler, tuple(settings), _in_queue(settings, root))


def _in_queue(settings: list[tuple[str, str]], root: str | Path) -> tuple[str, ...]:
    moved = moved_here(root)
    return tuple(k for k, _ in settings if k in moved)


def build_class_rule(klass: str, scheduler: str, settings: list[tuple[str, str]], device: str | None = None,
                     root: str | Path = "/") -> Rule:
    """A rule for every disk of a class (``class_flag``): with ``device``, the scheduler and settings are checked
    against that device (which the rule need not reach); without, against what the mainline kernel offers."""
    flag = class_flag(klass)
    if device is not None:
        _, available = available_schedulers(device, root)
        if scheduler not in available:
            raise BadInput(f"{device} has no scheduler {shown(scheduler)}; available: {', '.join(available)}")
        if settings:
            validate(device, settings, root, scheduler=scheduler)
    else:
        known = class_schedulers(root)
        if scheduler not in known:
            raise BadInput(f"no scheduler {shown(scheduler)} here: the kernel's are {', '.join(KNOWN_SCHEDULERS)}, and "
                           f"this machine lists or could load {', '.join(known[len(KNOWN_SCHEDULERS):]) or 'no other'}")
        validate_without_device(scheduler, settings, root)
    return Rule("rotational", flag, scheduler, tuple(settings), _in_queue(settings, root))


def merged(text: str, rule: Rule) -> str:
    """The rules file with ``rule`` in place of any rule of ours with the same match."""
    rules, foreign = parse_rules(text)
    out = [r for r in rules if r.key != rule.key]
    return render_rules([*out, rule], foreign)


def without(text: str, by: str, match: str, revision: str = "") -> tuple[str, bool]:
    """The rules file without our rule matching ``by``/``match`` (and firmware ``revision``), and whether it was
    there."""
    rules, foreign = parse_rules(text)
    kept = [r for r in rules if r.key != (by, match, revision)]
    return render_rules(kept, foreign), len(kept) != len(rules)


def diff(old: str, new: str, path: str) -> str:
    """The change to the rules file as a small unified diff: the rule lines added, replaced or removed, with one
    line of context (the ``# iosched:`` tag of a rule being replaced)."""
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"{path} (now)",
                                        f"{path} (new)", n=1))


def apply_hint(rule: Rule) -> str:
    """The commands that make udev apply a rule now (to the device it names, or to every block device)."""
    trigger = "udevadm trigger --action=change --subsystem-match=block"
    if rule.by == "kernel-name":
        trigger += f" --sysname-match={rule.match}"
    return f"udevadm control --reload && {trigger}"


def tuned_snippet(rule: Rule) -> str:
    """The same setting as a tuned profile fragment ([disk] elevator, [sysfs] for the rest)."""
    lines = ["[disk]"]
    if rule.by == "kernel-name":
        lines.append(f"devices={rule.match}")
    elif rule.by == "serial":
        lines.append(f"devices_udev_regex=ID_SERIAL={re.escape(rule.match)}")
    elif rule.by == "wwn":
        lines.append(f"devices_udev_regex=ID_WWN={re.escape(rule.match)}")
    elif rule.by == "model":
        lines.append(f"devices_udev_regex=ID_MODEL={re.escape(rule.match)}")
        if rule.revision:
            lines.append(f"# tuned matches the model alone here: firmware {rule.revision} is not matched")
    else:
        kind = "non-rotational" if rule.match == "0" else "rotational"
        lines.append(f"# tuned's [disk] cannot test queue/rotational: list the {kind} disks with devices=")
    lines.append(f"elevator={rule.scheduler}")
    rest = []
    for key, value in rule.settings:
        if key == "read_ahead_kb":
            lines.append(f"readahead={value}")
        else:
            rest.append((key, value))
    if rest:
        glob = rule.match if rule.by == "kernel-name" else "*"
        lines += ["", "[sysfs]"]
        lines += [f"/sys/block/{glob}/{rule.attr(k)}={v}" for k, v in rest]
        if glob == "*":
            lines.append("# [sysfs] has no device match: narrow the glob to the disks this is meant for")
    return "\n".join(lines) + "\n"


def earlier_rules_notice(path: str | Path) -> str | None:
    """One sentence when the directory of the default rules file still holds an earlier version's file with
    iosched rules in it: those are read before udev sets ID_SERIAL and friends, and they are not this file."""
    path = Path(path)
    if path.name != Path(DEFAULT_RULES).name:
        return None
    earlier = path.parent / EARLIER_NAME
    try:
        rules, _ = parse_rules(read_rules_file(earlier))
    except (BadInput, ValueError):  # unreadable or odd: not ours to judge here
        return None
    if not rules:
        return None
    return (f"{earlier} holds {len(rules)} rule(s) from an earlier iosched, read before udev sets ID_SERIAL, "
            f"ID_WWN and ID_MODEL (so a rule by serial, wwn or model there never matches at boot); persist "
            f"them again, then remove that file")
