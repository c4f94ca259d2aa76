"""A job with roles on the live screen: each role's figures in the status line and the foreground latency as a
chart under the device's graphs, on fixture data and then on a real loop device with fio, at 80x24."""

from __future__ import annotations

import pytest
from fio_support import fio_procs
from test_tui_jobs import wait_until
from tui_support import SteppedSampler, populated_tree, screen_text, set_counters, wait_for_exit

from iosched.core.load.fio import FioProgress, FioRun, RoleProgress
from iosched.core.load.jobs import catalog_job
from iosched.tui.app import IoschedApp
from iosched.tui.dialogs import ConfirmScreen, JobPicker
from iosched.tui.job_roles import RoleHistory, chart_title
from iosched.tui.job_run import JobState, tui_job
from iosched.tui.live_jobs import JobProgressed
from iosched.tui.widgets.line_chart import LineChart
from iosched.tui.widgets.status_bar import StatusBar

from conftest import need_real

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


BRAILLE = {chr(c) for c in range(0x2801, 0x2900)}


def fixture_app(tmp_path, loops: int = 0):
    tree = populated_tree(tmp_path / "root")
    for i in range(loops):  # idle rows that make the table taller (the demo beside other loop devices)
        tree.add_disk(f"loop{i}", f"7:{i}", size_sectors=2097152, scheduler="[none] mq-deadline kyber bfq")
    set_counters(tree, 0)
    app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False)
    return app, tree


def running(name: str) -> JobState:
    state = JobState("sda", tui_job(name))
    state.fio = FioRun([], started=1000.0)  # the stepped sampler's clock: samples at 1001, 1002, ...
    return state


@pytest.mark.parametrize("loops", [0, 6])
async def test_the_foreground_latency_is_charted_under_the_graphs_of_its_device_only(tmp_path, loops):
    app, tree = fixture_app(tmp_path, loops)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        live = app.live
        live.select("sda")
        state = running("interactive-under-writes")
        live.jobs.history = RoleHistory("sda", "fg", chart_title(state.job, "fg"))
        live.jobs.job = state
        for step in range(1, 31):
            set_counters(tree, step)
            live.tick()
            fg = RoleProgress(30.0, 25_000.0 if step < 20 else 300.0)
            live.jobs.progressed(JobProgressed(state, FioProgress(step, 800, 30, 770, 770, 900.0,
                                                                  {"fg": fg, "bg": RoleProgress(770, 40_000.0)})))
        live.redraw()
        await pilot.pause()
        chart = app.query_one("#role-chart", LineChart)
        assert live.roles_shown and chart.display and chart.region.height >= 3
        text = chart.plain_text()
        assert text.startswith("Foreground latency ms · interactive-under-writes  ━ fg 0.3")
        plot = text.splitlines()[1:]
        assert BRAILLE & set("".join(plot[:1])) and BRAILLE & set("".join(plot[-1:]))  # high, then low
        status = app.query_one(StatusBar).plain_text()
        assert "fg 30 IOPS 0.3 ms · bg 770 IOPS 40 ms · x stops" in status and len(status) <= 78
        assert "fio 800" not in status  # never the roles pooled into one figure
        # fio's next report moves the chart's figure with the status line's, not a tick later.
        now = app.monitor.history.recent_times()[-1]
        live.jobs.progressed(JobProgressed(state, FioProgress(now - 1000.0 + 0.5, 800, 30, 770, 770, 900.0, {
            "fg": RoleProgress(30.0, 5_000.0), "bg": RoleProgress(770, 40_000.0)})))
        await pilot.pause()
        assert "━ fg 5" in chart.plain_text() and "fg 30 IOPS 5 ms" in app.query_one(StatusBar).plain_text()
        # The chart shares the graphs' room: nothing is pushed off the screen, which never scrolls.
        assert app.query_one("#cpu").region.bottom <= 23 and app.screen.max_scroll_y == 0
        await pilot.press("up")  # another device: its own graphs, no chart of sda's job
        await pilot.pause()
        assert not live.roles_shown and not chart.display
        await pilot.press("down")
        await pilot.pause()
        assert live.roles_shown
        live.jobs.job = None


async def test_a_job_of_one_section_mounts_no_chart(tmp_path):
    app, tree = fixture_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("down")
        live = app.live
        state = running("randread-q16t2")
        live.jobs.job = state
        for step in range(1, 6):
            set_counters(tree, step)
            live.tick()
            live.jobs.progressed(JobProgressed(state, FioProgress(step, 1000, 1000, 0, 4, 250.0)))
        live.redraw()
        await pilot.pause()
        assert not app.query("#role-chart") and not live.roles_shown
        assert "fio 1.0k IOPS" in app.query_one(StatusBar).plain_text()
        live.jobs.job = None


async def test_the_demo_suggests_the_role_job_first_and_its_foreground_latency_is_charted(make_loop):
    need_real("fio")
    loop = make_loop()
    app = IoschedApp(interval=0.25, watch_udev=False, focus=loop.name)  # focus: as `iosched demo` opens it
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.view.selected_device().name == loop.name
        await pilot.press("j")
        assert isinstance(app.screen, JobPicker)
        await pilot.pause()
        shows = "shows: " + catalog_job("interactive-under-writes").shows[:40]  # what fits at 80 columns
        assert any(shows in line for line in screen_text(app))
        await pilot.press("enter")
        live = app.live
        assert live.jobs.job is not None and live.jobs.job.job.name == "interactive-under-writes"
        bar = app.query_one(StatusBar)
        assert await wait_until(pilot, lambda: " · bg " in bar.plain_text())
        status = bar.plain_text()
        assert " fg " in status and "IOPS" in status and status.endswith("· x stops")
        assert fio_procs(loop.path)  # found through its job file: a role job names its target there
        history = live.jobs.history
        assert history is not None and history.role == "fg"
        assert await wait_until(pilot, lambda: sum(v is not None for _, _, v in history.points) >= 2)
        live.settings.start_switch(loop.name, "bfq")
        assert await wait_until(pilot, lambda: any(m.label == "bfq" for m in app.monitor.markers_of(loop.name)))
        switched = next(m.time for m in app.monitor.markers_of(loop.name) if m.label == "bfq")
        assert await wait_until(pilot, lambda: history.points[-1][0] > switched)  # fio reported since the switch
        chart = app.query_one("#role-chart", LineChart)
        assert await wait_until(pilot, lambda: "bfq" in chart.plain_text())  # the marker, in the chart too
        times = app.monitor.history.recent_times()
        assert any(v is not None for t, v in zip(times, history.series(times)) if t > switched)
        await pilot.press("x")
        assert await wait_until(pilot, lambda: live.jobs.job is None)
        assert not history.running and live.roles_shown  # the picture stays to be looked at
        assert fio_procs(loop.path) == []
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await wait_for_exit(app)
    assert loop.current() == loop.initial_scheduler


@pytest.mark.parametrize("key", ["j", "f1"])
async def test_the_demos_notice_goes_when_the_picker_or_help_opens_at_80x24(tmp_path, key):
    """It covered the right half of the job picker and of the help at 80 columns; the status line keeps its
    advice."""
    tree = populated_tree(tmp_path / "root")
    tree.add_disk("loop0", "7:0", size_sectors=2097152, scheduler="[none] mq-deadline kyber bfq")
    set_counters(tree, 0)
    app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False,
                     focus="loop0", sandbox="loop0")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert any(n.message.startswith("Sandbox loop0") for n in app._notifications)
        await pilot.press(key)
        await pilot.pause()
        await pilot.pause()
        text = "\n".join(screen_text(app))
        assert not any(n.message.startswith("Sandbox loop0") for n in app._notifications)
        assert ("run a job" in text) if key == "j" else ("iosched — keys" in text)


async def test_the_title_stays_in_the_status_line_while_a_job_runs_where_there_is_room(tmp_path):
    app, _tree = fixture_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        live = app.live
        live.select("sda")
        live.jobs.job = running("interactive-under-writes")
        assert live.status_text(200).startswith("iosched")
        assert not live.status_text(60).startswith("iosched")  # where room is short it goes first
