"""The live screen with a scheduler outside the four (adios, on a fixture tree), and a switch the kernel does not
return from: the picker and the palette offer it, its tunables are its settings alone, the quit puts it back; a
hanging switch is reported by its deadline while the screen goes on, and is never made again."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from stuck_support import hanging_switches
from test_tui_jobs import select, wait_until
from tui_support import SteppedSampler

from iosched.core.settings.journal import Journal, default_run_dir
from iosched.tui.app import IoschedApp
from iosched.tui.commands import SchedulerCommands
from iosched.tui.dialogs import ConfirmScreen, SchedulerPicker, TunablesScreen

from fixtree import ADIOS, LAYOUTS, FixTree, add_kernel_disk, kernel_writes

ALL = ("none", "mq-deadline", "kyber", "bfq", "adios")


@pytest.fixture
def adios_tree(tree: FixTree) -> FixTree:
    add_kernel_disk(tree, "sda", "8:0", LAYOUTS["6.18"], "mq-deadline", ALL)
    tree.set_diskstats(["   8       0 sda " + " ".join(["0"] * 17)])
    return tree


def app_on(tree: FixTree) -> IoschedApp:
    return IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False)


def scheduler_of(tree: FixTree) -> str:
    text = (tree.root / "sys/block/sda/queue/scheduler").read_text()
    return text[text.index("[") + 1:text.index("]")]


async def test_a_scheduler_outside_the_four_is_picked_tuned_and_put_back(adios_tree, monkeypatch):
    tree = adios_tree
    kernel_writes(monkeypatch, tree, LAYOUTS["6.18"])
    app = app_on(tree)
    async with app.run_test(size=(120, 40)) as pilot:
        await select(app, pilot, "sda")
        hits = [text for text, _, _ in SchedulerCommands(app.screen)._commands()]
        assert "sda: scheduler -> adios" in hits
        await pilot.press("s")
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, SchedulerPicker) and picker.available == list(ALL)
        await pilot.press(*(["down"] * (ALL.index("adios") - ALL.index("mq-deadline"))), "enter")
        assert await wait_until(pilot, lambda: scheduler_of(tree) == "adios" and not app.live.settings.switching)
        assert any("sda: mq-deadline -> adios" in n.message for n in app._notifications)
        app.live.tick()
        await pilot.press("u")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TunablesScreen)
        mine = {s.name: s.value for s in screen.settings if s.scope == "adios"}
        assert mine == ADIOS  # its settings; not its version, statistics, model or triggers
        await pilot.press("escape")
        app.live.settings.write_tunable("sda", ("lat_target_read", "1000000"))
        assert await wait_until(pilot, lambda: not app.live.settings.tuning)
        assert (tree.root / "sys/block/sda/queue/iosched/lat_target_read").read_text().strip() == "1000000"
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await pilot.pause(0.5)
    assert scheduler_of(tree) == "mq-deadline"
    assert Journal(default_run_dir(tree.root)).entries() == {}


@pytest.fixture
def stuck_switches(monkeypatch) -> Iterator[None]:
    yield from hanging_switches(monkeypatch)


async def test_a_switch_that_hangs_is_reported_and_the_screen_goes_on(adios_tree, stuck_switches):
    tree = adios_tree
    app = app_on(tree)
    async with app.run_test(size=(120, 40)) as pilot:
        await select(app, pilot, "sda")
        app.live.settings.start_switch("sda", "adios")
        assert app.live.settings.switching
        app.live.tick()  # the screen is drawn meanwhile: the write waits in a worker
        assert await wait_until(pilot, lambda: any("has not returned from writing 'adios'" in n.message
                                                   for n in app._notifications))
        assert not app.live.settings.switching
        app.live.settings.start_switch("sda", "bfq")
        assert await wait_until(pilot, lambda: any("still has a write the kernel has not returned from"
                                                   in n.message for n in app._notifications))
        assert scheduler_of(tree) == "mq-deadline"
        assert ("sda", "queue/scheduler") in app.live.settings.changed  # the quit's restore names it
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await pilot.pause(0.5)
    entry = Journal(default_run_dir(tree.root)).entries()["sda/queue/scheduler"]
    assert entry.pending is not None and entry.pending.value == "adios"  # kept for `iosched restore`
