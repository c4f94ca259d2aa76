"""The experiment screen, driven with Pilot on a real loop device: form, progress, verdict, cancel."""

from __future__ import annotations

import pytest
from fio_support import fio_procs
from test_tui_jobs import select, wait_until
from textual.widgets import Input, ProgressBar, SelectionList, Static
from tui_support import screen_text

from iosched.core.base.encode import encode
from iosched.core.experiment.matrix import make_boundary
from iosched.core.present.summary import verdict_lines
from iosched.tui.app import IoschedApp
from iosched.tui.checklist import MarkedCheckbox
from iosched.tui.compare_form import CompareForm
from iosched.tui.compare_screen import CompareScreen
from iosched.tui.dialogs import SchedulerPicker

from conftest import need_real

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


async def open_compare(app: IoschedApp, pilot, loop) -> CompareScreen:
    await select(app, pilot, loop.name)
    await pilot.press("c")
    await pilot.pause()
    assert isinstance(app.screen, CompareScreen)
    return app.screen


async def test_compare_screen_runs_to_a_verdict_and_puts_the_device_back(tmp_path, make_loop):
    need_real("fio")
    loop = make_loop()
    app = IoschedApp(interval=0.25, watch_udev=False)
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await open_compare(app, pilot, loop)
        assert sorted(screen.query_one(SelectionList).selected) == ["bfq", "none"]
        screen.query_one("#repeat", Input).value = "2"
        screen.query_one("#runtime", Input).value = "1"
        await pilot.press("s")  # the device belongs to the experiment: no scheduler picker here
        assert not isinstance(app.screen, SchedulerPicker)
        title = screen.query_one("#title", Static)
        assert "ctrl+r starts" in str(title.content)
        await pilot.press("ctrl+r")
        assert await wait_until(pilot, lambda: fio_procs(loop.path) != [], 10)
        # While it runs: the title no longer offers ctrl+r, and the row beside the bar says where it is.
        assert "running · Esc cancels it" in str(title.content) and "ctrl+r" not in str(title.content)
        eta = screen.query_one("#eta", Static)
        assert await wait_until(pilot, lambda: "run 2 of 4 · bfq · about" in str(eta.content), 20), eta.content
        assert str(eta.content).endswith(" s left")
        assert await wait_until(pilot, lambda: screen.doc is not None and screen.doc.judgement is not None, 40)
        assert "ctrl+r starts" in str(title.content)
        # The interim line was there while it ran (a run's end sets it); the verdict has replaced it.
        assert not screen.query_one("#so-far", Static).display
        # The summary first (what ran, then the verdict); ctrl+d shows every table and chart, the verdict first.
        report = str(screen.query_one("#report", Static).content).splitlines()
        assert report[0].startswith(f"randread-q16t2 on {loop.name}") and "bfq" in report[1], report[:3]
        assert not any("bars to the mean" in line for line in report)
        await pilot.press("ctrl+d")
        await pilot.pause()
        details = str(screen.query_one("#report", Static).content)
        assert details.index("Verdict") < details.index("IOPS, bars to the mean")
        assert [r["variant"] for r in encode(screen.doc)["runs"]] == ["none", "bfq", "bfq", "none"]
        assert {m.label for m in app.monitor.markers_of(loop.name)} >= {"none", "bfq"}
        assert loop.current() == loop.initial_scheduler
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, CompareScreen) and app.live.compare is None
        await pilot.press("q")


async def test_escape_mid_run_cancels_and_restores(tmp_path, make_loop):
    need_real("fio")
    loop = make_loop()
    app = IoschedApp(interval=0.25, watch_udev=False)
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await open_compare(app, pilot, loop)
        screen.query_one("#runtime", Input).value = "30"
        await pilot.press("ctrl+r")
        assert await wait_until(pilot, lambda: fio_procs(loop.path) != [], 10)
        await pilot.press("escape")
        assert await wait_until(pilot, lambda: not isinstance(app.screen, CompareScreen), 20)
        assert fio_procs(loop.path) == [] and loop.current() == loop.initial_scheduler
        await pilot.press("q")


async def test_bad_form_input_starts_nothing(tmp_path, make_loop):
    need_real()
    loop = make_loop("64M")
    app = IoschedApp(interval=0.25, watch_udev=False)
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await open_compare(app, pilot, loop)
        screen.query_one("#repeat", Input).value = "many"
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert not screen.running and screen.ctl is None
        assert any("repeats must be a number" in n.message for n in app._notifications)
        await pilot.press("escape")
        await pilot.press("q")


async def test_until_a_verdict_in_the_form_plans_a_sequential_compare_and_matrix(tmp_path, make_loop):
    """The form's "until a verdict": the repeats become the most runs per variant (at least 4, a first look's),
    a compare gets the boundary the command line's --until-verdict gives, a matrix its sequential Holm."""
    need_real()
    loop = make_loop("64M")
    app = IoschedApp(interval=0.25, watch_udev=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_compare(app, pilot, loop)
        form = screen.query_one(CompareForm)
        assert "until a verdict" in "\n".join(screen_text(app))  # it fits at 80x24
        form.query_one("#until-verdict", MarkedCheckbox).value = True
        form.query_one("#repeat", Input).value = "3"
        plan, runs = form.plan("/", False)
        assert plan.kind == "compare" and plan.until_verdict == 4 and runs == 8
        form.query_one("#repeat", Input).value = "6"
        form.query_one("#spec", Input).value = "4k-read,4k-randread"
        plan, runs = form.plan("/", False)
        assert plan.kind == "matrix" and plan.matrix is not None and runs == 2 * 2 * 6
        make_boundary(plan)  # what the service does first, in the screen's worker
        assert plan.matrix.sequential is not None and plan.matrix.sequential.looks == [4, 6]
        form.query_one("#until-verdict", MarkedCheckbox).value = False
        plan, _ = form.plan("/", False)
        assert plan.matrix is not None and plan.matrix.sequential is None and plan.until_verdict is None
        await pilot.press("escape")
        await pilot.press("q")


async def test_three_schedulers_at_80x24_end_on_a_verdict_that_fits(loopdev):
    """A person's first try: three schedulers ticked, live alternation off, on the smallest usual terminal."""
    need_real("fio")
    app = IoschedApp(interval=0.25, watch_udev=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_compare(app, pilot, loopdev)
        await pilot.press("down", "space")  # mq-deadline too; the alternation fields stay at their defaults
        assert screen.query_one(SelectionList).order == ["none", "bfq", "mq-deadline"]
        screen.query_one("#repeat", Input).value = "3"
        screen.query_one("#runtime", Input).value = "1"
        await pilot.press("ctrl+r")
        assert screen.running  # not refused over the (unused) alternation duration
        # After a run's end with two of each, the interim lines show while the last runs go on.
        assert await wait_until(pilot, lambda: screen.query_one("#so-far", Static).display, 60)
        assert "so far: interim, 2 runs per variant: bfq vs none" in str(screen.query_one("#so-far").content)
        assert await wait_until(pilot, lambda: screen.doc is not None and screen.doc.judgement is not None, 60)
        await pilot.pause()
        text = " ".join(" ".join(screen_text(app)).split())
        assert "so far" not in text and "100%" in text and screen.query_one(ProgressBar).percentage == 1
        verdict = verdict_lines(screen.doc, screen.doc.judgement)
        assert len(verdict) >= 2 and all(" ".join(line.split()) in text for line in verdict[1:3]), verdict
        assert [r["variant"] for r in encode(screen.doc)["runs"][:3]] == ["none", "bfq", "mq-deadline"]
        assert loopdev.current() == loopdev.initial_scheduler
        await pilot.press("escape")
        await pilot.press("q")


async def test_the_form_starts_from_the_devices_scheduler_and_takes_the_command_lines_runtimes(tmp_path, make_loop):
    """The baseline preselected is what the device runs now, not the first in the kernel's list; a runtime the
    command line takes (up to 24 h, core's bound) the form takes too, and one past it is refused alike."""
    need_real()
    loop = make_loop("64M")
    (loop.sysdir / "queue/scheduler").write_text("bfq")  # listed after mq-deadline, the other one picked
    app = IoschedApp(interval=0.25, watch_udev=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_compare(app, pilot, loop)
        form = screen.query_one(CompareForm)
        assert "baseline: bfq" in "\n".join(screen_text(app))
        form.query_one("#runtime", Input).value = "7200"
        plan, _ = form.plan("/", False)
        assert plan.variants[0].label == "bfq" and plan.job.runtime == 7200
        form.query_one("#runtime", Input).value = "90000"
        with pytest.raises(ValueError, match=r"runtime must be a number between 0\.5 and 86400"):
            form.plan("/", False)
        await pilot.press("escape")
        await pilot.press("q")
