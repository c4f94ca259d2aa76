"""Every way out of the app cancels a run under way at once, while the app's loop still runs: Textual's end waits
for every worker thread, so a run not cancelled there would go on to its end (a browser tab's app was killed
before it could put its device back). Driven with Pilot on fixture data: the Advise screen runs a runner that waits
to be cancelled; the app is ended as a browser tab's quit ends it (ExitApp), as SIGTERM does (exit 143) and as `q`
does."""

from __future__ import annotations

import threading

import pytest
from test_tui_advise import make_app, open_advise
from test_tui_jobs import wait_until
from textual import messages

from iosched.core.experiment.control import Cancelled, Control
from iosched.core.experiment.runner import OnThisMachine
from iosched.core.experiment.simulated import Simulated, Simulation


class WaitsToBeCancelled:
    """The runs' executor (what an advice's ``runs`` takes): its first run lasts until it is cancelled (at most a
    minute)."""

    def __init__(self) -> None:
        self.started, self.ended = threading.Event(), threading.Event()

    def __call__(self, setup: OnThisMachine, ctl: Control) -> Simulated:
        return Waiting(self, setup, ctl)


class Waiting(Simulated):
    def __init__(self, waits: WaitsToBeCancelled, setup: OnThisMachine, ctl: Control) -> None:
        super().__init__(Simulation(), setup, ctl)
        self.waits = waits

    def run(self, slot, placed, progress):
        self.waits.started.set()
        try:
            if self.ctl.cancelled.wait(60):
                raise Cancelled("cancelled")
            raise AssertionError("never cancelled")
        finally:
            self.waits.ended.set()


@pytest.mark.parametrize("way_out", ["a browser tab's quit", "SIGTERM", "q"])
async def test_every_way_out_cancels_a_run_under_way(tmp_path, way_out):
    app, _ = make_app(tmp_path)
    runner = WaitsToBeCancelled()
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await open_advise(app, pilot, runner=lambda _prep: runner)
        await pilot.press("ctrl+r")
        assert await wait_until(pilot, lambda: screen.prep is not None and not screen.running, 20)
        await pilot.press("ctrl+r")
        assert await wait_until(pilot, runner.started.is_set, 20)
        assert screen.ctl is not None and not screen.ctl.cancelled.is_set()
        if way_out == "a browser tab's quit":
            app.post_message(messages.ExitApp())  # what textual's web driver posts on serve's "quit"
        elif way_out == "SIGTERM":
            app.exit(143)  # what the app's SIGTERM handler does
        else:
            await pilot.press("q")  # nothing switched by hand: no question, straight out
        await pilot.pause()
    assert screen.ctl.cancelled.is_set()
    assert runner.ended.wait(30)
