"""A recording in the TUI: the live view's table and graphs over a ReplayMonitor, scrubbed with keys.

A replay shows the past: it has no keys that switch, load or tune (they belong to the live screen).
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from textual.binding import Binding, BindingType

from iosched.core.live.monitor import ReplayMonitor
from iosched.tui.monitor_screen import MonitorScreen
from iosched.tui.widgets.device_table import DeviceTable


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

    def __init__(self, monitor: ReplayMonitor, name: str) -> None:
        super().__init__(monitor)
        self.replay: ReplayMonitor = monitor
        self.file_name = name

    def on_mount(self) -> None:
        super().on_mount()
        self.sync_table()
        self.query_one(DeviceTable).focus()
        self.seek(self.replay.length)

    def seek(self, pos: int) -> None:
        """Show the recording up to interval ``pos``: the graphs' window ends there, the table shows it."""
        self.replay.seek(pos)
        self.sync_table()
        self.redraw()

    def action_step(self, step: int) -> None:
        self.seek(self.replay.pos + step)

    def action_edge(self, end: bool) -> None:
        self.seek(self.replay.length if end else 1)

    def status_text(self) -> str:
        at = self.replay.elapsed
        wall = datetime.fromtimestamp(self.replay.recording.header["start_wall"] + at).astimezone()
        dev = self.selected_device()
        where = "" if dev is None else f"{dev.name} "
        return (f"replay {self.file_name}  {where}{wall:%H:%M:%S} +{at:.1f}/{self.replay.span:.1f}s  "
                ",/. step  </> 1 min  g/G start/end")
