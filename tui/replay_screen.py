"""A recording in the TUI: the live view's table and graphs over a ReplayMonitor, scrubbed with keys.

A replay shows the past: it has no keys that switch, load or tune (they belong to the live screen). Given a
file, the screen draws at once and reads the recording in a worker (one pass that builds its index,
core/live/recording_reader.py), showing how far it got; `q` quits meanwhile (the worker stops at its next look).
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.worker import get_current_worker

from iosched.core.base.errors import BadInput
from iosched.core.live.monitor import ReplayMonitor
from iosched.core.live.recording_reader import LoadCancelled, Recording, read_header, scan
from iosched.tui.monitor_screen import MonitorScreen
from iosched.tui.status_line import EXTRA, KEEP, SPARE, USEFUL, fit_parts
from iosched.tui.widgets.device_table import DeviceTable
from iosched.tui.widgets.status_bar import StatusBar

PROGRESS_EVERY_S = 0.5  # the part read so far is shown this often (a window read on the UI thread)


class LoadProgressed(Message):
    def __init__(self, done: int, size: int, so_far: Recording) -> None:
        super().__init__()
        self.done = done
        self.size = size
        self.so_far = so_far  # the part read so far, shown while the rest is read

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LoadProgressed)


class Loaded(Message):
    def __init__(self, recording: Recording) -> None:
        super().__init__()
        self.recording = recording


class LoadFailed(Message):
    def __init__(self, error: BadInput) -> None:
        super().__init__()
        self.error = error


class ReplayScreen(MonitorScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("comma", "step(-10)", "Back", show=False, tooltip="step 10 intervals back / forward"),
        Binding("full_stop", "step(10)", "Forward", show=False, tooltip="step 10 intervals back / forward"),
        Binding("less_than_sign", "step(-60)", "Back 1 min", show=False, tooltip="step 60 intervals back / forward"),
        Binding("greater_than_sign", "step(60)", "Forward 1 min", show=False,
                tooltip="step 60 intervals back / forward"),
        Binding("g", "edge(False)", "Start", show=False, tooltip="start / end of the recording"),
        Binding("G", "edge(True)", "End", show=False, tooltip="start / end of the recording"),
    ]

    def __init__(self, source: Recording | str | Path, name: str) -> None:
        """``source``: a recording already read, or the file to read in a worker once the screen shows."""
        if isinstance(source, Recording):
            self.path, recording = source.path, source
        else:
            # Until the worker is done: the header alone (checked by the command line before the TUI opened).
            self.path = Path(source)
            recording = Recording(self.path, read_header(self.path))
        super().__init__(ReplayMonitor(recording))
        self.replay: ReplayMonitor = self.monitor  # type: ignore[assignment]
        self.file_name = name
        self.reading = not isinstance(source, Recording)
        self.loaded_bytes = (0, 0)  # (read, size) while loading
        self.failure: BadInput | None = None  # why the file could not be shown (the app exits with 2)
        self.load_stopped = False  # the user quit before the whole file was read

    def on_mount(self) -> None:
        super().on_mount()
        self.sync_table()
        self.query_one(DeviceTable).focus()
        if self.reading:
            self.render_status()
            self.load()
        else:
            self.seek(self.replay.length)

    @work(thread=True, exclusive=True, group="replay-load", exit_on_error=False)
    def load(self) -> None:
        worker = get_current_worker()
        last = 0.0

        def progress(done: int, size: int, so_far: Recording) -> None:
            nonlocal last
            if time.monotonic() - last >= PROGRESS_EVERY_S:
                last = time.monotonic()
                # post_message is thread-safe and never waits for the UI (which may be quitting).
                self.post_message(LoadProgressed(done, size, so_far.snapshot()))

        try:
            rec = scan(self.path, progress, lambda: worker.is_cancelled)
            if rec.count < 2:
                raise BadInput(f"{self.path} holds fewer than two samples: nothing to replay")
        except LoadCancelled:
            self.load_stopped = True
            return
        except BadInput as e:
            self.post_message(LoadFailed(e))
            return
        self.post_message(Loaded(rec))

    def on_load_progressed(self, message: LoadProgressed) -> None:
        self.loaded_bytes = (message.done, message.size)
        if message.so_far.count >= 2:
            self._show(message.so_far)
        self.render_status()

    def on_loaded(self, message: Loaded) -> None:
        self.reading = False
        self._show(message.recording)

    def _show(self, recording: Recording) -> None:
        """Show more of the recording: at its end (as a live view would) unless the user has moved away."""
        old = self.replay
        following = old.pos in (0, old.length)
        self.monitor = self.replay = ReplayMonitor(recording)
        self.sync_table()
        self.seek(self.replay.length if following else old.pos)

    def on_load_failed(self, message: LoadFailed) -> None:
        self.failure = message.error
        self.app.exit(2)

    def seek(self, pos: int) -> None:
        """Show the recording up to interval ``pos``: the graphs' window ends there, the table shows it."""
        if self.replay.length == 0:
            return
        try:
            self.replay.seek(pos)
        except BadInput as e:  # the file changed under us since it was read
            self.notify(str(e), severity="error", timeout=10)
            return
        self.sync_table()
        self.redraw()

    def action_step(self, step: int) -> None:
        self.seek(self.replay.pos + step)

    def action_edge(self, end: bool) -> None:
        self.seek(self.replay.length if end else 1)

    def status_text(self) -> str:
        if self.reading:
            done, size = self.loaded_bytes
            share = f"{100 * done / size:.0f}% of {size / 1e6:.0f} MB" if size else "starting"
            if self.replay.length == 0:
                return f"replay {self.file_name}  reading the recording: {share}  q quits"
        at = self.replay.elapsed
        wall = datetime.fromtimestamp(self.replay.recording.header.start_wall + at).astimezone()
        dev = self.selected_device()
        where = "" if dev is None else f"{dev.name} "
        reading = f"(read {share} so far)" if self.reading else ""
        # Fitted to the line (80 columns cut it at "g/G start/e"): the keys' hints go first, then the file's name.
        width = self.app.size.width - self.query_one(StatusBar).styles.gutter.width
        return fit_parts([("replay", KEEP), (self.file_name, EXTRA), (f"{where}{wall:%H:%M:%S}", KEEP),
                          (f"+{at:.1f}/{self.replay.span:.1f}s", KEEP), (reading, USEFUL), (",/. step", USEFUL),
                          ("</> 1 min", EXTRA), ("g/G start/end", SPARE)], width)
