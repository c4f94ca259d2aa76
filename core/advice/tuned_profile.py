"""Whether tuned sets a disk's scheduler: the active profile's disk sections (``[disk]``, or any section of
``type=disk``) with an ``elevator``, their includes followed, and whether each reaches this disk.

tuned keeps the active profile's name in /etc/tuned/active_profile (several names, space-separated, are merged in
order) and looks a profile up in /etc/tuned/profiles, /etc/tuned, /usr/lib/tuned/profiles, /usr/lib/tuned, the
first found winning. A profile's ``include=`` profiles are read first and its own sections override theirs option
by option (``replace=1`` drops what came before). Its disk plugin tunes whole disks that are not removable and whose
parent is none or a SCSI, virtio, Xen or NVMe device; ``devices=`` lists shell globs, ``!`` excluding, all disks
when no positive one is given; ``devices_udev_regex`` is a regular expression over the disk's udev properties,
which iosched only reads when it is a plain string (it never runs another program's regular expression).
"""

from __future__ import annotations

import configparser
import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path

from iosched.core.advice.config_files import read_config, shown_path
from iosched.core.advice.udev_rules import DiskFacts, Match
from iosched.core.kernel.sysfs import read_attr, read_int

ACTIVE = "etc/tuned/active_profile"
PROFILE_DIRS = ("etc/tuned/profiles", "etc/tuned", "usr/lib/tuned/profiles", "usr/lib/tuned")
PID_FILE = "run/tuned/tuned.pid"
MAX_INCLUDES = 16  # profiles read for one active profile, includes and all
MAX_PROFILE = 256 << 10
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}$")
_PLAIN = re.compile(r"^(?:[A-Za-z0-9_=:/ -]|\\.)+$")  # a udev regex that is a plain string, perhaps escaped
_SUPPORTED_PARENTS = ("scsi", "virtio", "xen", "nvme")


@dataclass(frozen=True)
class TunedDisk:
    """A disk section of the active profile that sets a scheduler."""

    profile: str  # the profile whose file holds the section
    file: str
    section: str
    elevator: str  # as written
    match: Match
    why: str


@dataclass(frozen=True)
class TunedState:
    active: tuple[str, ...]  # the active profile's names; empty when tuned has none
    running: bool  # tuned's pid file names a live process
    disks: tuple[TunedDisk, ...]
    problems: tuple[str, ...]

    def effective(self) -> TunedDisk | None:
        """The section tuned applies to this disk: the last that may reach it (a later profile wins)."""
        hits = [d for d in self.disks if d.match != "no"]
        return hits[-1] if hits else None


def _running(root: Path) -> bool:
    pid = read_int(root / PID_FILE)
    return pid is not None and pid > 0 and (root / "proc" / str(pid)).is_dir()


def _profile_file(root: Path, name: str) -> Path | None:
    for rel in PROFILE_DIRS:
        p = root / rel / name / "tuned.conf"
        if p.is_file():
            return p
    return None


Sections = dict[str, dict[str, str]]


def _load(root: Path, name: str, seen: list[str], problems: list[str]) -> tuple[Sections, dict[str, str]]:
    """A profile's sections with its includes merged under it, and which profile's file each section last came
    from."""
    if not _NAME.match(name):
        problems.append(f"tuned profile name {name[:40]!r} is not one tuned would look up")
        return {}, {}
    if name in seen or len(seen) >= MAX_INCLUDES:
        return {}, {}
    seen.append(name)
    path = _profile_file(root, name)
    if path is None:
        problems.append(f"tuned profile {name!r} was not found")
        return {}, {}
    text, why = read_config(path, MAX_PROFILE)
    if text is None:
        problems.append(f"{shown_path(path, root)}: {why}")
        return {}, {}
    parser = configparser.ConfigParser(interpolation=None, strict=False, default_section="\0none",
                                       delimiters=("=",), allow_no_value=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(text, str(path))
    except configparser.Error as e:
        problems.append(f"{shown_path(path, root)}: not a profile iosched can read ({str(e).splitlines()[0][:80]})")
        return {}, {}
    own = {s: {k: v or "" for k, v in parser.items(s)} for s in parser.sections()}
    merged: Sections = {}
    origin: dict[str, str] = {}
    for inc in (own.get("main", {}).get("include") or "").replace(",", " ").split():
        if "$" in inc:
            problems.append(f"tuned profile {name!r} includes {inc[:40]!r}, a function tuned expands: not followed")
            continue
        sections, where = _load(root, inc, seen, problems)
        for s, opts in sections.items():
            merged.setdefault(s, {}).update(opts)
        origin.update(where)
    for s, opts in own.items():
        if s == "main":
            continue
        if opts.get("replace") in ("1", "true", "True"):
            merged[s] = {}
        merged.setdefault(s, {}).update(opts)
        origin[s] = f"{name}\0{shown_path(path, root)}"
    return merged, origin


def devices_match(expression: str, name: str) -> bool:
    """tuned's ``devices=``: globs separated by spaces or commas, ``!`` excludes; no positive glob means all."""
    rules = [r for r in re.split(r"[\s,]+", expression.strip()) if r]
    positive = [r for r in rules if not r.startswith("!")] or ["*"]
    negative = [r[1:] for r in rules if r.startswith("!")]
    return any(fnmatch.fnmatchcase(name, r) for r in positive) and \
        not any(fnmatch.fnmatchcase(name, r) for r in negative)


def _parent_subsystem(facts: DiskFacts) -> str | None:
    """The subsystem of the disk's parent device; "" for none (a virtual disk); None when sysfs does not say."""
    real = facts.parents[0] if facts.parents else None
    if real is None or "/devices/" not in str(real):
        return None
    if "/devices/virtual/" in str(real):
        return ""
    if len(facts.parents) < 2:
        return None
    try:
        return os.path.basename(os.readlink(facts.parents[1] / "subsystem"))
    except OSError:
        return None


def _supported(facts: DiskFacts) -> tuple[Match, str]:
    """Whether tuned's disk plugin takes this disk at all."""
    if facts.props.get("DEVTYPE", "disk") != "disk":
        return "no", "tuned's disk plugin tunes whole disks only"
    if read_attr(facts.sysdir / "removable") == "1":
        return "no", "tuned's disk plugin leaves removable disks alone"
    parent = _parent_subsystem(facts)
    if parent is None:
        if facts.name.startswith(("mmcblk", "nbd")):
            return "no", "tuned's disk plugin leaves MMC and network disks alone"
        return "yes", ""
    if parent and parent not in _SUPPORTED_PARENTS:
        return "no", f"its parent is a {parent} device, which tuned's disk plugin leaves alone"
    return "yes", ""


def _udev_regex_match(regex: str, facts: DiskFacts) -> tuple[Match, str]:
    if not _PLAIN.match(regex):
        return "maybe", f"devices_udev_regex {regex[:40]!r} is a regular expression iosched does not run"
    literal = re.sub(r"\\(.)", r"\1", regex)
    text = "".join(f"{k}={v}\n" for k, v in sorted(facts.props.items()))
    if literal in text:
        return "yes", ""
    return "no", f"no udev property of the disk holds {literal!r}"


def tuned_state(facts: DiskFacts) -> TunedState:
    """What tuned's active profile says about this disk's scheduler (read from its files, never from tuned)."""
    root = facts.root
    problems: list[str] = []
    text, _why = read_config(root / ACTIVE, 4096)
    names = tuple(text.split()) if text else ()
    disks: list[TunedDisk] = []
    seen: list[str] = []
    for name in names:
        sections, origin = _load(root, name, seen, problems)
        for section, opts in sections.items():
            if opts.get("type", section) != "disk" or not opts.get("elevator"):
                continue
            profile, _, file = origin.get(section, f"{name}\0?").partition("\0")
            match, why = _supported(facts)
            if match != "no" and "devices_udev_regex" in opts:
                match, why = _udev_regex_match(opts["devices_udev_regex"], facts)
            elif match != "no" and not devices_match(opts.get("devices", "*"), facts.name):
                match, why = "no", f"devices={opts.get('devices')!r} leaves {facts.name} out"
            if match != "no" and "$" in opts["elevator"]:
                match, why = "maybe", f"elevator={opts['elevator']!r} is a value tuned expands"
            disks.append(TunedDisk(profile, file, section, opts["elevator"], match, why or "it reaches the disk"))
    return TunedState(names, _running(root), tuple(disks), tuple(problems))


def first_offered(elevator: str, schedulers: list[str] | tuple[str, ...]) -> str | None:
    """tuned's ``elevator`` may list several names: the first one the disk offers."""
    for name in (n.strip() for n in elevator.split(",")):
        if name in schedulers:
            return name
    return None
