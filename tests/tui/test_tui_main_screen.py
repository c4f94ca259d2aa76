"""The main screen as a person sees it at 80x24 and wider: the status line while a job runs, marker labels of
close switches, the screen behind a dialog, the sandbox notice, dialogs that grow with the screen."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from test_tui_jobs import select, wait_until
from textual.app import App, ComposeResult
from textual.containers import Vertical, VerticalScroll
from tui_support import SteppedSampler, populated_tree, set_counters, wait_for_exit

from iosched.core.base.textcharts import marker_labels
from iosched.core.live.monitor import Marker
from iosched.core.load.fio import FioProgress
from iosched.tui.app import IoschedApp
from iosched.tui.dialogs import HelpScreen, JobPicker, SchedulerPicker, TunablesScreen
from iosched.tui.job_run import JobState, tui_job
from iosched.tui.live_screen import SANDBOX_HINT, SANDBOX_NOTICE_S
from iosched.tui.status_line import EXTRA, KEEP, SPARE, USEFUL, fit_parts
from iosched.tui.widgets.line_chart import LineChart
from iosched.tui.widgets.status_bar import StatusBar

from conftest import need_real

BLOCKS = set("▁▂▃▄▅▆▇█") | {chr(c) for c in range(0x2801, 0x2900)}  # bars and non-empty braille


def fixture_app(tmp_path, **kw) -> tuple[IoschedApp, object]:
    tree = populated_tree(tmp_path / "root")
    app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False, **kw)
    return app, tree


def screen_lines(app: App) -> list[str]:
    """What the terminal shows: the screen in front composed over the ones behind it, as text."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, record=True,
                      color_system="truecolor", legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text().splitlines()


async def busy(app: IoschedApp, tree, pilot, ticks: int = 30) -> None:
    await pilot.pause()
    for step in range(1, ticks + 1):
        set_counters(tree, step)
        app.live.tick()
    await pilot.press("down")  # sda: reads every tick, so its graphs are full of braille
    await pilot.pause()


def running_job(device: str) -> JobState:
    state = JobState(device, tui_job("randread-q16t2"))
    state.progress = FioProgress(elapsed=3.0, iops=146_000, read_iops=146_000, write_iops=0, mb_s=570,
                                 clat_mean_us=241.0)
    return state


# ---- 1. the status line while a job runs ---------------------------------------------------------------
def test_fit_parts_drops_the_least_useful_part_first_and_keeps_what_must_stay():
    parts = [("sda [bfq]", KEEP), ("● 1s", SPARE), ("▶ job", KEEP), ("241µs", EXTRA), ("· dev 1k", SPARE),
             ("· x stops", KEEP)]
    assert fit_parts(parts, 80, sep=" ") == "sda [bfq] ● 1s ▶ job 241µs · dev 1k · x stops"
    assert fit_parts(parts, 40, sep=" ") == "sda [bfq] ● 1s ▶ job 241µs · x stops"  # rightmost SPARE first
    assert fit_parts(parts, 31, sep=" ") == "sda [bfq] ▶ job 241µs · x stops"
    assert fit_parts(parts, 25, sep=" ") == "sda [bfq] ▶ job · x stops"
    assert fit_parts(parts, 10, sep=" ") == "sda [bfq]…"  # only what must stay, and still too long: cut
    assert fit_parts([("a", USEFUL), ("", KEEP), ("b", KEEP)], 4) == "a  b"  # empty parts are left out
    assert fit_parts([("a", USEFUL), ("", KEEP), ("b", KEEP)], 3) == "b"


async def test_status_line_keeps_device_scheduler_progress_and_stop_key_whole_at_80_columns(tmp_path):
    app, tree = fixture_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await busy(app, tree, pilot)
        live = app.live
        live.jobs.job = running_job("sda")
        try:
            live.render_status()
            await pilot.pause()
            bar = app.query_one(StatusBar)
            text = bar.plain_text()
            assert len(text) <= bar.content_size.width == 78
            for whole in ("sda [bfq]", "▶ randread-q16t2", "3/60s", "fio 146k IOPS", "· x stops"):
                assert whole in text, whole
            assert text.endswith("· x stops")
            # At 120 columns nothing needs to go: the latency and the device's own rate are shown too.
            wide = live.status_text(118)
            assert "241µs" in wide and "· dev 100" in wide and "● 1s" in wide
            assert live.status_text(118) == live.status_text(500)
            await pilot.resize_terminal(60, 20)  # refitted on resize, not a tick later
            await pilot.pause()
            assert bar.plain_text() == "sda [bfq] ▶ randread-q16t2 3/60s fio 146k IOPS · x stops"
        finally:
            live.jobs.job = None


# ---- 2. marker labels of close switches ------------------------------------------------------------------
def test_marker_labels_of_close_markers_never_overwrite_each_other():
    # Lines at columns 20 and 21: the newest label goes right of its line, the older one left of its own.
    cells = marker_labels({20: "bfq", 21: "kyber"}, 40)
    row = "".join(cells.get(c, "│" if c in (20, 21) else " ") for c in range(40))
    assert row[17:27] == "bfq││kyber"
    # No room for the whole label on either side: the older one is cut to its room, or left out when that is
    # under two cells.
    assert marker_labels({3: "mq-deadline", 10: "bfq"}, 14) == dict(enumerate("mq-de…", start=4)) | dict(
        enumerate("bfq", start=11))
    assert marker_labels({1: "kyber", 2: "bfq"}, 6) == dict(enumerate("bfq", start=3))
    # Two switches a cell apart at the right edge: the newest label goes left of both lines, cut to its room.
    lines = {60: "job", 72: "bfq", 73: "kyber"}
    assert "".join(marker_labels(lines, 74).get(c, "│" if c in lines else " ") for c in range(60, 74)) == \
        "│job   kyber││"
    lines[67] = "job"
    del lines[60]
    assert "".join(marker_labels(lines, 74).get(c, "│" if c in lines else " ") for c in range(64, 74)) == \
        "job│kyb…││"
    # No free room at all (a job started, then two quick switches, at the right edge): the newest label goes
    # whole over the top cells of the older lines; the older labels give way.
    lines = {69: "job", 71: "bfq", 72: "kyber"}
    assert "".join(marker_labels(lines, 74).get(c, "│" if c in lines else " ") for c in range(64, 74)) == \
        "   kyber│ "
    # Labels never run into one another; one cut to two letters is worse than one over an older line.
    lines = {5: "none", 9: "bfq", 12: "kyber", 14: "none"}
    cells = marker_labels(lines, 20)
    assert "".join(cells.get(c, "│" if c in lines else " ") for c in range(20)) == " none│ kyber│ │none "


class ChartApp(App[None]):
    def compose(self) -> ComposeResult:
        yield LineChart("IOPS", ["r/s", "w/s"], id="chart")


async def test_a_chart_fed_two_switches_two_samples_apart_shows_both_labels_readably():
    app = ChartApp()
    async with app.run_test(size=(40, 8)) as pilot:
        chart = app.query_one(LineChart)
        times = [float(t) for t in range(68)]  # 34 cells of plot at 40 columns (6 for the axis)
        markers = [Marker(time=40.0, device="sda", label="bfq"), Marker(time=42.0, device="sda", label="kyber")]
        reads = [100.0] + [5.0] * 67  # the top row is empty but at the left edge: the lines reach it
        chart.set_data(times, [reads, [0.0] * 68], markers)
        await pilot.pause()
        top = chart.plain_text().splitlines()[1][LineChart.GUTTER:]
        assert "bfq││kyber" in top
        assert top.count("│") == 2  # both marker lines stay


# ---- 3. the screen behind a dialog ---------------------------------------------------------------------
@pytest.mark.parametrize("key, dialog, box", [("s", SchedulerPicker, Vertical), ("j", JobPicker, Vertical),
                                              ("question_mark", HelpScreen, VerticalScroll)])
async def test_nothing_of_the_busy_graphs_shows_around_a_dialog_at_80x24(tmp_path, key, dialog, box):
    app, tree = fixture_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await busy(app, tree, pilot)
        assert BLOCKS & set("".join(screen_lines(app)))  # the graphs and CPU pane are busy behind
        await pilot.press(key)
        await pilot.pause()
        assert isinstance(app.screen, dialog)
        region = app.screen.query_one(box).region
        lines = screen_lines(app)
        outside = [ch for y, line in enumerate(lines) for x, ch in enumerate(line.ljust(80))
                   if not region.contains(x, y)]
        assert set(outside) <= {" "}, "".join(outside).split()


async def test_a_switch_notice_waits_behind_the_job_picker_at_80x24(make_loop):
    """`s`, a scheduler, then `j`, on a real loop device: the switch's toast covered the picker's bottom rows. It
    waits behind the dialog and shows again on the screen below when the dialog closes."""
    need_real()
    loop = make_loop("64M")
    app = IoschedApp(interval=0.25, watch_udev=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:  # toasts drawn, as on a terminal
        await select(app, pilot, loop.name)
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, SchedulerPicker)
        await pilot.press("down", "enter")
        assert await wait_until(pilot, lambda: any(" -> " in n.message for n in app._notifications))
        await pilot.pause()
        switched = "none -> mq-deadline in"  # the toast's first row (it wraps at 80 columns)
        assert switched in "\n".join(screen_lines(app))
        await pilot.press("j")
        await pilot.pause()
        assert isinstance(app.screen, JobPicker)
        lines = screen_lines(app)
        box = app.screen.query_one(Vertical).region
        assert switched not in "\n".join(lines)
        assert set(lines[box.bottom - 1].strip()) <= set("▄█"), lines[box.bottom - 1]  # its bottom edge, whole
        await pilot.press("escape")
        await pilot.pause()
        assert switched in "\n".join(screen_lines(app))  # still within its time: shown again
        await pilot.press("q")
        await pilot.pause()
        await pilot.press("y")
        await wait_for_exit(app)
    assert loop.current() == loop.initial_scheduler


async def test_tunables_rows_end_at_a_word_and_the_highlighted_one_says_it_whole_at_80x24(tmp_path):
    app, tree = fixture_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await busy(app, tree, pilot, 3)
        await pilot.press("u")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TunablesScreen)
        meanings = {s.name: s.meaning for s in screen.settings}
        lines = screen_lines(app)
        rows = [line for line in lines if any(f" {name} " in line for name in meanings)]
        assert rows
        for row in rows:
            name = next(n for n in meanings if f" {n} " in row)
            shown = row.split(" queue  " if " queue  " in row else " sched  ", 1)[1].rstrip(" ▎█▁▂▃▄▅▆▇")
            if shown.endswith("…"):  # a cut meaning: a start of it that ends with a whole word
                words = shown[:-1].split()
                assert meanings[name].split()[: len(words)] == words, (shown, meanings[name])
            else:
                assert shown == meanings[name]
        first = screen.settings[0]
        assert f"{first.name}: {first.meaning}" in " ".join(" ".join(line.strip("█ ").split()) for line in lines)


# ---- 4. the sandbox notice ------------------------------------------------------------------------------
async def test_sandbox_notice_is_short_and_its_advice_stays_in_the_status_line(tmp_path):
    app, _ = fixture_app(tmp_path, focus="sda")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        notices = [n for n in app._notifications if "Sandbox sda" in n.message]
        assert notices and notices[0].timeout == SANDBOX_NOTICE_S <= 8
        status = app.query_one(StatusBar).plain_text()
        assert "sda [bfq]" in status and SANDBOX_HINT in status and len(status) <= 78
        app.live.jobs.job = running_job("sda")  # while a job runs the line is the job's
        try:
            assert SANDBOX_HINT not in app.live.status_text()
        finally:
            app.live.jobs.job = None
        await pilot.press("down")  # another device: no sandbox advice
        await pilot.pause()
        assert SANDBOX_HINT not in app.query_one(StatusBar).plain_text()


# ---- 5. dialogs grow with the screen ---------------------------------------------------------------------
@pytest.mark.parametrize("size", [(120, 40), (160, 50)])
async def test_job_descriptions_show_whole_on_wide_screens(tmp_path, size):
    app, tree = fixture_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        await busy(app, tree, pilot, 3)
        await pilot.press("j")
        await pilot.pause()
        text = "\n".join(screen_lines(app))
        assert "CPU-bound on fast devices, so scheduler cost shows" in text
        assert "…" not in text


async def test_job_descriptions_are_cut_inside_the_box_at_80x24(tmp_path):
    app, tree = fixture_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await busy(app, tree, pilot, 3)
        await pilot.press("j")
        await pilot.pause()
        box = app.screen.query_one(Vertical)
        assert box.region.right <= 80
        line = next(line for line in screen_lines(app) if "randread-q16t2" in line)
        assert "CPU-bound…" in line  # cut after a whole word
