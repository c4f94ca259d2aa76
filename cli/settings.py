"""`iosched tune` and `iosched persist`: scheduler tunables and queue knobs, and making a choice permanent."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from iosched.core.base.errors import BadInput
from iosched.core.settings.persist import (
    BY,
    DEFAULT_RULES,
    apply_hint,
    class_flag,
    class_label,
    device_revision,
    diff,
    disk_kinds,
    earlier_rules_notice,
    match_value,
    merged,
    parse_rules,
    read_rules_file,
    without,
)
from iosched.core.settings.persist_target import SHARED_BY, earlier_serial, matches, rule_for
from iosched.core.settings.tunables import apply, list_settings, parse_assignments
from iosched.core.settings.writes import write_rules_file


def add_arguments(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("tune", help="show or set the scheduler's tunables and the queue knobs")
    s.add_argument("device")
    s.add_argument("settings", nargs="*", metavar="KEY=VALUE")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_tune)

    s = sub.add_parser(
        "persist", help="make a scheduler (and settings) permanent with a udev rule",
        description="Keep a scheduler (and settings) across reboots with a udev rule: for one device "
                    "(`persist DEV SCHED`), or for a class of disks (`persist --class non-rotational SCHED`).",
        epilog="A class rule reaches every disk named " + disk_kinds() + " whose "
               "queue/rotational says 0 (non-rotational) or 1 (rotational), whichever machine it is copied to; not "
               "loop, dm, md or other stacked devices. queue/rotational is what the driver says, not a reliable HDD "
               "signal: virtio disks often say 1 whatever lies beneath. --dry-run and --format tuned write nothing "
               "and work without udev's rules directory.")
    s.add_argument("device", nargs="?", help="the device (with --class: optional, then it checks the scheduler)")
    s.add_argument("scheduler", nargs="?")
    s.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                   help="a tunable or queue knob to persist too (repeatable)")
    s.add_argument("--by", choices=("auto", *BY), default="auto",
                   help="what the rule matches (default auto: serial, else WWN, else model, else kernel name; "
                        "rotational: the class of the device named)")
    s.add_argument("--class", dest="klass", metavar="CLASS",
                   help="a rule for every disk of a class, no device needed: non-rotational (or ssd) or "
                        "rotational (or hdd), by queue/rotational (see below)")
    s.add_argument("--rules-file", default=DEFAULT_RULES, help=f"default {DEFAULT_RULES}")
    s.add_argument("--rules-dir", help=f"write {Path(DEFAULT_RULES).name} in this directory instead")
    s.add_argument("--dry-run", "--show", dest="dry_run", action="store_true",
                   help="show the change to the rules file, write nothing")
    s.add_argument("--list", action="store_true", help="show the rules iosched wrote")
    s.add_argument("--remove", action="store_true",
                   help="remove the rule for DEVICE (matched --by), or with --class the class's rule")
    s.add_argument("--format", choices=("udev", "tuned"), default="udev",
                   help="tuned prints the equivalent tuned profile snippet and writes nothing")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_persist)


def cmd_tune(args: argparse.Namespace) -> int:
    if args.settings:
        pairs = parse_assignments(args.settings)
        for r in apply(args.device, pairs, args.root):
            name = r.attr.rsplit("/", 1)[-1]
            if r.note:
                print(f"{r.device} {name}: {r.old} -> {r.new} ({r.note})")
            elif r.old != r.new:
                print(f"{r.device} {name}: {r.old} -> {r.new}")
            else:
                print(f"{r.device} {name}: already {r.new}")
        return 0
    settings = list_settings(args.device, args.root)
    if args.json:
        print(json.dumps([s.to_json() for s in settings], indent=1))
        return 0
    scope = None
    for s in settings:
        if s.scope != scope:
            scope = s.scope
            print(f"{args.device} {'queue knobs' if scope == 'queue' else scope + ' tunables'}:")
        value = f"{s.value} {s.unit}".strip()
        print(f"  {s.name:<18} {value:<14} {s.meaning}")
    if not any(s.scope != "queue" for s in settings):
        print("(the current scheduler has no tunables)")
    return 0


def _rules_path(args: argparse.Namespace) -> Path:
    if args.rules_dir:
        return Path(args.rules_dir, Path(DEFAULT_RULES).name)
    return Path(args.rules_file)


# Where udev reads rules files (udev(7)); a --rules-dir elsewhere is a draft, not applied.
UDEV_RULES_DIRS = (Path("/etc/udev/rules.d"), Path("/run/udev/rules.d"), Path("/usr/lib/udev/rules.d"),
                   Path("/lib/udev/rules.d"), Path("/usr/local/lib/udev/rules.d"))


def _persist_args(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """(device, scheduler) as given: with --class a single word is the scheduler (`persist --class ssd bfq`)."""
    if args.klass is not None and args.scheduler is None and args.device is not None and not args.remove:
        return None, args.device
    return args.device, args.scheduler


def _no_rules_dir(path: Path) -> str | None:
    """Words for a rules file whose directory does not exist (nothing to read there), else None."""
    if path.parent.exists() or path.parent.is_symlink():
        return None
    return f"rules directory {path.parent} does not exist on this machine"


def cmd_persist(args: argparse.Namespace) -> int:
    path = _rules_path(args)
    device, scheduler = _persist_args(args)
    if args.list:
        return _list_rules(path, args.json)
    if args.remove:
        return _remove_rule(args, path, device)
    if not scheduler:
        raise BadInput("persist needs DEVICE SCHEDULER, or --class CLASS SCHEDULER (or --list)")
    choice = rule_for(scheduler, parse_assignments(args.settings), device=device, by=args.by, klass=args.klass,
                      root=args.root)
    rule = choice.rule
    if args.format == "tuned":  # printed, never written: no rules file is read
        if choice.warning:
            print(f"iosched: warning: {choice.warning}", file=sys.stderr)
        print(f"iosched: the rule reaches {choice.scope}", file=sys.stderr)
        print(choice.tuned, end="")
        return 0
    missing = _no_rules_dir(path)
    if missing and not args.dry_run:
        raise BadInput(f"{missing}, so the rule cannot be written there (is udev installed?): --dry-run shows it, "
                       "--rules-dir DIR writes it into DIR")
    # A dry run reads whatever is there; a directory that does not exist holds no rules and is said so.
    old = read_rules_file(path, missing_dir_ok=args.dry_run)
    if choice.warning:
        print(f"iosched: warning: {choice.warning}", file=sys.stderr)
    if notice := earlier_rules_notice(path):
        print(f"iosched: note: {notice}", file=sys.stderr)
    new = merged(old, rule)
    print(f"reaches: {choice.scope}")
    if new == old:
        print(f"{path} already has this rule; nothing to do")
        return 0
    print(diff(old, new, str(path)), end="")
    if args.dry_run:
        print(f"(dry run: nothing written{'; ' + missing + ', so the file is shown as new' if missing else ''})")
        return 0
    write_rules_file(path, new)
    if Path(path).resolve().parent in UDEV_RULES_DIRS:
        print(f"written. Apply it now with: {apply_hint(rule)}")
    else:  # udev never reads it from here: say so rather than offer a reload that does nothing
        print(f"written. udev reads rules from {', '.join(str(d) for d in UDEV_RULES_DIRS)}, not {Path(path).parent}: "
              f"copy {Path(path).name} there, then: {apply_hint(rule)}")
    return 0


def _list_rules(path: Path, as_json: bool) -> int:
    old = read_rules_file(path, missing_dir_ok=True)
    if notice := earlier_rules_notice(path):
        print(f"iosched: note: {notice}", file=sys.stderr)
    rules, _ = parse_rules(old)
    if as_json:
        print(json.dumps([r.to_json() for r in rules], indent=1))
        return 0
    if not rules:
        missing = _no_rules_dir(path)
        print(f"no iosched rules in {path}{' (' + missing + ')' if missing else ''}")
    for r in rules:
        extra = "".join(f" {k}={v}" for k, v in r.settings)
        print(f"{r.named()}: {r.scheduler}{extra}")
    return 0


def _remove_rule(args: argparse.Namespace, path: Path, device: str | None) -> int:
    old = read_rules_file(path, missing_dir_ok=True)  # no directory: no rule to remove, nothing to write
    if notice := earlier_rules_notice(path):
        print(f"iosched: note: {notice}", file=sys.stderr)
    if args.klass is not None:
        if args.by not in ("auto", "rotational"):
            raise BadInput(f"--class names a rule by rotational flag; --by {args.by} does not apply")
        flag = class_flag(args.klass)
        new, found = without(old, "rotational", flag)
        what, kept = f"for {class_label(flag)}", "those disks keep their"
    elif not device:
        raise BadInput("persist --remove needs a DEVICE, or --class CLASS")
    else:
        new, found = _without_device_rules(args, device, old)
        what, kept = f"for {device}{'' if args.by == 'auto' else ' by ' + args.by}", "the device keeps its"
    if not found:
        print(f"no iosched rule {what} in {path}")
        return 0
    rules, foreign = parse_rules(new)
    empty = not rules and not any(line.strip() for line in foreign)
    print(diff(old, "" if empty else new, str(path)), end="")
    if not args.dry_run:
        write_rules_file(path, None if empty else new)
        print(f"removed; {kept} current scheduler until the next boot or `iosched set`")
    return 0


def _without_device_rules(args: argparse.Namespace, device: str, text: str) -> tuple[str, bool]:
    """The rules file without this device's own rules, and whether any went.

    --by auto removes this device's own rule (serial, WWN or kernel name), whichever it has. A rule by model or
    rotational flag covers other disks too: it is named, and removed only when asked by --by. A rule by serial
    from an earlier iosched holds the short serial: found too, even with no ID_SERIAL now."""
    legacy = earlier_serial(device, args.root) if args.by in ("auto", "serial") else None
    try:
        ways = matches(device, args.root) if args.by == "auto" else [(args.by, match_value(device, args.by, args.root))]
    except BadInput:
        if legacy is None:
            raise
        ways = []
    if legacy is not None:
        ways.append(("serial", legacy))
    new, found = text, False
    for by, value in ways:
        # A rule by model reaches this device on any firmware, or on its own (udev's ID_REVISION).
        revisions = dict.fromkeys(("", device_revision(device, args.root))) if by == "model" else {"": None}
        if args.by == "auto" and by in SHARED_BY:
            if any(without(new, by, value, rev)[1] for rev in revisions):
                print(f"iosched: note: a rule by {by} ({value}) also covers {device} and other disks; "
                      f"remove it with --by {by}", file=sys.stderr)
            continue
        for rev in revisions:
            new, gone = without(new, by, value, rev)
            found = found or gone
        if gone and (by, value) == ("serial", legacy):
            print(f"iosched: note: the rule by serial {value} came from an earlier iosched that matched the short "
                  "serial, which ENV{ID_SERIAL} never holds: it had no effect", file=sys.stderr)
    return new, found
