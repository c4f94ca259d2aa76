"""The live screen's writes: scheduler switches, tunable edits and the persistence rule.

Each write runs in a thread worker (a switch on a busy device waits for its queue to drain; the rule file is
fsynced) and reports back with its own message. Switches and tunable edits are debounced separately: one of
each at a time.

``SettingWrites`` is owned by the live screen (``screen.settings``): the screen keeps the keys, the actions and
the message handlers (Textual reads bindings from screens and routes messages to them) and delegates here.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Literal

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
from iosched.core.settings.writes import WriteResult, write_rules_file
from iosched.tui.dialogs import PersistScreen, SchedulerPicker, TunablesScreen
from iosched.tui.rule_dialog import RuleChangeScreen

if TYPE_CHECKING:
    from iosched.tui.live_screen import LiveScreen

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
    def __init__(self, result: WriteResult) -> None:
        super().__init__()
        self.result = result


class TunableDone(Message):
    def __init__(self, result: WriteResult) -> None:
        super().__init__()
        self.result = result


class RuleWritten(Message):
    def __init__(self, hint: str) -> None:
        super().__init__()
        self.hint = hint


class WriteFailed(Message):
    """A switch, a tunable edit or the rule file failed: ``title`` heads the notice, ``kind`` frees its debounce."""

    def __init__(self, kind: Literal["switch", "tunable", "rule"], title: str, error: str) -> None:
        super().__init__()
        self.kind = kind
        self.title = title
        self.error = error


def _error(e: Exception) -> str:
    return str(e) if isinstance(e, IoschedError) else f"{type(e).__name__}: {e}"


class SettingWrites:
    """Switches, tunable edits and the persistence rule for one live screen, each write in a worker."""

    def __init__(self, screen: LiveScreen) -> None:
        self.screen = screen
        self.switching = False  # a switch is being written: the next waits (debounce)
        self.tuning = False  # a tunable is being written

    def _run(self, name: str, group: str, work: Callable[[], None]) -> None:
        self.screen.run_worker(work, name=name, group=group, exit_on_error=False, thread=True)

    # ---- scheduler ----------------------------------------------------------------------------
    def pick_scheduler(self) -> None:
        screen = self.screen
        dev = screen.device_to_write()
        if dev is None:
            return
        if self.switching:
            return  # debounce: one switch at a time

        def chosen(name: str | None) -> None:
            if name is not None:
                self.start_switch(dev.name, name)

        screen.app.push_screen(SchedulerPicker(dev.name, dev.scheduler, dev.schedulers), chosen)

    def start_switch(self, device: str, name: str) -> None:
        """Switch ``device`` to scheduler ``name`` in a worker (the picker and the command palette come here)."""
        if self.screen.refused_read_only():  # the command palette comes here directly
            return
        if self.switching:
            self.screen.notify("A switch is already in progress.", severity="warning")
            return
        self.switching = True
        self._run("switch", "switch", partial(self._switch, device, name))

    def _switch(self, device: str, name: str) -> None:
        screen = self.screen
        if screen.read_only:
            return
        try:
            screen.post_message(SwitchDone(switch_scheduler(device, name, root=screen.monitor.root)))
        except Exception as e:  # never let a write take the app down
            screen.post_message(WriteFailed("switch", f"{device}: switch failed", _error(e)))

    def switch_done(self, message: SwitchDone) -> None:
        self.switching = False
        screen = self.screen
        r = message.result
        if r.old == r.new:
            screen.notify(f"{r.device} already {r.new}.")
            return
        screen.changed.add((r.device, r.attr))
        screen.monitor.mark(r.device, r.new, r.time, "switch")
        screen.notify(f"{r.device}: {r.old} -> {r.new} in {r.seconds * 1000:.1f} ms")
        screen.refresh_inventory()

    # ---- tunables -----------------------------------------------------------------------------
    def edit_tunables(self) -> None:
        screen = self.screen
        dev = screen.device_to_write()
        if dev is None:
            return
        try:
            settings = list_settings(dev.name, screen.monitor.root)
        except IoschedError as e:
            screen.notify(str(e), severity="error")
            return

        def edited(change: tuple[str, str] | None) -> None:
            if change is not None:
                self.write_tunable(dev.name, change)

        screen.app.push_screen(TunablesScreen(dev.name, settings), edited)

    def write_tunable(self, device: str, change: tuple[str, str]) -> None:
        """Write one (name, value) of ``device``'s tunables in a worker, unless one is still being written."""
        if self.tuning:
            self.screen.notify("A setting is still being written.", severity="warning")
            return
        self.tuning = True
        self._run("tunable", "tunable", partial(self._tunable, device, change))

    def _tunable(self, device: str, change: tuple[str, str]) -> None:
        screen = self.screen
        if screen.read_only:
            return
        try:
            screen.post_message(TunableDone(apply_settings(device, [change], screen.monitor.root)[0]))
        except Exception as e:  # never let a write take the app down
            screen.post_message(WriteFailed("tunable", f"{device}: {change[0]} not changed", _error(e)))

    def tunable_done(self, message: TunableDone) -> None:
        self.tuning = False
        screen = self.screen
        r = message.result
        name = r.attr.rsplit("/", 1)[-1]
        if r.old == r.new:
            screen.notify(f"{r.device} {name} already {r.new}.")
            return
        screen.changed.add((r.device, r.attr))
        screen.monitor.mark(r.device, f"{name}={r.new}", r.time, "tunable")
        screen.notify(f"{r.device}: {name} {r.old} -> {r.new} in {r.seconds * 1000:.1f} ms")
        screen.refresh_inventory()

    # ---- persistence --------------------------------------------------------------------------
    def persist(self) -> None:
        screen = self.screen
        dev = screen.device_to_write()
        if dev is None:
            return
        root = screen.monitor.root
        if is_sandbox(dev.name, root):
            screen.notify(f"{dev.name} is the demo sandbox, detached and deleted when the demo ends: no rule is "
                          "written for it.", severity="error", timeout=8)
            return
        try:
            settings = changed_here(dev.name, root)  # tuned with iosched: kept in the rule too
            ways = persist_matches(dev.name, root)  # a few small sysfs and udev files: microseconds
        except IoschedError as e:
            screen.notify(str(e), severity="error")
            return
        choices = [(by, match_label(dev.name, by, value)) for by, value in ways]
        scheduler = dev.scheduler
        if scheduler is None:  # listed schedulers but none in use: nothing to keep
            screen.notify(f"{dev.name} has no IO scheduler in use.", severity="warning")
            return

        def chosen(by: str | None) -> None:
            if by is None:
                return
            try:
                rule = build_rule(dev.name, scheduler, settings, by, root)
                path = Path(screen.rules_file)
                old = read_rules_file(path)  # a small file under /etc: microseconds
                new = merged(old, rule)
            except (IoschedError, OSError) as e:
                screen.notify(str(e), severity="error")
                return
            if notice := earlier_rules_notice(path):
                screen.notify(notice, title="Earlier rules", severity="warning", timeout=15)
            if new == old:
                screen.notify(f"{path} already has this rule.")
                return

            def confirmed(yes: bool | None) -> None:
                if yes:
                    self._run("rule", "rule", partial(self._write_rule, path, new, lambda: apply_hint(rule)))

            screen.app.push_screen(RuleChangeScreen(str(path), diff(old, new, str(path)),
                                                    name_warning(dev.name, rule.by)), confirmed)

        what = scheduler + "".join(f" {k}={v}" for k, v in settings)
        screen.app.push_screen(PersistScreen(dev.name, what, choices, screen.rules_file), chosen)

    def _write_rule(self, path: Path, text: str, hint: Callable[[], str]) -> None:
        """The rule file is written with fsync: off the UI thread."""
        if self.screen.read_only:
            return
        try:
            write_rules_file(path, text)
        except Exception as e:
            self.screen.post_message(WriteFailed("rule", "persist failed", _error(e)))
        else:
            self.screen.post_message(RuleWritten(hint()))

    def rule_written(self, message: RuleWritten) -> None:
        self.screen.notify(f"Written. Apply now with: {message.hint}", timeout=12)

    def write_failed(self, message: WriteFailed) -> None:
        if message.kind == "switch":
            self.switching = False
        elif message.kind == "tunable":
            self.tuning = False
        self.screen.notify(message.error, title=message.title, severity="error", timeout=8)
