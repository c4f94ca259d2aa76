"""What ends a screen's experiment: the Advise and Compare screens each run one in a thread worker, stopped through
its Control (core puts the device back once fio has stopped). Esc cancels it and goes back once that is done; quit
cancels it at once and, after the UI is gone, waits for it (tui/live_screen.py ``stop_children``)."""

from __future__ import annotations

import threading

from iosched.core.experiment.control import Control
from iosched.core.settings.writes import write_deadline

# Beside the scheduler switch's deadline: fio's end once told to stop, and the tunables written back after the switch.
AROUND_SWITCH_S = 15.0


def put_back_wait_s() -> float:
    """How long a cancelled run is given to put its device back: the switch back within its deadline, and the rest."""
    return write_deadline("queue/scheduler") + AROUND_SWITCH_S


class WorkerRun:
    """Mixed into a screen that sets ``ctl`` (its run's Control) and ``thread`` (its worker's thread) when a run
    starts, whose ``running`` says whether one runs, and that dismisses itself at the run's end when
    ``leave_when_done``."""

    running: bool
    ctl: Control | None
    thread: threading.Thread | None
    leave_when_done: bool

    def cancel_to_leave(self) -> bool:
        """Esc while a run goes on: cancel it, and go back once the device is put back. False when none runs."""
        if not (self.running and self.ctl is not None):
            return False
        self.leave_when_done = True
        self.ctl.cancel()
        return True

    def cancel(self) -> None:
        """Quit path: stop fio now; the worker then puts the device back (see wait())."""
        if self.running and self.ctl is not None:
            self.ctl.cancel()

    def wait(self, timeout: float | None = None) -> None:
        """After a cancel (the UI gone, or a restore about to run): give core the time to put the device back,
        by default as long as its switch back may take (put_back_wait_s)."""
        t = self.thread
        if t is not None and t is not threading.current_thread():
            t.join(put_back_wait_s() if timeout is None else timeout)
