"""The live screen's capture (``C``): the selected device's requests recorded into a capture, in a worker, until
``C`` again (or an hour, or 1 GiB); the status line says ``● capturing 00:42, 81k requests (C stops)``. The compare
screen opened next offers the capture as its workload (``replay: FILE``).

``Capturing`` is a part of the live screen (``screen.capturing``, a widget that shows nothing itself: live_part.py):
it owns the capture, its worker and that worker's messages; the screen keeps the key and hands over the device.
"""

from __future__ import annotations

import threading
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on
from textual.binding import Binding, BindingType
from textual.message import Message

from iosched.core.base.units import count
from iosched.core.experiment.results import default_results_dir
from iosched.tui.live_part import LivePart

if TYPE_CHECKING:
    from iosched.core.kernel.device_doc import DeviceDoc
    from iosched.core.live.monitor import Monitor
    from iosched.core.trace.capture import CaptureProgress, CaptureRun

CAPTURE_KEYS: list[BindingType] = [
    Binding("C", "capture", "Capture", show=False,
            tooltip="capture the selected device's requests for `compare --replay` (C again stops)"),
]
MAX_S = 3600.0
MAX_BYTES = 1 << 30


class CaptureProgressed(Message):
    bubble = False  # the part's own

    def __init__(self, progress: CaptureProgress) -> None:
        super().__init__()
        self.progress = progress

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, CaptureProgressed)


class CaptureEnded(Message):
    """The capture ended: what it holds (one line), or why it could not start or went wrong."""

    bubble = False

    def __init__(self, path: Path | None, text: str, error: bool) -> None:
        super().__init__()
        self.path, self.text, self.error = path, text, error


def capture_path(device: str, now: float | None = None, root: str | Path = "/") -> Path:
    """A new file for a capture of ``device``, beside the TUI's results."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return default_results_dir(root) / "captures" / f"{device}-{stamp}.iolog"


class Capturing(LivePart):
    """One live screen's capture: start, progress in the status line, end, and the newest capture made."""

    def __init__(self, monitor: Monitor, read_only: bool) -> None:
        super().__init__(monitor, read_only, id="capture-part")
        self.run: CaptureRun | None = None
        self.device = ""
        self.progress: CaptureProgress | None = None
        self.last: Path | None = None  # the newest capture made, offered to the compare screen
        self.done = threading.Event()
        self.done.set()

    @property
    def running(self) -> bool:
        return self.run is not None

    def toggle(self, dev: DeviceDoc | None) -> None:
        """Stop the running capture, or start one of ``dev`` (the selected device)."""
        if self.run is not None:
            self.run.stop("interrupted")  # ended by the user, as Ctrl-C ends `iosched capture`
            return
        if self.refused_read_only() or dev is None:
            return
        from iosched.core.trace.capture import CaptureRun

        path = capture_path(dev.name, root=self.monitor.root)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            self.notify(f"cannot make {path.parent}: {e.strerror}", severity="error")
            return
        self.device, self.progress = dev.name, None
        self.run = CaptureRun(dev.name, path, MAX_S, MAX_BYTES, self.monitor.root,
                              lambda p: self.post_message(CaptureProgressed(p)))
        self.done.clear()
        self.run_thread(partial(self._capture, self.run, path), name="capture", group="capture")
        self.status_changed()

    def _capture(self, run: CaptureRun, path: Path) -> None:
        """In a worker thread, which owns the tracer (it dies with this thread)."""
        from iosched.core.base.errors import IoschedError

        try:
            result = run.run()
        except IoschedError as e:
            self.post_message(CaptureEnded(None, str(e), True))
            return
        finally:
            self.done.set()
        m = result.meta
        lost = f", {m.lost} lost" if m.lost else ""
        self.post_message(CaptureEnded(
            path, f"{m.requests} requests in {m.duration_s:.0f} s{lost}, saved in {path}; compare (c) offers it "
            "as replay: FILE", m.lost > 0))

    @on(CaptureProgressed)
    def progressed(self, message: CaptureProgressed) -> None:
        if self.run is not None:
            self.progress = message.progress
            self.status_changed()

    @on(CaptureEnded)
    def ended(self, message: CaptureEnded) -> None:
        self.run, self.progress = None, None
        if message.path is not None:
            self.last = message.path
        self.notify(message.text, title="Capture", severity="warning" if message.error else "information",
                    timeout=10)
        self.status_changed()

    def status(self) -> str:
        """The status line's part: empty unless a capture runs."""
        if self.run is None:
            return ""
        p = self.progress
        if p is None:
            return "● capturing…"
        s = int(p.elapsed_s)
        return f"● capturing {s // 60:02d}:{s % 60:02d}, {count(p.requests)} requests (C stops)"

    def spec(self) -> str:
        """The compare form's job field: the newest capture, when there is one."""
        return f"replay: {self.last}" if self.last is not None and self.last.exists() else ""

    def stop_now(self, timeout: float = 10.0) -> None:
        """On the way out: the capture ends and its files are written whole."""
        if self.run is not None:
            self.run.stop()
        self.done.wait(timeout)
