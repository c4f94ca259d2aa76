"""The live screen's writes: scheduler switches, tunable edits and the persistence rule.

Each write runs in a thread worker (a switch on a busy device waits for its queue to drain; the rule file is
fsynced) and reports back with its own message. Switches and tunable edits are debounced separately: one of
each at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from textual import work
from textual.binding import Binding, BindingType
from textual.message import Message

from iosched.core.errors import IoschedError
from iosched.core.persist import apply_hint, build_rule, merged
from iosched.core.persist import covers as persist_covers
from iosched.core.scheduler import switch_scheduler
from iosched.core.tunables import apply as apply_settings
from iosched.core.tunables import changed_here, list_settings
from iosched.core.writes import WriteResult, write_rules_file
from iosched.tui.dialogs import ConfirmScreen, PersistScreen, SchedulerPicker, TunablesScreen

if TYPE_CHECKING:
    from iosched.tui.live_screen import LiveScreen

# Listed in LiveScreen.BINDINGS (Textual reads BINDINGS from widget classes only, not from mixins).
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


class SwitchFailed(Message):
    def __init__(self, device: str, error: str) -> None:
        super().__init__()
        self.device = device
        self.error = error


class TunableDone(Message):
    def __init__(self, result: WriteResult) -> None:
        super().__init__()
        self.result = result


class TunableFailed(Message):
    def __init__(self, device: str, name: str, error: str) -> None:
        super().__init__()
        self.device = device
        self.name = name
        self.error = error


class RuleWritten(Message):
    def __init__(self, hint: str) -> None:
        super().__init__()
        self.hint = hint


class RuleFailed(Message):
    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


def _error(e: Exception) -> str:
    return str(e) if isinstance(e, IoschedError) else f"{type(e).__name__}: {e}"


class SettingActions:
    """Mixed into LiveScreen: ``self`` is the live screen."""

    switching = False
    tuning = False

    # ---- scheduler ----------------------------------------------------------------------------
    def action_switch(self: LiveScreen) -> None:
        if self.refused_read_only():
            return
        dev = self.selected_device()
        if dev is None:
            self.notify("No device selected.", severity="warning")
            return
        if not dev.has_scheduler:
            self.notify(f"{dev.name} has no IO scheduler (its driver bypasses the elevator).", severity="warning")
            return
        if self.switching:
            return  # debounce: one switch at a time

        def chosen(name: str | None) -> None:
            if name is not None:
                self.start_switch(dev.name, name)

        self.app.push_screen(SchedulerPicker(dev.name, dev.scheduler, dev.schedulers), chosen)

    def start_switch(self: LiveScreen, device: str, name: str) -> None:
        if self.refused_read_only():  # the command palette comes here directly
            return
        if self.switching:
            self.notify("A switch is already in progress.", severity="warning")
            return
        self.switching = True
        self._switch_worker(device, name)

    @work(thread=True, group="switch", exit_on_error=False)
    def _switch_worker(self: LiveScreen, device: str, name: str) -> None:
        if self.read_only:
            return
        try:
            self.post_message(SwitchDone(switch_scheduler(device, name, root=self.monitor.root)))
        except Exception as e:  # never let a write take the app down
            self.post_message(SwitchFailed(device, _error(e)))

    def on_switch_done(self: LiveScreen, message: SwitchDone) -> None:
        self.switching = False
        r = message.result
        if r.old == r.new:
            self.notify(f"{r.device} already {r.new}.")
            return
        self.changed_devices.add(r.device)
        self.monitor.mark(r.device, r.new, r.time, "switch")
        self.notify(f"{r.device}: {r.old} -> {r.new} in {r.seconds * 1000:.1f} ms")
        self.refresh_inventory()

    def on_switch_failed(self: LiveScreen, message: SwitchFailed) -> None:
        self.switching = False
        self.notify(message.error, title=f"{message.device}: switch failed", severity="error", timeout=8)

    # ---- tunables -----------------------------------------------------------------------------
    def action_tunables(self: LiveScreen) -> None:
        if self.refused_read_only():
            return
        dev = self.selected_device()
        if dev is None or not dev.has_scheduler:
            self.notify("Select a device with an IO scheduler first.", severity="warning")
            return
        try:
            settings = list_settings(dev.name, self.monitor.root)
        except IoschedError as e:
            self.notify(str(e), severity="error")
            return

        def edited(change: tuple[str, str] | None) -> None:
            if change is None:
                return
            if self.tuning:
                self.notify("A setting is still being written.", severity="warning")
                return
            self.tuning = True
            self._tunable_worker(dev.name, change)

        self.app.push_screen(TunablesScreen(dev.name, settings), edited)

    @work(thread=True, group="tunable", exit_on_error=False)
    def _tunable_worker(self: LiveScreen, device: str, change: tuple[str, str]) -> None:
        if self.read_only:
            return
        try:
            self.post_message(TunableDone(apply_settings(device, [change], self.monitor.root)[0]))
        except Exception as e:  # never let a write take the app down
            self.post_message(TunableFailed(device, change[0], _error(e)))

    def on_tunable_done(self: LiveScreen, message: TunableDone) -> None:
        self.tuning = False
        r = message.result
        name = r.attr.rsplit("/", 1)[-1]
        if r.old == r.new:
            self.notify(f"{r.device} {name} already {r.new}.")
            return
        self.changed_devices.add(r.device)
        self.monitor.mark(r.device, f"{name}={r.new}", r.time, "tunable")
        self.notify(f"{r.device}: {name} {r.old} -> {r.new} in {r.seconds * 1000:.1f} ms")
        self.refresh_inventory()

    def on_tunable_failed(self: LiveScreen, message: TunableFailed) -> None:
        self.tuning = False
        self.notify(message.error, title=f"{message.device}: {message.name} not changed", severity="error",
                    timeout=8)

    # ---- persistence --------------------------------------------------------------------------
    def action_persist(self: LiveScreen) -> None:
        if self.refused_read_only():
            return
        dev = self.selected_device()
        if dev is None or not dev.scheduler:
            self.notify("Select a device with an IO scheduler first.", severity="warning")
            return
        choices = [("kernel-name", f"KERNEL==\"{dev.name}\" (this name only)")]
        if persist_covers(dev.name):
            choices.append(("rotational", f"every {'rotational' if dev.rotational else 'non-rotational'} disk"))
        if dev.model:
            choices.insert(0, ("model", f"every disk of model {dev.model}"))
        if dev.serial:
            choices.insert(0, ("serial", f"this disk wherever it appears (serial {dev.serial})"))
        scheduler, root = dev.scheduler, self.monitor.root
        try:
            settings = changed_here(dev.name, root)  # tuned with iosched: kept in the rule too
        except IoschedError as e:
            self.notify(str(e), severity="error")
            return

        def chosen(by: str | None) -> None:
            if by is None:
                return
            try:
                rule = build_rule(dev.name, scheduler, settings, by, root)
                path = Path(self.rules_file)
                old = path.read_text() if path.is_file() else ""  # a small file under /etc: microseconds
                new = merged(old, rule)
            except (IoschedError, OSError) as e:
                self.notify(str(e), severity="error")
                return
            if new == old:
                self.notify(f"{path} already has this rule.")
                return

            def confirmed(yes: bool | None) -> None:
                if yes:
                    self._rule_worker(path, new, lambda: apply_hint(rule, dev.name))

            self.app.push_screen(
                ConfirmScreen(f"{path} will get:\n\n{rule.tag()}\n{rule.line()}\n\nWrite it?"), confirmed)

        what = scheduler + "".join(f" {k}={v}" for k, v in settings)
        self.app.push_screen(PersistScreen(dev.name, what, choices, self.rules_file), chosen)

    @work(thread=True, group="rule", exit_on_error=False)
    def _rule_worker(self: LiveScreen, path: Path, text: str, hint: Callable[[], str]) -> None:
        """The rule file is written with fsync: off the UI thread."""
        if self.read_only:
            return
        try:
            write_rules_file(path, text)
        except Exception as e:
            self.post_message(RuleFailed(_error(e)))
        else:
            self.post_message(RuleWritten(hint()))

    def on_rule_written(self: LiveScreen, message: RuleWritten) -> None:
        self.notify(f"Written. Apply now with: {message.hint}", timeout=12)

    def on_rule_failed(self: LiveScreen, message: RuleFailed) -> None:
        self.notify(message.error, severity="error")
