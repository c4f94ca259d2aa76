"""Which udev rules set a disk's scheduler (or its queue settings), and whether each reaches this disk, as far as
can be told without udev: the rules are read, never run.

udev reads every ``*.rules`` file of its rules directories in one lexical order of file names, a name in /etc
hiding the same name in /run, which hides it in /usr/local/lib and /usr/lib (/lib); a file linked to /dev/null is
masked (udev(7), "Rules Files"). Within the order, later assignments win over earlier ones unless one was made
final with ``:=``. A rule's match keys are checked against what sysfs and the udev database hold now, for an
``add`` and a ``change`` event of the disk: KERNEL, SUBSYSTEM, DEVPATH, DRIVER, ATTR, ENV, TAG, TEST, SYSCTL and the
parents' KERNELS, SUBSYSTEMS, DRIVERS and ATTRS (all on one parent, as udev wants); what a rule asks of a program
(PROGRAM, RESULT, IMPORT), of substitutions ($attr, %k) or of the event itself makes it a "maybe", as does a rule
behind a GOTO whose own match was a "maybe". iosched's own rules (core/settings/persist.py) are told by their tag.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from iosched.core.advice.config_files import read_config, shown_path
from iosched.core.kernel.devices import udev_properties
from iosched.core.kernel.sysfs import read_attr
from iosched.core.settings.persist import parse_rules

# Highest precedence first: a file name found in an earlier directory hides the same name in the later ones.
RULES_DIRS = ("etc/udev/rules.d", "run/udev/rules.d", "usr/local/lib/udev/rules.d", "usr/lib/udev/rules.d",
              "lib/udev/rules.d")
MAX_FILES = 2000
MAX_RULE = 16 << 10  # characters of one rule, continuation lines joined
MAX_PARENTS = 32
ACTIONS = ("add", "change")

Match = Literal["yes", "maybe", "no"]
_RANK = {"no": 0, "maybe": 1, "yes": 2}

_TOKEN = re.compile(r'[\s,]*(?P<key>[A-Za-z_]+)(?:\{(?P<attr>[^}]*)\})?\s*(?P<op>==|!=|\+=|-=|:=|=)\s*'
                    r'(?P<prefix>[eis]?)"(?P<value>(?:[^"\\]|\\.)*)"')
_TRAILER = re.compile(r"[\s,]*")
_SUBST = re.compile(r"[$%]")  # a value with substitutions is only known when udev runs it
_PARENT_KEYS = ("KERNELS", "SUBSYSTEMS", "DRIVERS", "ATTRS", "TAGS")
_UNKNOWABLE = ("RESULT", "NAME", "SYMLINK", "CONST", "SECLABEL")


@dataclass(frozen=True)
class Token:
    key: str
    attr: str | None
    op: str
    value: str
    fold: bool = False  # an i"…" value: matched without regard to case


@dataclass(frozen=True)
class Rule:
    file: Path
    line: int  # of the rule's first line
    text: str
    tokens: tuple[Token, ...]
    unparsed: str | None  # where the rule stopped making sense, if it did

    def assigns(self) -> list[Token]:
        return [t for t in self.tokens if t.key == "ATTR" and t.op in ("=", ":=") and (t.attr or "").startswith(
            "queue/")]

    def label(self) -> str | None:
        return next((t.value for t in self.tokens if t.key == "LABEL"), None)

    def goto(self) -> str | None:
        return next((t.value for t in self.tokens if t.key == "GOTO"), None)


@dataclass(frozen=True)
class RuleHit:
    """A rule that sets a queue attribute, and whether it reaches the disk."""

    file: str  # as the machine names it: /etc/udev/rules.d/61-iosched.rules
    line: int
    scheduler: str | None  # what it writes into queue/scheduler, if it does
    settings: tuple[tuple[str, str], ...]  # the other queue/ attributes it writes, without the "queue/"
    final: bool  # its scheduler assignment is final (:=): later rules cannot change it
    match: Match
    why: str  # the key that decided, in words
    iosched: str | None  # "by=serial match=…" when it is a rule `iosched persist` wrote
    text: str  # the rule, cut to 300 characters

    def where(self) -> str:
        return f"{self.file}:{self.line}"


def rule_files(root: str | Path = "/") -> list[Path]:
    """The rules files udev reads, in its order (masked ones left out)."""
    chosen: dict[str, Path] = {}
    for rel in RULES_DIRS:
        d = Path(root, rel)
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for name in names:
            if name.endswith(".rules") and not name.startswith(".") and name not in chosen:
                chosen[name] = d / name
            if len(chosen) >= MAX_FILES:
                break
    out = []
    for name in sorted(chosen):
        p = chosen[name]
        try:
            if p.is_symlink() and os.readlink(p) == "/dev/null":
                continue  # masked
        except OSError:
            continue
        out.append(p)
    return out


def parse_rules_text(text: str, file: Path) -> list[Rule]:
    """The rules of one file: comments and blank lines out, backslash continuations joined."""
    rules: list[Rule] = []
    buf, first = "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not buf:
            first = n
            stripped = line.lstrip()
            if not stripped or stripped.startswith("#"):
                continue
        if line.endswith("\\"):
            buf += line[:-1]
            if len(buf) > MAX_RULE:
                buf = buf[:MAX_RULE]
            continue
        buf += line
        rules.append(_rule(file, first, buf[:MAX_RULE]))
        buf = ""
    if buf:
        rules.append(_rule(file, first, buf[:MAX_RULE]))
    return rules


def _rule(file: Path, line: int, text: str) -> Rule:
    tokens: list[Token] = []
    pos = 0
    text = text.strip()
    unparsed = None
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            rest = _TRAILER.match(text, pos)
            if rest is not None and rest.end() == len(text):
                break
            unparsed = text[pos:pos + 40]
            break
        value = m["value"].replace('\\"', '"')
        tokens.append(Token(m["key"].upper(), m["attr"], m["op"], value, m["prefix"] == "i"))
        pos = m.end()
    return Rule(file, line, text, tuple(tokens), unparsed)


# --- the disk as udev sees it --------------------------------------------------------------------------------


@dataclass(frozen=True)
class DiskFacts:
    """What the rules are matched against: the disk's sysfs folder, its parents, its udev properties and tags."""

    name: str
    root: Path
    sysdir: Path
    devpath: str
    props: dict[str, str]
    tags: frozenset[str]
    parents: tuple[Path, ...]  # the disk's own folder first, then each parent device up to /sys/devices


def disk_facts(name: str, root: str | Path = "/") -> DiskFacts:
    root = Path(root)
    sysdir = root / "sys/block" / name
    maj_min = read_attr(sysdir / "dev") or ""
    props: dict[str, str] = {}
    for line in (read_attr(sysdir / "uevent") or "").splitlines():
        key, eq, value = line.partition("=")
        if eq:
            props[key] = value
    props.setdefault("DEVTYPE", "disk")
    props.update(SUBSYSTEM="block", DEVNAME=f"/dev/{name}")  # the kernel's uevent says "sda", udev "/dev/sda"
    props.update(udev_properties(root, maj_min))
    tags = frozenset(line[2:] for line in (read_attr(root / "run/udev/data" / f"b{maj_min}") or "").splitlines()
                     if line.startswith(("G:", "Q:")))
    real = Path(os.path.realpath(sysdir))
    sys_root = Path(os.path.realpath(root / "sys"))
    devices = sys_root / "devices"
    parents = [real]
    p = real.parent
    while len(parents) < MAX_PARENTS and p not in (devices, sys_root, p.parent) and p.is_relative_to(devices):
        if (p / "uevent").exists():  # a device; a class folder (.../0:0:0:0/block) or /sys/devices/virtual is not
            parents.append(p)
        p = p.parent
    try:
        devpath = "/" + str(real.relative_to(sys_root))
    except ValueError:
        devpath = f"/devices/virtual/block/{name}"
    return DiskFacts(name, root, sysdir, devpath, props, tags, tuple(parents))


def _link_name(path: Path) -> str:
    try:
        return os.path.basename(os.readlink(path))
    except OSError:
        return ""


def glob_match(pattern: str, value: str) -> bool:
    """udev's patterns: shell globs, alternatives with ``|``."""
    return any(fnmatch.fnmatchcase(value, alt) for alt in pattern.split("|"))


def _attr_value(folder: Path, attr: str) -> str | None:
    if ".." in Path(attr).parts or attr.startswith("/"):
        return None
    value = read_attr(folder / attr)
    return None if value is None else value.rstrip()


Result = tuple[Match, str]


def _compare(token: Token, value: str | None, what: str) -> Result:
    if _SUBST.search(token.value):
        return "maybe", f"{what} is compared with a substitution ({token.value!r})"
    if value is None:  # udev: an attribute it cannot read matches neither == nor !=
        return "no", f"{what} cannot be read"
    hit = glob_match(token.value.casefold(), value.casefold()) if token.fold else glob_match(token.value, value)
    if hit == (token.op == "=="):
        return "yes", ""
    return "no", f"{what} is {value!r}, the rule wants {'' if token.op == '==' else 'not '}{token.value!r}"


def _test(token: Token, facts: DiskFacts) -> Result:
    if _SUBST.search(token.value):
        return "maybe", f"TEST of a substitution ({token.value!r})"
    rel = token.value
    path = facts.root / rel.lstrip("/") if rel.startswith("/") else facts.sysdir / rel
    exists = path.exists()
    if exists == (token.op == "=="):
        return "yes", ""
    return "no", f"TEST {rel!r}: {'present' if exists else 'absent'}"


def _own_token(token: Token, facts: DiskFacts, action: str) -> Result | None:
    """A match key on the disk itself; None when the token is not one (an assignment, a parent key)."""
    key = token.key
    if key in ("PROGRAM", "IMPORT"):  # match keys whatever their operator: the rule goes on only if they succeed
        return "maybe", f"{key} is only known when udev runs the rule"
    if token.op not in ("==", "!="):
        return None
    if key == "ACTION":
        return _compare(token, action, "the event")
    if key == "SUBSYSTEM":
        return _compare(token, "block", "SUBSYSTEM")
    if key == "KERNEL":
        return _compare(token, facts.name, "the kernel name")
    if key == "DEVPATH":
        return _compare(token, facts.devpath, "DEVPATH")
    if key == "DRIVER":
        return _compare(token, "", "DRIVER")
    if key == "ATTR":
        return _compare(token, _attr_value(facts.sysdir, token.attr or ""), f"ATTR{{{token.attr}}}")
    if key == "SYSCTL":
        name = (token.attr or "").replace(".", "/")
        return _compare(token, _attr_value(facts.root / "proc/sys", name), f"SYSCTL{{{token.attr}}}")
    if key == "ENV":
        return _compare(token, facts.props.get(token.attr or "", ""), f"ENV{{{token.attr}}}")
    if key == "TAG":
        hit = any(glob_match(token.value, t) for t in facts.tags)
        return ("yes", "") if hit == (token.op == "==") else ("no", f"TAG {token.value!r}")
    if key == "TEST":
        return _test(token, facts)
    if key in _PARENT_KEYS:
        return None
    if key in _UNKNOWABLE:
        return "maybe", f"{key} is only known when udev runs the rule"
    return "maybe", f"{key} is a key iosched does not evaluate"


def _parent_value(token: Token, folder: Path, own: bool) -> str | None:
    if token.key == "KERNELS":
        return folder.name
    if token.key == "SUBSYSTEMS":
        return _link_name(folder / "subsystem") or ("block" if own else "")
    if token.key == "DRIVERS":
        return _link_name(folder / "driver")
    return _attr_value(folder, token.attr or "")


def _parents_match(tokens: list[Token], facts: DiskFacts) -> Result:
    """udev's parent keys must all match on one device: the disk itself or one of its parents."""
    if not tokens:
        return "yes", ""
    if any(t.key == "TAGS" or _SUBST.search(t.value) for t in tokens):
        return "maybe", "a parent key iosched cannot evaluate (TAGS or a substitution)"
    for i, folder in enumerate(facts.parents):
        if all(_compare(t, _parent_value(t, folder, i == 0), t.key)[0] == "yes" for t in tokens):
            return "yes", ""
    keys = ", ".join(f"{t.key}{'{' + t.attr + '}' if t.attr else ''}{t.op}{t.value!r}" for t in tokens)
    return "no", f"no device on its path has {keys}"


def match_rule(rule: Rule, facts: DiskFacts, action: str) -> Result:
    """Whether ``rule``'s match keys hold for the disk in an event ``action``: the first key that fails decides;
    else any key that cannot be evaluated makes it a maybe."""
    if rule.unparsed is not None:
        return "maybe", f"iosched cannot read the rule from {rule.unparsed!r}"
    maybe = ""
    parents = []
    for token in rule.tokens:
        if token.key in _PARENT_KEYS and token.op in ("==", "!="):
            parents.append(token)
            continue
        result = _own_token(token, facts, action)
        if result is None:
            continue
        if result[0] == "no":
            return result
        if result[0] == "maybe" and not maybe:
            maybe = result[1]
    verdict, why = _parents_match(parents, facts)
    if verdict == "no":
        return verdict, why
    if maybe or verdict == "maybe":
        return "maybe", maybe or why
    return "yes", "every key matches"


def _walk(rules: list[Rule], facts: DiskFacts, action: str) -> Iterator[tuple[Rule, Match, str]]:
    """Each rule with its result for one event, following GOTO to its LABEL as udev does; a rule a "maybe" GOTO
    may skip is a maybe itself."""
    labels = {lb for r in rules if (lb := r.label())}
    skip_to: tuple[str, int] | None = None
    may_skip: dict[str, int] = {}
    for rule in rules:
        label = rule.label()
        if skip_to is not None:
            if label != skip_to[0]:
                yield rule, "no", f"skipped by the GOTO at line {skip_to[1]}"
                continue
            skip_to = None
        if label is not None:
            may_skip.pop(label, None)
        verdict, why = match_rule(rule, facts, action)
        if verdict == "yes" and may_skip:
            verdict, why = "maybe", f"the GOTO at line {min(may_skip.values())} may skip it"
        target = rule.goto()
        if target is not None and target in labels:
            if verdict == "yes":
                skip_to = (target, rule.line)
            elif verdict == "maybe":
                may_skip.setdefault(target, rule.line)
        yield rule, verdict, why


def queue_rules(device: str, root: str | Path = "/") -> tuple[list[RuleHit], list[str]]:
    """Every rule of every rules file that writes a queue attribute (scheduler, tunables, knobs), in udev's order,
    each with whether it reaches ``device``; and the files that could not be read, each with why."""
    facts = disk_facts(device, root)
    hits: list[RuleHit] = []
    problems: list[str] = []
    for path in rule_files(root):
        text, why = read_config(path)
        if text is None:
            problems.append(f"{shown_path(path, root)}: {why}")
            continue
        rules = parse_rules_text(text, path)
        if not any(r.assigns() for r in rules):
            continue
        ours = {r.line(): r.tag().removeprefix("# iosched: ") for r in parse_rules(text)[0]}
        best: dict[int, tuple[Match, str]] = {}
        for action in ACTIONS:  # a rule reaches the disk when it matches in either event
            for rule, verdict, reason in _walk(rules, facts, action):
                old = best.get(rule.line)
                if old is None or _RANK[verdict] > _RANK[old[0]]:
                    best[rule.line] = (verdict, reason)
        for rule in rules:
            assigns = rule.assigns()
            if not assigns:
                continue
            verdict, reason = best[rule.line]
            sched = [t for t in assigns if t.attr == "queue/scheduler"]
            hits.append(RuleHit(
                file=shown_path(path, root), line=rule.line, scheduler=sched[-1].value if sched else None,
                settings=tuple(((t.attr or "")[len("queue/"):].removeprefix("iosched/"), t.value)
                               for t in assigns if t.attr != "queue/scheduler"),
                final=any(t.op == ":=" for t in sched), match=verdict, why=reason, iosched=ours.get(rule.text),
                text=rule.text[:300]))
    return hits, problems


def effective_scheduler_rule(hits: list[RuleHit]) -> RuleHit | None:
    """The rule whose scheduler udev leaves in place: the first final one that may match, else the last that may;
    None when no rule that may reach the disk sets its scheduler."""
    candidates = [h for h in hits if h.scheduler is not None and h.match != "no"]
    final = [h for h in candidates if h.final]
    if final:
        return final[0]
    return candidates[-1] if candidates else None


def effective_setting_rules(hits: list[RuleHit]) -> dict[str, RuleHit]:
    """Per queue setting other than the scheduler, the last rule that may reach the disk and writes it."""
    out: dict[str, RuleHit] = {}
    for h in hits:
        if h.match == "no":
            continue
        for key, _value in h.settings:
            out[key] = h
    return out
