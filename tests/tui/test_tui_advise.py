"""The Advise screen, driven with Pilot on fixture data and a simulated runner (tests/advice_support.py): `a` and the
palette open it; ctrl+r plans and changes nothing; ctrl+r again runs the five steps; the result is a card with the
trade-off and a Persist button that opens the persist dialog for the recommended setting. The real fio path is the
command line's (tests/real/test_advise_real.py): the screen hands the same plan to the same service."""

from __future__ import annotations

import pytest
from advice_support import SimulatedRunner
from test_tui_jobs import select, wait_until
from textual.widgets import Button, Input, Select, Static
from tui_support import SteppedSampler, populated_tree, screen_text

from iosched.core.present.result_file import ResultFile
from iosched.tui import advise_screen
from iosched.tui.advise_screen import AdviseScreen
from iosched.tui.app import IoschedApp
from iosched.tui.commands import SchedulerCommands
from iosched.tui.dialogs import PersistScreen

from fixtree import LAYOUTS

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def make_app(tmp_path):
    tree = populated_tree(tmp_path / "root")
    for i in range(4):
        tree.write(f"sys/block/nvme0n1/mq/{i}/nr_tags", "1023\n")
    for name, value in LAYOUTS["6.18"].folder("bfq").items():  # sda runs bfq: its folder is there, as the kernel's
        tree.write(f"sys/block/sda/queue/iosched/{name}", value + "\n")
    app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False)
    return app, tree


def kyber_faster(_prep):
    return SimulatedRunner({"kyber": {"iops": 1.3, "mb_s": 1.3}}, noise=0.03)


def all_equal(_prep):
    return SimulatedRunner(noise=0.03)


async def open_advise(app, pilot, goal: str = "throughput", runner=kyber_faster) -> AdviseScreen:
    await pilot.pause()
    await select(app, pilot, "nvme0n1")
    await pilot.press("a")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, AdviseScreen) and screen.device == "nvme0n1"
    screen.query_one("#goal", Select).value = goal
    screen.runner = runner
    await pilot.pause()
    return screen


def text_of(screen, selector: str) -> str:
    return str(screen.query_one(selector, Static).content)


async def plan_and_run(pilot, screen: AdviseScreen) -> None:
    await pilot.press("ctrl+r")
    assert await wait_until(pilot, lambda: screen.prep is not None and not screen.running, 10)
    await pilot.press("ctrl+r")
    assert await wait_until(pilot, lambda: screen.doc is not None and not screen.running, 30)


async def test_plan_changes_nothing_then_the_run_ends_in_a_card_with_persist(tmp_path):
    app, tree = make_app(tmp_path)
    scheduler = tree.root / "sys/block/nvme0n1/queue/scheduler"
    before = scheduler.read_text()
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await open_advise(app, pilot)
        assert "ctrl+r plans" in text_of(screen, "#title")
        await pilot.press("ctrl+r")
        assert await wait_until(pilot, lambda: screen.prep is not None and not screen.running, 10)
        # The plan with its time, and what ctrl+r now does; the steps so far: observe and plan, nothing else.
        plan = text_of(screen, "#text")
        assert plan.startswith("plan for nvme0n1 (throughput): at most about") and "candidate kyber" in plan
        assert "ctrl+r runs this plan" in text_of(screen, "#title")
        assert "nothing has changed yet" in text_of(screen, "#doing")
        assert screen.step == "plan" and not screen.query_one("#card").display
        assert scheduler.read_text() == before
        # A changed budget makes the plan stale: ctrl+r plans again, it does not run the old one.
        screen.query_one("#budget", Input).value = "20m"
        await pilot.pause()
        assert screen.prep is None and "ctrl+r plans" in text_of(screen, "#title")
        await plan_and_run(pilot, screen)
        doc = screen.doc
        assert doc is not None and doc.status == "final" and doc.advice[0].recommended == "kyber"
        answer = text_of(screen, "#answer")
        first, *rest = answer.splitlines()
        assert first.startswith("nvme0n1: switch to kyber: +") and "IOPS" in first
        # The interval's level above the plain 95% is said with why, in the words the command line prints.
        level = first.split("(")[1].split(" CI")[0]
        n = len(doc.advice[0].estimates)
        assert level != "95%" and rest == [f"    {level} CI: the level repeated looks at {n} candidates need for 95% "
                                           "overall"], answer
        assert "iosched report " in text_of(screen, "#text")
        assert "iosched set nvme0n1 kyber" in text_of(screen, "#keep")
        assert screen.query_one("#card").display
        # Every step done; the device is as it was (the simulated runner writes nothing, the plan nothing at all).
        steps = text_of(screen, "#steps")
        assert all(f"✓ {s}" in steps for s in ("observe", "plan", "test", "decide", "keep")) and "▶" not in steps
        assert "done; the device is back as it was" in text_of(screen, "#doing")
        assert scheduler.read_text() == before
        persist = screen.query_one("#persist", Button)
        assert persist.display and str(persist.label) == "Persist kyber"
        persist.press()  # as a click or Enter on it does
        # Pushed, then drawn: its first frame may come a pause after it is the app's screen.
        assert await wait_until(pilot, lambda: isinstance(app.screen, PersistScreen)
                                and "kyber" in "\n".join(screen_text(app)), 5)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, AdviseScreen) and app.live.advise is None
        await pilot.press("q")


async def test_equal_candidates_keep_shown_equal_and_offer_no_persist(tmp_path):
    app, _ = make_app(tmp_path)
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await open_advise(app, pilot, runner=all_equal)
        await plan_and_run(pilot, screen)
        answer = text_of(screen, "#answer")
        assert answer.startswith("nvme0n1: keep none — shown equal: no candidate is more than 10% better (90% "
                                 "intervals within")
        assert text_of(screen, "#keep") == "nothing to change"
        assert not screen.query_one("#persist", Button).display
        await pilot.press("escape")
        await pilot.press("q")


async def test_the_palette_offers_advise_per_device(tmp_path):
    app, _ = make_app(tmp_path)
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        provider = SchedulerCommands(app.screen)
        found = {text: run for text, run, _ in provider._commands()}
        assert "zram0: advise (which scheduler?)" not in found  # no IO scheduler: nothing to advise
        found["nvme0n1: advise (which scheduler?)"]()
        await pilot.pause()
        assert isinstance(app.screen, AdviseScreen) and app.screen.device == "nvme0n1"
        await pilot.press("escape")
        await pilot.press("q")


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_advise_card_snapshot(snap_compare, tmp_path, monkeypatch, size):
    """The card after a run (the saved file's name carries the time: not saved here)."""
    monkeypatch.setattr(advise_screen.ResultFile, "new_in", classmethod(lambda cls, *a: ResultFile(None)))
    app, _ = make_app(tmp_path)

    async def run_before(pilot) -> None:
        screen = await open_advise(app, pilot)
        await plan_and_run(pilot, screen)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)
