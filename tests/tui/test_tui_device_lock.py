"""One load per device, in the TUI: a job or an experiment on a device another iosched has under load is
refused."""

from __future__ import annotations

import pytest
from fio_support import fio_procs
from test_tui_compare import open_compare
from test_tui_jobs import select, wait_until

from iosched.core.settings.device_lock import load_lock
from iosched.tui.app import IoschedApp
from iosched.tui.dialogs import JobPicker

from conftest import need_real

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


async def test_the_tui_refuses_a_job_and_an_experiment_on_a_device_under_load_elsewhere(loopdev):
    need_real("fio")
    with load_lock(loopdev.name, "matrix"):  # as another iosched running a matrix on it would
        app = IoschedApp(interval=0.25, watch_udev=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await select(app, pilot, loopdev.name)
            await pilot.press("j")
            assert isinstance(app.screen, JobPicker)
            await pilot.press("enter")
            assert await wait_until(pilot, lambda: app.live.jobs.job is None, 10)
            assert any("already under load" in n.message for n in app._notifications)
            screen = await open_compare(app, pilot, loopdev)
            await pilot.press("ctrl+r")
            assert await wait_until(pilot, lambda: not screen.running, 10)
            assert "already under load" in str(screen.query_one("#live").content)
            assert fio_procs(loopdev.path) == [] and loopdev.current() == loopdev.initial_scheduler
            await pilot.press("escape")
            await pilot.press("q")
