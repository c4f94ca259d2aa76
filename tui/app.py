"""The Textual app, kept thin: themes, the command palette, which screen shows (live or replay), help, quit
and signals. Each view is a Screen with its own keys (live_screen.py, replay_screen.py, compare_screen.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import messages, work
from textual.app import App
from textual.binding import Binding, BindingsMap, BindingType
from textual.dom import DOMNode
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.theme import Theme

from iosched.core.base.errors import IoschedError
from iosched.core.base.terminal_text import printable, printable_text
from iosched.core.live.monitor import Monitor, SampleSource
from iosched.core.settings.persist import DEFAULT_RULES
from iosched.core.settings.restore_report import restore_failed, restore_lines
from iosched.core.settings.writes import restore
from iosched.themes import THEME_NAMES, stylesheets
from iosched.tui.commands import SchedulerCommands
from iosched.tui.dialogs import ConfirmScreen, HelpScreen
from iosched.tui.live_screen import LiveScreen
from iosched.tui.monitor_screen import MonitorScreen
from iosched.tui.scrollbars import whole_cell_scrollbars
from iosched.tui.styles_cache import unpin_styles_caches

if TYPE_CHECKING:
    from iosched.core.live.recording import Recording

MONO_THEME = Theme(
    name="iosched-mono", primary="#c0c0c0", secondary="#a0a0a0", accent="#ffffff", warning="#ffffff",
    error="#ffffff", success="#d0d0d0", foreground="#e0e0e0", background="#000000", surface="#101010",
    panel="#202020", dark=True,
)
TEXTUAL_THEME = {"dark": "textual-dark", "light": "textual-light", "mono": "iosched-mono"}


def binding_help(nodes: list[DOMNode], display: Callable[[Binding], str]) -> list[tuple[str, str]]:
    """(keys, what they do) for the bindings the project declares on ``nodes`` (and their base classes), in
    order; keys with the same text share a line. Textual's own defaults (focus, copy) are not ours to explain."""
    rows: dict[str, list[str]] = {}
    for node in nodes:
        for cls in type(node).__mro__:
            if not cls.__module__.startswith("iosched.") or "BINDINGS" not in cls.__dict__:
                continue
            for bindings in BindingsMap(cls.__dict__["BINDINGS"]).key_to_bindings.values():
                for b in bindings:
                    keys = rows.setdefault(b.tooltip or b.description, [])
                    if display(b) not in keys:
                        keys.append(display(b))
    return [(" / ".join(keys), text) for text, keys in rows.items()]


class IoschedApp(App[int]):
    TITLE = "iosched"
    CSS_PATH: ClassVar = [str(p) for p in stylesheets()]
    COMMANDS: ClassVar = App.COMMANDS | {SchedulerCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "cycle_theme", "Theme", show=False, tooltip="cycle theme: dark, light, mono"),
        Binding("f1,question_mark", "help", "Help", tooltip="this help"),
        Binding("q", "quit", "Quit", tooltip="quit (offers to restore schedulers changed in this session)"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True,
                tooltip="quit (offers to restore schedulers changed in this session)"),
    ]

    def __init__(self, root: str | Path = "/", interval: float = 1.0, theme_name: str = "dark",
                 sampler: SampleSource | None = None, auto_tick: bool = True, watch_udev: bool = True,
                 rules_file: str = DEFAULT_RULES, focus: str | None = None, replay: Recording | Path | None = None,
                 replay_name: str = "", read_only: bool = False, served: bool = False,
                 sandbox: str | None = None) -> None:
        super().__init__()
        self.sandbox = sandbox  # the demo's device, put back and deleted when the demo ends
        unpin_styles_caches()
        whole_cell_scrollbars()
        self.theme_name = theme_name if theme_name in THEME_NAMES else "dark"
        self.hangup_cleanups: list[Callable[[], None]] = []  # run on SIGHUP, which skips every `finally`
        self.live: LiveScreen | None = None
        self.view: MonitorScreen
        if replay is not None:
            from iosched.tui.replay_screen import ReplayScreen

            self.view = ReplayScreen(replay, replay_name)  # a file is read in a worker once the screen shows
        else:
            self.live = self.view = LiveScreen(Monitor(sampler, root), interval, auto_tick, watch_udev,
                                               rules_file, focus, read_only, served)

    @property
    def monitor(self) -> Monitor:
        return self.view.monitor

    @property
    def replay_failure(self) -> IoschedError | None:
        """Why a replay's file could not be shown (it was read after the screen opened), if it could not."""
        return getattr(self.view, "failure", None)

    def get_default_screen(self) -> Screen:
        return self.view

    def on_mount(self) -> None:
        self.register_theme(MONO_THEME)
        self._apply_theme()

    def _apply_theme(self) -> None:
        for name in THEME_NAMES:
            self.set_class(name == self.theme_name, f"theme-{name}")
        self.theme = TEXTUAL_THEME[self.theme_name]

    def action_cycle_theme(self) -> None:
        self.theme_name = THEME_NAMES[(THEME_NAMES.index(self.theme_name) + 1) % len(THEME_NAMES)]
        self._apply_theme()
        self.notify(f"theme: {self.theme_name}", timeout=2)

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Every notification as plain text: its message quotes outside text (an error's words, a path, a device's
        or a job's name), which markup would read; iosched's own notifications use none (tui/plain.py)."""
        super().notify(printable_text(message), title=printable(title), severity=severity, timeout=timeout,
                       markup=False)

    def help_keys(self) -> list[tuple[str, str]]:
        """The keys of the screen in front and the app's, from their bindings."""
        own = [w for w in self.screen.walk_children() if type(w).__module__.startswith("iosched.")]
        keys = list(getattr(self.screen, "HELP_KEYS", ()))
        keys += binding_help([self.screen, *own, self], self.get_key_display)
        keys.append((self.get_key_display(Binding(self.COMMAND_PALETTE_BINDING, "")),
                     "command palette: '<dev>: scheduler -> <name>' and more"))
        return keys

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.help_keys(), getattr(self.screen, "HELP_TEXT", "")))

    # ---- quit and signals ---------------------------------------------------------------------
    def stop_children(self) -> None:
        """fio is told to die and experiments are cancelled; returns at once (the UI thread never waits)."""
        if self.live is not None:
            self.live.stop_children()

    def wait_for_children(self) -> None:
        """After the UI is gone: fio reaped, scratch files removed, an experiment's device put back."""
        if self.live is not None:
            self.live.wait_for_children()

    def on_exit_app(self, _: messages.ExitApp) -> None:
        """Every way out (quit, SIGTERM, a browser tab's quit) ends here while the loop still runs: experiments are
        cancelled now, since Textual's end waits for every worker thread, and an experiment's runs on until
        cancelled (a browser tab's app would be killed before its device is put back)."""
        self.stop_children()

    async def action_quit(self) -> None:
        self.stop_children()
        changed = set(self.live.settings.changed) if self.live is not None else set()
        # The demo's sandbox is put back and deleted on the way out: asking about it would ask about nothing.
        changed = {(device, attr) for device, attr in changed if device != self.sandbox}
        if not changed:
            self.exit(0)
            return
        names = ", ".join(f"{device} {attr.removeprefix('queue/')}" for device, attr in sorted(changed))

        def answered(yes: bool | None) -> None:
            if yes:
                self._restore_and_exit(changed)
            else:
                self.exit(0, message=f"Left changed: {names}. `iosched restore` puts the originals back.")

        self.push_screen(ConfirmScreen(
            f"This session changed: {names}.\n"
            "Restore the original values of these before quitting? Changes made outside this session "
            "(`iosched set`, a compare from the command line) are left alone."),
            answered)

    @work(thread=True, group="restore", exit_on_error=False)
    def _restore_and_exit(self, changed: set[tuple[str, str]]) -> None:
        """Restore in a worker: a switch on a busy device waits for its queue to drain. Only the journal entries
        this process made: another iosched's (or an older one's, which recorded no process) stay. A cancelled
        experiment puts its device back first: the restore waits for it, not to write beside it."""
        if self.live is not None:
            self.live.wait_for_experiments()
        try:
            outcomes = restore(self.monitor.root, only=changed, pid=os.getpid())
        except IoschedError as e:
            self.call_from_thread(self.exit, 1, message=f"Restore failed: {e}. Run `iosched restore`.")
            return
        message = "\n".join(restore_lines(outcomes))
        self.call_from_thread(self.exit, 1 if restore_failed(outcomes) else 0, message=message)

    def install_signal_handlers(self) -> None:
        """SIGTERM quits cleanly; SIGHUP (dropped SSH) cleans up and exits without touching the dead terminal.

        Python dies on both without running `finally`, and Textual installs no handler. Schedulers the user
        switched stay as they are (the journal is on disk; `iosched restore` undoes); fio, a running
        experiment and the demo sandbox are cleaned up first (see _hangup).
        """
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, lambda: self.exit(143))
        loop.add_signal_handler(signal.SIGHUP, self._hangup)

    def _hangup(self) -> None:
        """The terminal is gone: stop fio, let a running experiment put its device back, run the cleanups
        (the demo's sandbox), then leave at once without writing to the dead terminal."""
        self.stop_children()
        with contextlib.suppress(Exception):
            self.wait_for_children()
        for cleanup in self.hangup_cleanups:
            with contextlib.suppress(Exception):
                cleanup()
        os._exit(129)
