"""Opening the TUI from the command line: typed options in, an exit code out. The only tui module the
command line imports (lazily, inside the command that opens the TUI)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from iosched.core.errors import IoschedError
from iosched.core.journal import default_run_dir

if TYPE_CHECKING:
    from iosched.core.recording import Recording


@dataclass(frozen=True)
class TuiOptions:
    """What the command line passes to the TUI (never its argparse namespace)."""

    root: str = "/"
    interval: float = 1.0
    theme: str | None = None  # None: dark, or mono when NO_COLOR is set
    focus: str | None = None  # select this device at start (the demo sandbox)
    cleanups: tuple[Callable[[], None], ...] = field(default=())  # run on SIGHUP, which skips every `finally`

    @property
    def theme_name(self) -> str:
        return self.theme or ("mono" if os.environ.get("NO_COLOR") else "dark")


def acquire_instance_lock(run_dir: Path) -> int | None:
    """An exclusive lock so a second TUI on the machine is told about the first. None: lock not possible."""
    try:
        run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(run_dir / "tui.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return None  # not root: nothing to protect, the TUI is read-only anyway
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        other = os.read(fd, 32).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise IoschedError(f"another iosched is already running on this machine (pid {other})") from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


def run_replay(options: TuiOptions, rec: Recording, name: str) -> int:
    if not sys.stdout.isatty():
        raise IoschedError("the replay opens the TUI and needs a terminal; `iosched report FILE` prints it")
    from iosched.tui.app import IoschedApp

    app = IoschedApp(root=options.root, theme_name=options.theme_name, replay=rec, replay_name=name)
    return app.run() or 0


def run_app(options: TuiOptions) -> int:
    if not sys.stdout.isatty():
        raise IoschedError("the TUI needs a terminal; use `iosched watch` or `iosched list` in scripts")
    lock = acquire_instance_lock(default_run_dir(options.root))
    from iosched.tui.app import IoschedApp

    app = IoschedApp(root=options.root, interval=options.interval, theme_name=options.theme_name,
                     focus=options.focus)
    app.hangup_cleanups.extend(options.cleanups)
    app.call_later(app.install_signal_handlers)
    try:
        code = app.run()
    finally:
        app.kill_job()  # however the app ended, no fio and no scratch file outlive it
        app.wait_for_children()  # an experiment puts the device back, fio is reaped, before we go
        if lock is not None:
            with contextlib.suppress(OSError):
                os.close(lock)
    return code or 0
