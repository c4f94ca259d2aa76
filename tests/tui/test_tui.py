"""The Textual app driven with Pilot: fixture trees for exact numbers, a real loop device for the real path."""

from __future__ import annotations

import asyncio
import subprocess
import time

import pytest
from textual.widgets import OptionList
from tui_support import SteppedSampler, populated_tree, set_counters, wait_for_exit

from iosched.core.live.monitor import Marker
from iosched.tui.app import IoschedApp
from iosched.tui.dialogs import ConfirmScreen, HelpScreen, SchedulerPicker
from iosched.tui.widgets.cpu_pane import CpuPane
from iosched.tui.widgets.device_table import DeviceTable
from iosched.tui.widgets.line_chart import LineChart

from conftest import detach_loop, need_real

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def fixture_app(tmp_path, **kw) -> tuple[IoschedApp, object]:
    tree = populated_tree(tmp_path / "root")
    app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False, **kw)
    return app, tree


def cell(app: IoschedApp, row: str, column: str) -> str:
    return str(app.query_one(DeviceTable).get_cell(row, column))


async def test_table_shows_iostat_figures_for_fixture_devices(tmp_path):
    app, tree = fixture_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        set_counters(tree, 1)
        app.live.tick()
        await pilot.pause()
        assert [d.name for d in app.monitor.devices] == ["nvme0n1", "sda", "zram0"]
        assert cell(app, "sda", "r_s") == "100"
        assert cell(app, "sda", "r_await") == "8.00"
        assert cell(app, "sda", "rMB_s") == "6.25"
        assert cell(app, "sda", "util") == "90"
        assert cell(app, "nvme0n1", "w_s") == "2000"
        assert cell(app, "nvme0n1", "type") == "SSD" and cell(app, "sda", "type") == "HDD"
        assert cell(app, "zram0", "sched") == "no sched"
        assert cell(app, "sda", "sched") == "bfq"


async def test_graphs_follow_the_selected_device_and_cpu_pane_fills(tmp_path):
    app, tree = fixture_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        for step in range(1, 6):
            set_counters(tree, step)
            app.live.tick()
        await pilot.press("down")  # nvme0n1 -> sda
        await pilot.pause()
        assert app.view.selected_device().name == "sda"
        iops = app.query_one("#chart-iops", LineChart)
        assert iops._series[0][-4:] == [100.0] * 4
        assert "r/s 100" in iops.plain_text()
        cpu = app.query_one(CpuPane)
        text = cpu.plain_text()
        assert "usr 15.0" in text and "iowait 5.0" in text  # 30 of 200 ticks, 10 of 200
        assert "█" in text


async def test_a_switch_before_the_first_plotted_sample_still_shows_its_marker(tmp_path):
    app, tree = fixture_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("down")  # sda
        app.monitor.markers.append(Marker(time=0.0, device="sda", label="bfq"))  # before every sample
        for step in range(1, 4):
            set_counters(tree, step)
            app.live.tick()
        await pilot.pause()
        top_row = app.query_one("#chart-iops", LineChart).plain_text().splitlines()[1]
        assert "bfq" in top_row


async def test_picker_marks_the_current_scheduler_and_escape_changes_nothing(tmp_path):
    app, tree = fixture_app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("down", "s")
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, SchedulerPicker)
        options = app.screen.query_one(OptionList)
        assert str(options.get_option_at_index(2).prompt) == "● bfq"
        assert options.highlighted == 2
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, SchedulerPicker)
        assert "[bfq]" in (tree.root / "sys/block/sda/queue/scheduler").read_text()


async def test_switch_that_does_not_stick_is_an_error_notification_and_app_lives_on(tmp_path):
    # A fixture file takes any write but never reads back "[name]": the kernel-ignored-the-write case.
    app, _ = fixture_app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("down", "s", "up", "up", "enter")  # bfq -> mq-deadline
        for _ in range(50):
            await pilot.pause(0.05)
            if not app.live.settings.switching:
                break
        errors = [n for n in app._notifications if n.severity == "error"]
        assert errors and "still reads" in errors[0].message
        assert not app.monitor.markers
        assert app.is_running


async def test_device_without_scheduler_says_so(tmp_path):
    app, _ = fixture_app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("down", "down", "s")  # zram0
        await pilot.pause()
        assert not isinstance(app.screen, SchedulerPicker)
        assert any("no IO scheduler" in n.message for n in app._notifications)


async def test_help_lists_every_binding(tmp_path):
    app, _ = fixture_app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        keys = app.help_keys()  # those of the live screen, in front until help opens
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        shown = " ".join(str(w.render()) for w in app.screen.query("Static"))
        # Every binding of the live screen and the app that runs one of our actions is on the help screen.
        bindings = [b for node in (app.live, app) for bs in node._bindings.key_to_bindings.values() for b in bs
                    if getattr(getattr(type(node), f"action_{b.action.split('(')[0]}", None), "__module__",
                               "").startswith("iosched.")
                    and not (b.system or b.key == "ctrl+q")]  # Textual's ctrl+q runs our quit too; ours are q, ^c
        assert {b.action for b in bindings} >= {"switch", "job", "stop_job", "compare", "tunables", "persist",
                                                "pause", "faster", "slower", "sort", "cycle_theme", "help", "quit"}
        for b in bindings:
            assert app.get_key_display(b) in shown and (b.tooltip or b.description) in shown
        for key, text in keys:
            assert key in shown and text in shown
        documented = " ".join(text for _, text in keys)
        for words in ("switch the selected", "pause", "faster / slower", "sort the table", "cycle theme", "quit"):
            assert words in documented


async def test_interval_pause_sort_and_theme_keys(tmp_path):
    app, tree = fixture_app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("minus")
        assert app.live.interval == 2.0
        await pilot.press("plus", "plus", "plus", "plus", "plus")
        assert app.live.interval == 0.25
        await pilot.press("space")
        assert app.live.paused
        await pilot.press("space")
        assert not app.live.paused
        set_counters(tree, 1)
        app.live.tick()
        await pilot.press("o")  # sort by r/s: sda first
        await pilot.pause()
        assert app.monitor.devices[0].name == "sda"
        await pilot.press("t")
        assert app.theme_name == "light" and app.has_class("theme-light")
        await pilot.press("t")
        assert app.theme_name == "mono" and app.has_class("theme-mono") and not app.has_class("theme-light")


@pytest.mark.parametrize("size", [(40, 12), (80, 24), (200, 50)])
async def test_small_and_large_terminals_do_not_crash(tmp_path, size):
    app, tree = fixture_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        for step in range(1, 4):
            set_counters(tree, step)
            app.live.tick()
        await pilot.pause()
        graphs = app.query_one("#graphs")
        assert graphs.display == (size[1] >= 16 and size[0] >= 60)


def start_fio(path: str) -> subprocess.Popen:
    return subprocess.Popen(["fio", "--name=t", f"--filename={path}", "--direct=1", "--rw=randread", "--bs=4k",
                             "--iodepth=8", "--ioengine=libaio", "--time_based", "--runtime=8", "--thread"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def test_real_loop_device_under_load_switch_marker_and_restore_on_quit(tmp_path, make_loop):
    need_real("fio")
    loop = make_loop()
    fio = start_fio(loop.path)
    original = loop.current()
    target = "bfq" if original != "bfq" else "kyber"
    try:
        app = IoschedApp(interval=0.25, watch_udev=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(0.5)
            names = [d.name for d in app.monitor.devices]
            assert loop.name in names
            await pilot.press(*(["down"] * names.index(loop.name)))
            assert app.view.selected_device().name == loop.name
            await pilot.pause(1.5)
            series = [v for v in app.monitor.history.disk_series(loop.name, "r_s") if v]
            assert series and max(series) > 1000, "the graphs received no IO"
            app.live.settings.start_switch(loop.name, target)
            for _ in range(100):
                await pilot.pause(0.05)
                if app.monitor.markers_of(loop.name):
                    break
            assert loop.current() == target
            (marker,) = app.monitor.markers_of(loop.name)  # other devices may be switched meanwhile
            assert marker.device == loop.name and marker.label == target
            for _ in range(40):  # a sample after the switch puts the marker on the graph
                await pilot.pause(0.05)
                if target in app.query_one("#chart-iops", LineChart).plain_text():
                    break
            assert target in app.query_one("#chart-iops", LineChart).plain_text()
            await pilot.press("q")
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("y")
            await wait_for_exit(app)
        assert loop.current() == original
    finally:
        fio.kill()
        fio.wait()


async def test_devices_come_and_go_even_the_selected_one(tmp_path, make_loop):
    need_real()
    app = IoschedApp(interval=0.25, watch_udev=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        loop = make_loop("64M")
        deadline = time.monotonic() + 4
        while loop.name not in [d.name for d in app.monitor.devices] and time.monotonic() < deadline:
            await pilot.pause(0.1)
        names = [d.name for d in app.monitor.devices]
        assert loop.name in names
        app.query_one(DeviceTable).move_cursor(row=names.index(loop.name))
        await pilot.pause(0.1)
        assert app.view.selected_device().name == loop.name
        detach_loop(loop)
        deadline = time.monotonic() + 4
        while loop.name in [d.name for d in app.monitor.devices] and time.monotonic() < deadline:
            await pilot.pause(0.1)
        assert loop.name not in [d.name for d in app.monitor.devices]
        await asyncio.sleep(0.5)
        assert app.is_running
        await pilot.press("q")


async def test_a_switch_made_elsewhere_is_marked_too(tmp_path, make_loop):
    need_real()
    loop = make_loop("64M")
    app = IoschedApp(interval=0.25, watch_udev=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        target = "kyber" if loop.current() != "kyber" else "bfq"
        (loop.sysdir / "queue/scheduler").write_text(target)  # as `iosched compare` in another pane would
        deadline = time.monotonic() + 5
        while not app.monitor.markers_of(loop.name) and time.monotonic() < deadline:
            await pilot.pause(0.1)
        assert [(m.device, m.label) for m in app.monitor.markers_of(loop.name)] == [(loop.name, target)]
        await pilot.press("q")
