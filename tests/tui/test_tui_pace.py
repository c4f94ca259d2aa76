"""At fast refresh the graphs and CPU pane are redrawn at most every 0.5 s (every other sample at 0.25 s), the
table every sample; a new marker, a selection change and a pause draw the graphs at once."""

from __future__ import annotations

from tui_support import SteppedSampler

from iosched.tui.app import IoschedApp
from iosched.tui.widgets.cpu_pane import CpuPane
from iosched.tui.widgets.line_chart import LineChart

from fixtree import FixTree, diskstats_line


def shown_points(app: IoschedApp) -> tuple[int, int]:
    """How many samples the IOPS graph and the CPU pane were last drawn from."""
    return len(app.query_one("#chart-iops", LineChart)._times), len(app.query_one(CpuPane)._history)


async def test_graphs_are_drawn_every_other_sample_at_a_quarter_second(tmp_path):
    tree = FixTree(tmp_path)
    tree.add_disk("sda", "8:0")
    reads = [0] * 17
    cpu = [0] * 10

    def step() -> None:
        reads[0] += 100
        cpu[0] += 10
        cpu[3] += 40
        tree.set_diskstats([diskstats_line(8, 0, "sda", reads)])
        tree.set_stat({"all": cpu, "0": cpu})

    step()
    app = IoschedApp(root=tmp_path, interval=0.25, sampler=SteppedSampler(tmp_path, 0.25), auto_tick=False,
                     watch_udev=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        live = app.live
        counts = []
        for _ in range(6):
            step()
            live.tick()
            await pilot.pause()
            counts.append(shown_points(app))
        # Samples 1, 3, 5 wait (the table alone moves); 2, 4, 6 draw both new points.
        assert counts[1] == counts[2] and counts[3] == counts[4] and counts[1][0] < counts[3][0] < counts[5][0]
        assert counts[5][0] - counts[3][0] == 2 and counts[5][1] - counts[3][1] == 2

        step()
        live.tick()  # an odd sample: skipped ...
        await pilot.pause()
        assert shown_points(app) == counts[5]
        app.monitor.mark("sda", "bfq")
        step()
        live.tick()  # ... but a new marker draws at once, whatever the count
        await pilot.pause()
        assert shown_points(app)[0] == counts[5][0] + 2
        step()
        live.tick()  # skipped again; pausing now shows it
        await pilot.pause()
        before = shown_points(app)
        live._timer = live.set_interval(3600, lambda: None)  # the pause acts on a running timer
        live.action_pause()
        await pilot.pause()
        assert shown_points(app)[0] == before[0] + 1
