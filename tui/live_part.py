"""What the live screen's parts share: each part (settings writes, the background job, tracing, capture) is a
widget that owns its workers, handles their messages itself and keeps its own state; it tells the screen only
that its part of the status line changed (``StatusChanged``) or that a device's settings did (``DevicesChanged``),
both messages that bubble up to the screen.

The screen keeps the keys (Textual reads bindings from the screen, whatever has focus): each action resolves the
device it acts on (refusing in a read-only view) and hands it to the part.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.message import Message
from textual.widget import Widget

if TYPE_CHECKING:
    from iosched.core.live.monitor import Monitor

READ_ONLY_NOTICE = ("This is a read-only view: switching, jobs, experiments, tunables, persist and tracing are "
                    "off. Writes need the TUI in a terminal, or `iosched serve --allow-writes`.")


class StatusChanged(Message):
    """A part's piece of the status line changed: the screen fits the line again."""


class DevicesChanged(Message):
    """The devices changed (a block uevent, or a setting this session wrote): re-read the inventory."""


class LivePart(Widget):
    """A part of the live screen: given the Monitor and whether the view is read-only; what it shows is a pane it
    mounts inside itself on first use, or nothing (``display: none`` in themes/base.tcss)."""

    def __init__(self, monitor: Monitor, read_only: bool, *, id: str) -> None:
        super().__init__(id=id)
        self.monitor = monitor
        self.read_only = read_only  # a viewer: every write is refused, and checked again in the worker

    def refused_read_only(self) -> bool:
        """In a read-only view a write says why it does nothing."""
        if self.read_only:
            self.notify(READ_ONLY_NOTICE, title="Read-only", severity="warning", timeout=6)
        return self.read_only

    def run_thread(self, work: Callable[[], None], name: str, group: str) -> None:
        """``work`` in a thread worker of this part: it posts its result back to the part as a message."""
        self.run_worker(work, name=name, group=group, exit_on_error=False, thread=True)

    def status_changed(self) -> None:
        self.post_message(StatusChanged())
