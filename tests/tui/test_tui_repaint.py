"""The main screen repaints only what changed (table cells, graph lines): it must look like a full repaint."""

from __future__ import annotations

import random

from textual.widget import Widget
from tui_support import SteppedSampler

from iosched.tui.app import IoschedApp
from iosched.tui.widgets.device_table import DeviceTable

from fixtree import FixTree, diskstats_line

DISKS = ("sda", "sdb", "sdc", "sdd")


class Counters:
    """sda reads at a random rate each tick; sdb is busy in bursts (its row goes busy and idle); the rest idle."""

    def __init__(self, tree: FixTree, seed: int = 7) -> None:
        self.tree, self.rng = tree, random.Random(seed)
        self.disks = {name: [0] * 17 for name in DISKS}
        self.cpu = [0] * 10

    def step(self, n: int) -> None:
        rng = self.rng
        for name, burst in (("sda", True), ("sdb", n % 20 < 5)):
            if burst:
                c = self.disks[name]
                ios = rng.randint(10, 3000)
                c[0] += ios
                c[2] += ios * rng.choice((8, 16, 256))
                c[3] += int(ios * rng.uniform(0.1, 5))
                c[9] += rng.randint(0, 1000)
                c[10] += int(ios * rng.uniform(0.1, 5))
        self.tree.set_diskstats([diskstats_line(8, 16 * i, name, c) for i, (name, c) in enumerate(self.disks.items())])
        for i in (0, 2, 3, 4):
            self.cpu[i] += rng.randint(0, 60)
        self.tree.set_stat({"all": self.cpu, "0": self.cpu})


def full_repaint(app: IoschedApp) -> None:
    """Forget every cached picture: the table's rendered cells (any public update does it) and every line."""
    table = app.query_one(DeviceTable)
    table.update_cell("sdd", "model", table.get_cell("sdd", "model"))
    for widget in app.screen.query(Widget):
        if hasattr(widget, "_strip_of"):
            widget._rows, widget._strip_of = None, {}
        widget.refresh()


async def test_partial_repaints_show_what_a_full_repaint_shows(tmp_path):
    tree = FixTree(tmp_path / "root")
    for i, name in enumerate(DISKS):
        tree.add_disk(name, f"8:{16 * i}", size_sectors=2097152)
    counters = Counters(tree)
    counters.step(0)
    app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False)
    checked = 0
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()  # the live screen mounts first
        live = app.live
        assert live is not None
        for n in range(1, 121):
            counters.step(n)
            live.tick()
            if n in (30, 70):  # a switch marker appears, and later scrolls along
                live.monitor.mark("sda", "bfq" if n == 30 else "kyber", live.monitor.history.times[-1] - 0.5)
            if n == 50:
                await pilot.press("down")  # sdb: graphs of a device that is busy in bursts
            if n == 90:
                await pilot.press("up")
            await pilot.pause()
            if n % 8 == 0:
                shown = app.export_screenshot()
                full_repaint(app)
                await pilot.pause()
                assert app.export_screenshot() == shown, f"stale picture after tick {n}"
                checked += 1
        assert checked == 15
        assert "kyber" in app.export_screenshot()  # the checks saw markers, not only empty graphs
