"""What an experiment's thread shares with whoever may stop it (the TUI, a signal handler): ``Control``."""

from __future__ import annotations

import signal
import threading
from dataclasses import dataclass, field

from iosched.core.base.errors import IoschedError
from iosched.core.load.children import Child
from iosched.core.load.fio import FioHandle


class Cancelled(IoschedError):
    pass


@dataclass
class Control:
    """Shared between the experiment's thread and whoever may stop it (TUI, signal handler)."""

    cancelled: threading.Event = field(default_factory=threading.Event)
    fio: FioHandle | None = None  # the running workload (a --cmd's background job too)
    child: Child | None = None  # a running --cmd
    foreground: FioHandle | None = None  # a start-up's replay, beside its background (then ``fio``)

    def cancel(self) -> None:
        self.cancelled.set()
        if self.fio is not None:
            self.fio.stop()
        if self.foreground is not None:
            self.foreground.stop()
        if self.child is not None:
            self.child.signal_group(signal.SIGKILL)
