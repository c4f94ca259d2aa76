"""The experiment screen runs a matrix (a group or a list of jobs) and a timed command, on a real loop device."""

from __future__ import annotations

from test_experiment_real import fio_procs
from test_tui_compare import open_compare
from test_tui_jobs import wait_until
from textual.widgets import Input, SelectionList

from iosched.tui.app import IoschedApp
from iosched.tui.result_charts import ResultChart

from conftest import need_real


async def test_compare_screen_runs_a_matrix_and_a_command(loopdev):
    need_real("fio")
    app = IoschedApp(interval=0.25, watch_udev=False)
    async with app.run_test(size=(120, 50)) as pilot:
        screen = await open_compare(app, pilot, loopdev)
        sel = screen.query_one(SelectionList)
        sel.deselect_all()
        sel.select("none")
        sel.select("mq-deadline")
        screen.query_one("#repeat", Input).value = "2"
        screen.query_one("#runtime", Input).value = "1"
        screen.query_one("#spec", Input).value = "4k-read,4k-randread"
        await pilot.press("ctrl+r")
        assert await wait_until(pilot, lambda: fio_procs(loopdev.path) != [], 10)
        assert await wait_until(pilot, lambda: screen.doc is not None and "judgement" in screen.doc, 90)
        doc = screen.doc
        assert doc["kind"] == "matrix" and len(doc["runs"]) == 8
        assert len(doc["judgement"]["cells"]) == 4
        report = str(screen.query("#report").first().content)
        assert "mq-deadline: " in report and "4k-randread" in report
        assert await wait_until(pilot, lambda: len(screen.query(ResultChart)) >= 3, 10)
        assert loopdev.current() == loopdev.initial_scheduler

        screen.doc = None
        screen.query_one("#spec", Input).value = f"cmd: dd if={loopdev.path} of=/dev/null bs=1M count=8 iflag=direct"
        await pilot.press("ctrl+r")
        assert await wait_until(pilot, lambda: screen.doc is not None and "judgement" in screen.doc, 60)
        assert all(r["metrics"]["wall_s"] > 0 for r in screen.doc["runs"]) and len(screen.doc["runs"]) == 4

        screen.query_one("#spec", Input).value = "4k-matrx"
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert not screen.running
        assert any("no job or group named '4k-matrx'" in n.message for n in app._notifications)
        assert loopdev.current() == loopdev.initial_scheduler
        await pilot.press("escape")
        await pilot.press("q")
