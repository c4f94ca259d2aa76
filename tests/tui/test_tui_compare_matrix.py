"""The experiment screen runs a matrix (a group or a list of jobs) and a timed command, on a real loop device."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fio_support import fio_procs
from test_tui_compare import open_compare
from test_tui_jobs import wait_until
from textual.widgets import Input, ProgressBar, SelectionList, Static

from iosched.core.base.encode import encode
from iosched.core.documents.document import RunDoc
from iosched.core.experiment.events import RunEnded
from iosched.core.load.startup_timing import StartupTiming
from iosched.tui.app import IoschedApp
from iosched.tui.compare_screen import CompareScreen
from iosched.tui.result_charts import ResultChart

from conftest import need_real, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def small_matrix(screen: CompareScreen) -> None:
    """The form set for a 2 x 2 matrix of 1 s runs, twice each: none and mq-deadline on 4k-read, 4k-randread."""
    sel = screen.query_one(SelectionList)
    sel.deselect_all()
    sel.select("none")
    sel.select("mq-deadline")
    screen.query_one("#repeat", Input).value = "2"
    screen.query_one("#runtime", Input).value = "1"
    screen.query_one("#spec", Input).value = "4k-read,4k-randread"


async def test_compare_screen_runs_a_matrix_and_a_command(loopdev):
    need_real("fio")
    app = IoschedApp(interval=0.25, watch_udev=False)
    async with app.run_test(size=(120, 50)) as pilot:
        screen = await open_compare(app, pilot, loopdev)
        small_matrix(screen)
        await pilot.press("ctrl+r")
        assert await wait_until(pilot, lambda: fio_procs(loopdev.path) != [], 10)
        assert await wait_until(pilot, lambda: screen.doc is not None and screen.doc.judgement is not None, 90)
        doc = encode(screen.doc)
        assert doc["kind"] == "matrix" and len(doc["runs"]) == 8
        assert len(doc["judgement"]["cells"]) == 4
        report = str(screen.query("#report").first().content)
        assert "mq-deadline: " in report and "4k-randread" in report
        assert await wait_until(pilot, lambda: len(screen.query(ResultChart)) >= 3, 10)
        assert loopdev.current() == loopdev.initial_scheduler

        screen.doc = None
        screen.query_one("#spec", Input).value = f"cmd: dd if={loopdev.path} of=/dev/null bs=1M count=8 iflag=direct"
        # Its own figure, read from dd's last line ("… copied, 0.01 s, 700 MB/s"): the regex keeps its commas.
        screen.query_one("#cmd-metric", Input).value = "rate=copied, [0-9.]+ s, ([0-9.]+) [kMG]?B/s:higher"
        await pilot.press("ctrl+r")
        assert await wait_until(pilot, lambda: screen.doc is not None and screen.doc.judgement is not None, 60)
        doc = encode(screen.doc)
        assert all(r["metrics"]["wall_s"] > 0 for r in doc["runs"]) and len(doc["runs"]) == 4
        assert all(r["valid"] and r["metrics"]["rate"] > 0 for r in doc["runs"])
        assert doc["workload"]["cmd_metrics"][0]["pattern"] == "copied, [0-9.]+ s, ([0-9.]+) [kMG]?B/s"
        assert doc["primary_metric"] == "rate"
        # A command's run line says its wall time (and its own figures), not "0 IOPS".
        screen.view.show(RunEnded(0, 4, "none", RunDoc(index=0, variant="none", start=0.0, end=1.5, valid=True,
                                                       invalid_reason=None, config={},
                                                       metrics={"wall_s": 1.5, "tps": 2200.0, "cpu_us_per_io": 3.0,
                                                                "dev_util": 5.0})))
        report = str(screen.query_one("#report", Static).content)
        assert report.endswith("run 1: none  tps 2.2k  wall 1.50 s  CPU/IO 3.0 µs"), report
        # A start-up's says its time, or that it was over the cap, and what its background moved.
        timing = StartupTiming(startup_s=7.5, alone_s=0.15, cap_s=7.5, over_cap=True, requests=907, of=1563)
        screen.view.show(RunEnded(1, 4, "none", RunDoc(index=1, variant="none", start=0.0, end=9.0, valid=True,
                                                       invalid_reason=None, config={}, startup=timing,
                                                       metrics={"startup_s": 7.5, "bg:mb_s": 950.0,
                                                                "cpu_us_per_io": 3.0})))
        report = str(screen.query_one("#report", Static).content)
        assert report.endswith("run 2: none  start-up over the cap (7.50 s, 50 x its 0.15 s alone): 907 of 1563 "
                               "requests  bg 950 MB/s  CPU/IO 3.0 µs"), report

        screen.query_one("#spec", Input).value = "4k-read"  # a figure without a command: refused, nothing runs
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert not screen.running
        assert any("a figure is read from a command's output" in n.message for n in app._notifications)
        screen.query_one("#cmd-metric", Input).value = ""

        screen.query_one("#spec", Input).value = "4k-matrx"
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert not screen.running
        assert any("no job or group named '4k-matrx'" in n.message for n in app._notifications)
        assert loopdev.current() == loopdev.initial_scheduler
        await pilot.press("escape")
        await pilot.press("q")


def files_in(d: Path) -> list[Path]:
    return sorted(d.iterdir())


def read_json(p: Path) -> dict:
    return json.loads(p.read_text())


async def test_a_cancelled_matrix_is_kept_and_resumed_with_ctrl_e(loopdev):
    """Every TUI result is saved; a matrix after each run, so leaving mid-way loses only the run in progress,
    and the compare screen offers to go on from there into the same file."""
    need_real("fio")
    results = Path(os.environ["IOSCHED_RESULTS_DIR"])
    app = IoschedApp(interval=0.25, watch_udev=False)
    async with app.run_test(size=(120, 50)) as pilot:
        screen = await open_compare(app, pilot, loopdev)
        assert screen.check_action("resume", ()) is False  # nothing to resume: the key is not offered
        small_matrix(screen)
        await pilot.press("ctrl+r")
        assert await wait_until(pilot, lambda: screen.query_one(ProgressBar).progress >= 2, 60)
        assert "left" in str(screen.query_one("#eta", Static).content)  # the matrix's own estimate
        await pilot.press("escape")  # cancel and leave
        assert await wait_until(pilot, lambda: not isinstance(app.screen, CompareScreen), 30)
        (path,) = files_in(results)
        saved = read_json(path)
        assert saved["kind"] == "matrix" and saved["status"] != "final" and 2 <= len(saved["runs"]) < 8
        assert loopdev.current() == loopdev.initial_scheduler

        assert app.view.selected_device().name == loopdev.name  # still selected: `c` opens it again
        await pilot.press("c")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        assert await wait_until(pilot, lambda: screen.check_action("resume", ()) is True, 10)  # read in a worker
        live = str(screen.query_one("#live", Static).content)
        assert f"unfinished matrix: {len(saved['runs'])} of 8 runs · 4k-read, 4k-randread · ctrl+e resumes it" \
            in live, live
        screen.query_one("#repeat", Input).focus()  # a text field's own ctrl+e (end of line) must not take it
        await pilot.pause()
        await pilot.press("ctrl+e")
        assert await wait_until(pilot, lambda: screen.doc is not None and screen.doc.judgement is not None, 90)
        assert files_in(results) == [path]  # the same file, finished
        final = read_json(path)
        assert final["status"] == "final" and sorted(r["slot"] for r in final["runs"]) == list(range(8))
        assert final["runs"][:len(saved["runs"])] == saved["runs"]  # the finished runs were kept, not redone
        assert any(n.endswith(", then resumed") for n in final["notes"]), final["notes"]
        assert f"Saved to {path}" in str(screen.query_one("#report", Static).content)
        assert await wait_until(pilot, lambda: screen.check_action("resume", ()) is False, 10)  # nothing left
        assert loopdev.current() == loopdev.initial_scheduler
        # `iosched report` reads the file the screen wrote.
        rep = run_cli("report", str(path))
        assert rep.returncode == 0 and "4k-randread" in rep.stdout
        await pilot.press("escape")
        await pilot.press("q")
