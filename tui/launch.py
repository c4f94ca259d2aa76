"""Opening the TUI from the command line: typed options in, an exit code out. The only tui module the
command line imports (lazily, inside the command that opens the TUI)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from iosched.core.base.errors import IoschedError
from iosched.core.settings.journal import default_run_dir
from iosched.core.settings.writer_lock import WriterBusy, acquire_writer_lock


@dataclass(frozen=True)
class TuiOptions:
    """What the command line passes to the TUI (never its argparse namespace)."""

    root: str = "/"
    interval: float = 1.0
    theme: str | None = None  # None: dark, or mono when NO_COLOR is set
    focus: str | None = None  # select this device at start (the demo sandbox)
    sandbox: str | None = None  # the demo's device: deleted on exit, so quitting never offers to restore it
    cleanups: tuple[Callable[[], None], ...] = field(default=())  # run on SIGHUP, which skips every `finally`
    read_only: bool = False  # a viewer: takes no writer lock, refuses every write (browser views by default)
    served: bool = False  # started by `iosched serve`: no commands and no job files from the browser

    @property
    def theme_name(self) -> str:
        return self.theme or ("mono" if os.environ.get("NO_COLOR") else "dark")


def served_in_browser() -> bool:
    """textual-serve runs the app with its web driver over pipes: no terminal, and none needed."""
    return os.environ.get("TEXTUAL_DRIVER", "").endswith(":WebDriver")


def has_terminal() -> bool:
    """Whether a screen can open here: a terminal to draw on and to read keys from, or a browser tab."""
    return served_in_browser() or (sys.stdin.isatty() and sys.stdout.isatty())


def run_replay(options: TuiOptions, path: Path) -> int:
    """The replay of the recording at ``path``: the screen opens at once, the file is read in a worker; a
    file found damaged on the way ends the TUI and is told in one sentence here (exit 2)."""
    if not sys.stdout.isatty():
        raise IoschedError("the replay opens the TUI and needs a terminal; `iosched report FILE` prints it")
    from iosched.tui.app import IoschedApp

    app = IoschedApp(root=options.root, theme_name=options.theme_name, replay=path, replay_name=path.name)
    code = app.run() or 0
    if app.replay_failure is not None:
        raise app.replay_failure
    return code


def run_app(options: TuiOptions) -> int:
    browser = served_in_browser()
    if not sys.stdout.isatty() and not browser:
        raise IoschedError("the TUI needs a terminal; use `iosched watch` or `iosched list` in scripts")
    read_only, busy, lock = options.read_only, "", None
    if not read_only:  # viewers take no lock: any number of them may watch beside the writer
        try:
            lock = acquire_writer_lock(default_run_dir(options.root))
        except WriterBusy as e:
            if not browser:
                raise
            # A second browser tab of `serve --allow-writes`: a view, not a dead page.
            read_only, busy = True, f"iosched pid {e.pid} holds the writer lock: this tab is a read-only view."
    from iosched.tui.app import IoschedApp

    app = IoschedApp(root=options.root, interval=options.interval, theme_name=options.theme_name,
                     focus=options.focus, sandbox=options.sandbox, read_only=read_only,
                     served=options.served or browser)
    if busy:
        app.call_later(app.notify, busy, severity="warning", timeout=10)
    app.hangup_cleanups.extend(options.cleanups)
    app.call_later(app.install_signal_handlers)
    try:
        code = app.run()
    finally:
        app.stop_children()  # however the app ended, no fio and no scratch file outlive it
        app.wait_for_children()  # fio is reaped and an experiment puts the device back before we go
        if lock is not None:
            with contextlib.suppress(OSError):
                os.close(lock)
    return code or 0
