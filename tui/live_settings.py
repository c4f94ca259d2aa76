"""The live screen's writes: scheduler switches, tunable edits and the persistence rule.

Each write runs in a thread worker (a switch on a busy device waits for its queue to drain; the rule file is
fsynced) and reports back with its own message. Switches and tunable edits are debounced separately: one of
each at a time.

``SettingWrites`` is a part of the live screen (``screen.settings``, a widget that shows nothing itself:
live_part.py): it owns the writes, their workers and messages, and what this session changed (restored on quit);
the screen keeps the keys and hands over the device to write.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from textual import on
from textual.binding import Binding, BindingType
from textual.message import Message

from iosched.core.base.errors import IoschedError
from iosched.core.settings.persist import apply_hint, build_rule, diff, earlier_rules_notice, merged, read_rules_file
from iosched.core.settings.persist_target import match_label, name_warning
from iosched.core.settings.persist_target import matches as persist_matches
from iosched.core.settings.sandbox import is_sandbox
from iosched.core.settings.scheduler import switch_scheduler
from iosched.core.settings.tunables import apply as apply_settings
from iosched.core.settings.tunables import changed_here, list_settings
from iosched.core.settings.writes import WriteResult, WriteStuck, write_rules_file
from iosched.tui.dialogs import PersistScreen, SchedulerPicker, TunablesScreen
from iosched.tui.live_part import DevicesChanged, LivePart
from iosched.tui.rule_dialog import RuleChangeScreen

if TYPE_CHECKING:
    from iosched.core.kernel.device_doc import DeviceDoc
    from iosched.core.live.monitor import Monitor

# Listed in LiveScreen.BINDINGS.
SWITCH_KEYS: list[BindingType] = [
    Binding("s", "switch", "Scheduler", tooltip="switch the selected device's IO scheduler (picker; Enter applies)"),
]
TUNING_KEYS: list[BindingType] = [
    Binding("u", "tunables", "Tunables",
            tooltip="the scheduler's tunables and the queue knobs, with meanings; Enter edits (journaled)"),
    # Rarely used and writes a file: kept out of the footer, listed in the help.
    Binding("P", "persist", "Persist", show=False,
            tooltip="make the selected device's scheduler permanent (udev rule; shows the change first)"),
]


class SwitchDone(Message):
    bubble = False  # the part's own

    def __init__(self, result: WriteResult) -> None:
        super().__init__()
        self.result = result


class TunableDone(Message):
    bubble = False  # the part's own

    def __init__(self, result: WriteResult) -> None:
        super().__init__()
        self.result = result


class RuleWritten(Message):
    bubble = False  # the part's own

    def __init__(self, hint: str) -> None:
        super().__init__()
        self.hint = hint


class WriteFailed(Message):
    """A switch, a tunable edit or the rule file failed: ``title`` heads the notice, ``kind`` frees its debounce;
    ``pending``: the (device, attribute) of a write the kernel has not returned from, journaled as a change of this
    session (the quit's restore names it, and puts it back once the kernel lets go)."""

    bubble = False

    def __init__(self, kind: Literal["switch", "tunable", "rule"], title: str, error: str,
                 pending: tuple[str, str] | None = None) -> None:
        super().__init__()
        self.kind = kind
        self.title = title
        self.error = error
        self.pending = pending


def _failed(kind: Literal["switch", "tunable"], title: str, e: Exception) -> WriteFailed:
    return WriteFailed(kind, title, _error(e), (e.device, e.attr) if isinstance(e, WriteStuck) else None)


def _error(e: Exception) -> str:
    return str(e) if isinstance(e, IoschedError) else f"{type(e).__name__}: {e}"


class SettingWrites(LivePart):
    """Switches, tunable edits and the persistence rule for one live screen, each write in a worker."""

    def __init__(self, monitor: Monitor, read_only: bool, rules_file: str) -> None:
        super().__init__(monitor, read_only, id="settings-part")
        self.rules_file = rules_file
        self.switching = False  # a switch is being written: the next waits (debounce)
        self.tuning = False  # a tunable is being written
        self.changed: set[tuple[str, str]] = set()  # (device, attribute) this session wrote: restored on quit

    def _run(self, name: str, group: str, work: Callable[[], None]) -> None:
        self.run_thread(work, name=name, group=group)

    def _written(self, r: WriteResult, label: str, kind: str) -> None:
        """A write that changed something: kept for the quit's restore, marked on the graphs, the devices re-read."""
        self.changed.add((r.device, r.attr))
        self.monitor.mark(r.device, label, r.time, kind)
        self.post_message(DevicesChanged())

    # ---- scheduler ----------------------------------------------------------------------------
    def pick_scheduler(self, dev: DeviceDoc) -> None:
        """The scheduler picker for ``dev``, unless a switch is still being written."""
        if self.switching:
            return  # debounce: one switch at a time

        def chosen(name: str | None) -> None:
            if name is not None:
                self.start_switch(dev.name, name)

        self.app.push_screen(SchedulerPicker(dev.name, dev.scheduler, dev.schedulers), chosen)

    def start_switch(self, device: str, name: str) -> None:
        """Switch ``device`` to scheduler ``name`` in a worker (the picker and the command palette come here)."""
        if self.refused_read_only():  # the command palette comes here directly
            return
        if self.switching:
            self.notify("A switch is already in progress.", severity="warning")
            return
        self.switching = True
        self._run("switch", "switch", partial(self._switch, device, name))

    def _switch(self, device: str, name: str) -> None:
        if self.read_only:
            return
        try:
            self.post_message(SwitchDone(switch_scheduler(device, name, root=self.monitor.root)))
        except Exception as e:  # never let a write take the app down
            self.post_message(_failed("switch", f"{device}: switch failed", e))

    @on(SwitchDone)
    def switch_done(self, message: SwitchDone) -> None:
        self.switching = False
        r = message.result
        if r.old == r.new:
            self.notify(f"{r.device} already {r.new}.")
            return
        self._written(r, r.new, "switch")
        self.notify(f"{r.device}: {r.old} -> {r.new} in {r.seconds * 1000:.1f} ms")

    # ---- tunables -----------------------------------------------------------------------------
    def edit_tunables(self, dev: DeviceDoc) -> None:
        """The tunables of ``dev``, with their meanings; the one edited is written in a worker."""
        try:
            settings = list_settings(dev.name, self.monitor.root)
        except IoschedError as e:
            self.notify(str(e), severity="error")
            return

        def edited(change: tuple[str, str] | None) -> None:
            if change is not None:
                self.write_tunable(dev.name, change)

        self.app.push_screen(TunablesScreen(dev.name, settings), edited)

    def write_tunable(self, device: str, change: tuple[str, str]) -> None:
        """Write one (name, value) of ``device``'s tunables in a worker, unless one is still being written."""
        if self.tuning:
            self.notify("A setting is still being written.", severity="warning")
            return
        self.tuning = True
        self._run("tunable", "tunable", partial(self._tunable, device, change))

    def _tunable(self, device: str, change: tuple[str, str]) -> None:
        if self.read_only:
            return
        try:
            self.post_message(TunableDone(apply_settings(device, [change], self.monitor.root)[0]))
        except Exception as e:  # never let a write take the app down
            self.post_message(_failed("tunable", f"{device}: {change[0]} not changed", e))

    @on(TunableDone)
    def tunable_done(self, message: TunableDone) -> None:
        self.tuning = False
        r = message.result
        name = r.attr.rsplit("/", 1)[-1]
        if r.old == r.new:
            self.notify(f"{r.device} {name} already {r.new}.")
            return
        self._written(r, f"{name}={r.new}", "tunable")
        self.notify(f"{r.device}: {name} {r.old} -> {r.new} in {r.seconds * 1000:.1f} ms")

    # ---- persistence --------------------------------------------------------------------------
    def persist(self, dev: DeviceDoc, scheduler: str | None = None,
                settings: list[tuple[str, str]] | None = None) -> None:
        """A udev rule that keeps ``dev``'s scheduler (and the tunables set here), or the ``scheduler`` and
        ``settings`` given (an advice's): the match chosen, the change shown, then written in a worker."""
        root = self.monitor.root
        if is_sandbox(dev.name, root):
            self.notify(f"{dev.name} is the demo sandbox, detached and deleted when the demo ends: no rule is "
                        "written for it.", severity="error", timeout=8)
            return
        try:
            if settings is None:
                settings = changed_here(dev.name, root)  # tuned with iosched: kept in the rule too
            ways = persist_matches(dev.name, root)  # a few small sysfs and udev files: microseconds
        except IoschedError as e:
            self.notify(str(e), severity="error")
            return
        choices = [(by, match_label(dev.name, by, value)) for by, value in ways]
        scheduler = scheduler or dev.scheduler
        if scheduler is None:  # listed schedulers but none in use: nothing to keep
            self.notify(f"{dev.name} has no IO scheduler in use.", severity="warning")
            return

        def chosen(by: str | None) -> None:
            if by is None:
                return
            try:
                rule = build_rule(dev.name, scheduler, settings, by, root)
                path = Path(self.rules_file)
                old = read_rules_file(path)  # a small file under /etc: microseconds
                new = merged(old, rule)
            except (IoschedError, OSError) as e:
                self.notify(str(e), severity="error")
                return
            if notice := earlier_rules_notice(path):
                self.notify(notice, title="Earlier rules", severity="warning", timeout=15)
            if new == old:
                self.notify(f"{path} already has this rule.")
                return

            def confirmed(yes: bool | None) -> None:
                if yes:
                    self._run("rule", "rule", partial(self._write_rule, path, new, lambda: apply_hint(rule)))

            self.app.push_screen(RuleChangeScreen(str(path), diff(old, new, str(path)),
                                                  name_warning(dev.name, rule.by)), confirmed)

        what = scheduler + "".join(f" {k}={v}" for k, v in settings)
        self.app.push_screen(PersistScreen(dev.name, what, choices, self.rules_file), chosen)

    def _write_rule(self, path: Path, text: str, hint: Callable[[], str]) -> None:
        """The rule file is written with fsync: off the UI thread."""
        if self.read_only:
            return
        try:
            write_rules_file(path, text)
        except Exception as e:
            self.post_message(WriteFailed("rule", "persist failed", _error(e)))
        else:
            self.post_message(RuleWritten(hint()))

    @on(RuleWritten)
    def rule_written(self, message: RuleWritten) -> None:
        self.notify(f"Written. Apply now with: {message.hint}", timeout=12)

    @on(WriteFailed)
    def write_failed(self, message: WriteFailed) -> None:
        if message.kind == "switch":
            self.switching = False
        elif message.kind == "tunable":
            self.tuning = False
        if message.pending is not None:
            self.changed.add(message.pending)
        self.notify(message.error, title=message.title, severity="error", timeout=8)
