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
    build_rule,
    diff,
    earlier_rules_notice,
    match_value,
    merged,
    parse_rules,
    read_rules_file,
    tuned_snippet,
    without,
)
from iosched.core.settings.persist_target import SHARED_BY, auto_by, earlier_serial, matches, name_warning
from iosched.core.settings.tunables import apply, list_settings, parse_assignments
from iosched.core.settings.writes import write_rules_file


def add_arguments(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("tune", help="show or set the scheduler's tunables and the queue knobs")
    s.add_argument("device")
    s.add_argument("settings", nargs="*", metavar="KEY=VALUE")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_tune)

    s = sub.add_parser("persist", help="make a scheduler (and settings) permanent with a udev rule")
    s.add_argument("device", nargs="?")
    s.add_argument("scheduler", nargs="?")
    s.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                   help="a tunable or queue knob to persist too (repeatable)")
    s.add_argument("--by", choices=("auto", *BY), default="auto",
                   help="what the rule matches (default auto: serial, else WWN, else model, else kernel name)")
    s.add_argument("--rules-file", default=DEFAULT_RULES, help=f"default {DEFAULT_RULES}")
    s.add_argument("--rules-dir", help=f"write {Path(DEFAULT_RULES).name} in this directory instead")
    s.add_argument("--dry-run", "--show", dest="dry_run", action="store_true",
                   help="show the change to the rules file, write nothing")
    s.add_argument("--list", action="store_true", help="show the rules iosched wrote")
    s.add_argument("--remove", action="store_true", help="remove the rule for DEVICE (matched --by)")
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


def cmd_persist(args: argparse.Namespace) -> int:
    path = _rules_path(args)
    old = read_rules_file(path)
    if notice := earlier_rules_notice(path):
        print(f"iosched: note: {notice}", file=sys.stderr)
    if args.list:
        rules, _ = parse_rules(old)
        if args.json:
            print(json.dumps([r.to_json() for r in rules], indent=1))
        elif not rules:
            print(f"no iosched rules in {path}")
        for r in rules if not args.json else []:
            extra = "".join(f" {k}={v}" for k, v in r.settings)
            print(f"{r.by}={r.match}: {r.scheduler}{extra}")
        return 0
    if not args.device:
        raise BadInput("persist needs a DEVICE (or --list)")
    if args.remove:
        # --by auto removes this device's own rule (serial, WWN or kernel name), whichever it has. A rule by
        # model or rotational flag covers other disks too: it is named, and removed only when asked by --by.
        # A rule by serial from an earlier iosched holds the short serial: found too, even with no ID_SERIAL now.
        legacy = earlier_serial(args.device, args.root) if args.by in ("auto", "serial") else None
        try:
            ways = matches(args.device, args.root) if args.by == "auto" else [
                (args.by, match_value(args.device, args.by, args.root))]
        except BadInput:
            if legacy is None:
                raise
            ways = []
        if legacy is not None:
            ways.append(("serial", legacy))
        new, found = old, False
        for by, value in ways:
            if args.by == "auto" and by in SHARED_BY:
                if without(new, by, value)[1]:
                    print(f"iosched: note: a rule by {by} ({value}) also covers {args.device} and other disks; "
                          f"remove it with --by {by}", file=sys.stderr)
                continue
            new, gone = without(new, by, value)
            found = found or gone
            if gone and (by, value) == ("serial", legacy):
                print(f"iosched: note: the rule by serial {value} came from an earlier iosched that matched the short "
                      "serial, which ENV{ID_SERIAL} never holds: it had no effect", file=sys.stderr)
        if not found:
            print(f"no iosched rule for {args.device} {'' if args.by == 'auto' else 'by ' + args.by + ' '}in {path}")
            return 0
        rules, foreign = parse_rules(new)
        empty = not rules and not any(line.strip() for line in foreign)
        print(diff(old, "" if empty else new, str(path)), end="")
        if not args.dry_run:
            write_rules_file(path, None if empty else new)
            print("removed; the device keeps its current scheduler until the next boot or `iosched set`")
        return 0
    if not args.scheduler:
        raise BadInput("persist needs DEVICE SCHEDULER")
    by = auto_by(args.device, args.root) if args.by == "auto" else args.by
    rule = build_rule(args.device, args.scheduler, parse_assignments(args.settings), by, args.root)
    warning = name_warning(args.device, rule.by)
    if warning:
        print(f"iosched: warning: {warning}", file=sys.stderr)
    if args.format == "tuned":
        print(tuned_snippet(rule, args.device), end="")
        return 0
    new = merged(old, rule)
    if new == old:
        print(f"{path} already has this rule; nothing to do")
        return 0
    print(diff(old, new, str(path)), end="")
    if args.dry_run:
        print("(dry run: nothing written)")
        return 0
    write_rules_file(path, new)
    if Path(path).resolve().parent in UDEV_RULES_DIRS:
        print(f"written. Apply it now with: {apply_hint(rule, args.device)}")
    else:  # udev never reads it from here: say so rather than offer a reload that does nothing
        print(f"written. udev reads rules from {', '.join(str(d) for d in UDEV_RULES_DIRS)}, not {Path(path).parent}: "
              f"copy {Path(path).name} there, then: {apply_hint(rule, args.device)}")
    return 0

