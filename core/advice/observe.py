"""A disk as `advise` first sees it: its class, its scheduler and tunables, and who set each — iosched (its
journal: a live iosched, or one that ended without putting the value back), tuned (the active profile's disk
section), a udev rule (file and line), or the kernel's own default — with what contradicts what.

Reads only, under a movable root: sysfs, the udev database, udev's rules directories, tuned's profiles, the
journal. Nothing here writes or runs anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from iosched.core.advice.device_class import DeviceClass, KernelDefault, kernel_default, read_device_class
from iosched.core.advice.tuned_profile import TunedState, first_offered, tuned_state
from iosched.core.advice.tunings import DEFAULTS
from iosched.core.advice.udev_rules import (
    RuleHit,
    disk_facts,
    effective_scheduler_rule,
    effective_setting_rules,
    queue_rules,
)
from iosched.core.kernel.modules import installed_schedulers
from iosched.core.kernel.sysfs import parse_scheduler, read_attr, read_int, tunable_home
from iosched.core.settings.journal import Journal, JournalEntry, JournalUnreadable, default_run_dir
from iosched.core.settings.scheduler import read_knobs, read_tunables
from iosched.core.settings.writes import is_tunable

SetterKind = Literal["iosched", "tuned", "udev", "kernel", "unknown"]


@dataclass(frozen=True)
class SetBy:
    """Who set a value, as far as can be told."""

    kind: SetterKind
    words: str  # "the udev rule /etc/udev/rules.d/61-iosched.rules:4 (iosched persist, by=serial …)"
    where: str | None = None  # FILE:LINE of a rule, or a tuned profile's file


@dataclass(frozen=True)
class Tunable:
    name: str
    value: str
    scope: str  # the scheduler it belongs to, or "queue" for a queue knob
    default: str | None  # the kernel's, when iosched knows it
    set_by: SetBy

    @property
    def changed(self) -> bool:
        """Set by someone rather than left as the kernel made it."""
        return self.set_by.kind != "kernel"


@dataclass(frozen=True)
class JournalNote:
    """A value iosched changed on this disk and has not put back."""

    attr: str
    original: str
    pid: int
    live: bool


@dataclass(frozen=True)
class Observation:
    device: DeviceClass
    scheduler: str | None
    schedulers: tuple[str, ...]
    set_by: SetBy
    kernel: KernelDefault
    tunables: tuple[Tunable, ...]
    udev: tuple[RuleHit, ...]  # every rule writing a queue attribute, whether it reaches this disk or not
    tuned: TunedState
    journal: tuple[JournalNote, ...]
    notes: tuple[str, ...]

    @property
    def reapplying_rule(self) -> RuleHit | None:
        """A udev rule that sets this disk's scheduler: it runs again on every change event, during tests too."""
        return effective_scheduler_rule(list(self.udev))


def _journal(device: str, root: str | Path, maj_min: str | None,
             diskseq: int | None) -> tuple[list[JournalEntry], str | None]:
    try:
        entries = Journal(default_run_dir(root)).entries()
    except JournalUnreadable as err:
        return [], f"the journal {err.path} is unreadable ({err.why}): what iosched changed cannot be told"
    mine = []
    for e in entries.values():
        if e.device != device:
            continue
        if (e.maj_min and maj_min and e.maj_min != maj_min) or (e.diskseq and diskseq and e.diskseq != diskseq):
            continue  # an earlier device under the same name
        mine.append(e)
    return mine, None


def _live(pid: int, root: str | Path) -> bool:
    return pid > 0 and Path(root, "proc", str(pid)).is_dir()


def _by_iosched(e: JournalEntry, root: str | Path, what: str) -> SetBy:
    if _live(e.pid, root):
        return SetBy("iosched", f"a running iosched (pid {e.pid}), which changed {what} from {e.original}", "journal")
    return SetBy("iosched", f"an iosched that has ended (pid {e.pid}), which changed {what} from {e.original}: "
                            f"`iosched restore` puts back {e.original}", "journal")


def _scheduler_set_by(current: str | None, journal: dict[str, JournalEntry], tuned: TunedState,
                      schedulers: tuple[str, ...], rule: RuleHit | None, kernel: KernelDefault,
                      root: str | Path) -> SetBy:
    entry = journal.get("queue/scheduler")
    if entry is not None and entry.original != current:
        return _by_iosched(entry, root, "it")
    disk = tuned.effective()
    if disk is not None and first_offered(disk.elevator, schedulers) == current:
        state = "" if tuned.running else "; tuned is not running now"
        hedge = "probably " if disk.match == "maybe" else ""
        return SetBy("tuned", f"{hedge}tuned, profile {disk.profile} ([{disk.section}] elevator={disk.elevator} in "
                              f"{disk.file}{state})", disk.file)
    if rule is not None and rule.scheduler == current:
        ours = f" (iosched persist, {rule.iosched})" if rule.iosched else ""
        hedge = "probably " if rule.match == "maybe" else ""
        return SetBy("udev", f"{hedge}the udev rule {rule.where()}{ours}", rule.where())
    if kernel.scheduler == current:
        return SetBy("kernel", f"the kernel's default: {kernel.why}")
    if current is None:
        return SetBy("kernel", kernel.why)
    return SetBy("unknown", f"hand or by a tool iosched cannot see: no journal entry, tuned profile or udev "
                            f"rule sets {current}, and the kernel's default is {kernel.scheduler or 'none'}")


def _tunable_set_by(name: str, value: str, attr: str, default: str | None, journal: dict[str, JournalEntry],
                    rules: dict[str, RuleHit], root: str | Path) -> SetBy:
    entry = journal.get(attr)
    if entry is not None and entry.original != value:
        return _by_iosched(entry, root, name)
    rule = rules.get(name)
    if rule is not None and dict(rule.settings).get(name) == value:
        hedge = "probably " if rule.match == "maybe" else ""
        return SetBy("udev", f"{hedge}the udev rule {rule.where()}", rule.where())
    if default is None or default == value:
        return SetBy("kernel", "as the kernel made it" if default else "as the kernel made it, as far as iosched "
                                                                         "can tell")
    return SetBy("unknown", f"not the kernel's default ({default}): set by hand or by a tool iosched cannot see")


def observe(device: str, root: str | Path = "/") -> Observation:
    """Everything `advise` says about ``device`` before anything runs (BadInput when it is not a whole disk)."""
    dev = read_device_class(device, root)
    sysdir = Path(root, "sys/block", device)
    current, available = parse_scheduler(read_attr(sysdir / "queue/scheduler"))
    schedulers = tuple(available)
    kernel = kernel_default(dev, schedulers, root)
    facts = disk_facts(device, root)
    hits, problems = queue_rules(device, root)
    tuned = tuned_state(facts)
    entries, journal_problem = _journal(device, root, read_attr(sysdir / "dev"), read_int(sysdir / "diskseq"))
    by_attr = {e.attr: e for e in entries if not (is_tunable(e.attr) and e.scheduler != current)}
    rule = effective_scheduler_rule(hits)
    set_by = _scheduler_set_by(current, by_attr, tuned, schedulers, rule, kernel, root)

    setting_rules = effective_setting_rules(hits)
    tunables = []
    for name, value in read_tunables(device, root).items():
        default = DEFAULTS.get(current or "", {}).get(name)
        attr = tunable_home(sysdir, f"queue/iosched/{name}")  # async_depth is in queue/ on newer kernels
        tunables.append(Tunable(name, value, current or "", default,
                                _tunable_set_by(name, value, attr, default, by_attr, setting_rules, root)))
    for name, value in read_knobs(device, root).items():
        tunables.append(Tunable(name, value, "queue", None,
                                _tunable_set_by(name, value, f"queue/{name}", None, by_attr, setting_rules, root)))

    notes = list(dev.notes)
    if journal_problem:
        notes.append(journal_problem)
    notes += [f"could not read {p}" for p in problems]
    notes += list(tuned.problems)
    for name, module in sorted(installed_schedulers(root).items()):
        if name not in schedulers:
            notes.append(f"{name} is installed as a module but not loaded, so it is no candidate: "
                         f"`modprobe {module}` (or `iosched set {device} {name} --load-module`) lists it on every "
                         "disk; then advise tests it too")
    if rule is not None and rule.scheduler != current and rule.match == "yes" and set_by.kind != "iosched":
        notes.append(f"the udev rule {rule.where()} sets {rule.scheduler}, yet {device} has {current}: something "
                     "changed it after udev did")
    disk = tuned.effective()
    if disk is not None and tuned.running and first_offered(disk.elevator, schedulers) not in (current, None) \
            and set_by.kind != "iosched":
        notes.append(f"tuned's profile {disk.profile} sets {disk.elevator}, yet {device} has {current}")
    if rule is not None:
        notes.append(f"the udev rule {rule.where()} sets the scheduler again on every change event of {device} "
                     "(closing it after a write makes one): a test's switch can be undone under it")
    journal = tuple(JournalNote(e.attr, e.original, e.pid, _live(e.pid, root)) for e in entries)
    return Observation(dev, current, schedulers, set_by, kernel, tuple(tunables), tuple(hits), tuned, journal,
                       tuple(notes))


def observation_lines(obs: Observation) -> list[str]:
    """What `advise` prints first: the scheduler and who set it, then the device's class, then the evidence."""
    dev = obs.device
    lines = [f"{dev.name}: {obs.scheduler or 'no scheduler'}, set by {obs.set_by.words}"]
    lines.append("  " + dev.words().split(": ", 1)[1] + "".join(f"; {s}" for s in dev.stack_words()))
    if obs.schedulers:
        kd = obs.kernel.scheduler or "none"
        lines.append(f"  offers {', '.join(obs.schedulers)}; the kernel's default here is {kd}")
    changed = [t for t in obs.tunables if t.changed]
    for t in changed:
        lines.append(f"  {t.name}={t.value} ({t.scope}): set by {t.set_by.words}")
    for h in obs.udev:
        if h.match == "no" and h.iosched is None:
            continue
        what = h.scheduler if h.scheduler else ", ".join(f"{k}={v}" for k, v in h.settings)
        reach = {"yes": "reaches it", "maybe": f"may reach it ({h.why})", "no": f"does not reach it ({h.why})"}
        lines.append(f"  udev: {h.where()} sets {what}{' (final)' if h.final else ''}: {reach[h.match]}")
    unreached = sum(1 for h in obs.udev if h.match == "no" and h.iosched is None)
    if unreached:
        lines.append(f"  udev: {unreached} other rule{'s' if unreached > 1 else ''} setting queue attributes "
                     f"do{'es' if unreached == 1 else ''} not reach it")
    if obs.tuned.active:
        run = "running" if obs.tuned.running else "not running"
        sets = "; ".join(f"[{d.section}] elevator={d.elevator} in {d.file}: "
                         f"{'reaches it' if d.match == 'yes' else d.why}" for d in obs.tuned.disks)
        lines.append(f"  tuned ({run}): profile {' '.join(obs.tuned.active)}"
                     + (f"; {sets}" if sets else "; no disk section sets a scheduler"))
    for n in obs.notes:
        lines.append(f"  note: {n}")
    return lines
