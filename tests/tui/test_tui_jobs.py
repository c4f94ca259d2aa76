"""Load + switch + see from the main screen: a fio job on a real loop device, driven with Pilot."""

from __future__ import annotations

import subprocess
import time

import pytest
from fio_support import fio_procs
from textual.widgets import Input
from tui_support import wait_for_exit

from iosched.tui.app import IoschedApp
from iosched.tui.dialogs import ConfirmScreen, JobPicker, TypeNameScreen
from iosched.tui.widgets.status_bar import StatusBar

from conftest import need_real

# A wait is a guard against a hang, never a speed limit: a loaded machine (CI's two cores, or a neighbour's fio) may
# take many times an idle one's seconds, and a passing wait returns as soon as its condition holds.
pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


HANG_S = 120.0


async def wait_until(pilot, cond, within: float = 10.0) -> bool:
    """``cond`` holds within ``within`` seconds on an idle machine; waited for up to HANG_S whatever the load."""
    deadline = time.monotonic() + max(within, HANG_S)
    while time.monotonic() < deadline:
        if cond():
            return True
        await pilot.pause(0.05)
    return cond()


async def select(app: IoschedApp, pilot, name: str) -> None:
    """Walk the cursor from wherever it is to ``name``, as a person would (rows of other devices may come and go)."""
    await wait_until(pilot, lambda: name in [d.name for d in app.monitor.devices], 4)
    for _ in range(20):
        current = app.view.selected_device()
        if current is not None and current.name == name:
            return
        names = [d.name for d in app.monitor.devices]
        here = names.index(current.name) if current is not None and current.name in names else 0
        steps = names.index(name) - here if name in names else 0
        await pilot.press(*(["down" if steps > 0 else "up"] * abs(steps or 1)))
        await pilot.pause()
    assert app.view.selected_device().name == name


async def test_job_runs_beside_the_live_graphs_switch_marks_and_x_stops(tmp_path, make_loop):
    need_real("fio")
    loop = make_loop()
    app = IoschedApp(interval=0.25, watch_udev=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await select(app, pilot, loop.name)
        await pilot.press("j")
        assert isinstance(app.screen, JobPicker) and "raw /dev/" + loop.name in app.screen.target_hint
        await pilot.press("enter")  # the first suggestion: randread-q16t2
        assert app.live.jobs.job is not None and app.live.jobs.job.job.name == "randread-q16t2"
        assert await wait_until(pilot, lambda: app.live.jobs.job is not None and app.live.jobs.job.progress is not None)
        assert await wait_until(pilot, lambda: "fio" in app.query_one(StatusBar).plain_text())
        assert fio_procs(loop.path)
        status = app.query_one(StatusBar).plain_text()
        assert "randread-q16t2" in status and "IOPS" in status and "x stops" in status
        busy = lambda: max(v or 0 for v in app.monitor.history.disk_series(loop.name, "r_s")) > 1000  # noqa: E731
        assert await wait_until(pilot, busy)
        app.live.settings.start_switch(loop.name, "bfq")
        assert await wait_until(pilot, lambda: any(m.label == "bfq" for m in app.monitor.markers_of(loop.name)))
        assert loop.current() == "bfq"
        await pilot.press("x")
        assert await wait_until(pilot, lambda: app.live.jobs.job is None)
        assert [m.label for m in app.monitor.markers_of(loop.name)] == ["job", "bfq", "end"]
        assert fio_procs(loop.path) == []
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await wait_for_exit(app)
    assert loop.current() == loop.initial_scheduler


async def test_write_job_on_a_device_with_data_needs_its_name_typed_and_quit_kills_fio(make_loop, shm_dir):
    need_real("fio", "mkfs.ext4")
    loop = make_loop("256M", shm_dir)  # 4k-randwrite: its file in tmpfs (conftest.shm_dir)
    subprocess.run(["mkfs.ext4", "-q", "-F", loop.path], check=True, capture_output=True)  # noqa: ASYNC221
    app = IoschedApp(interval=0.25, watch_udev=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await select(app, pilot, loop.name)
        await pilot.press("j")
        await pilot.press("down", "down", "down", "down", "enter")  # 4k-randwrite
        assert await wait_until(pilot, lambda: isinstance(app.screen, TypeNameScreen))
        assert "ext4 signature" in app.screen.reason and app.live.jobs.job is None
        app.screen.query_one(Input).value = "vda"
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, TypeNameScreen) and app.live.jobs.job is None and fio_procs(loop.path) == []
        app.screen.query_one(Input).value = loop.name
        await pilot.press("enter")
        assert await wait_until(pilot, lambda: app.live.jobs.job is not None and app.live.jobs.job.progress is not None)
        assert app.live.jobs.job.job.writes and fio_procs(loop.path)
        await pilot.press("q")  # nothing else changed: quits at once, and fio goes with it
        await pilot.pause(0.2)
    assert fio_procs(loop.path) == []
