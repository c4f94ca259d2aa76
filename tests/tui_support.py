"""Deterministic inputs for TUI tests: a fixture tree with known devices and a sampler with a stepped clock."""

from __future__ import annotations

from pathlib import Path

from iosched.core.live.sampler import Sample, Sampler

from fixtree import FixTree, diskstats_line


class SteppedSampler(Sampler):
    """The real sampler over a fixture root, but each sample is exactly ``step`` seconds after the last."""

    def __init__(self, root: Path, step: float = 1.0) -> None:
        super().__init__(root)
        self.t = 1000.0
        self.step = step

    def take(self) -> Sample:
        sample = super().take()
        self.t += self.step
        return Sample(time=self.t, disks=sample.disks, cpus=sample.cpus)


def populated_tree(root: Path) -> FixTree:
    """sda: an HDD on bfq; nvme0n1: an SSD on none; zram0: no scheduler. Counters at zero."""
    tree = FixTree(root)
    tree.add_disk("sda", "8:0", size_sectors=7814037168, rotational=True, mq=False,
                  scheduler="mq-deadline kyber [bfq] none",
                  extra={"device/model": "WDC WD40EFRX-68N"})
    tree.add_disk("nvme0n1", "259:0", size_sectors=1953525168, scheduler="[none] mq-deadline kyber bfq",
                  extra={"device/model": "Samsung SSD 980 PRO 1TB"})
    tree.add_disk("zram0", "252:0", size_sectors=8388608, scheduler=None, mq=False)
    set_counters(tree, 0)
    return tree


def set_counters(tree: FixTree, step: int) -> None:
    """Advance counters to tick ``step``: sda reads 100/s of 64 KiB at 8 ms, nvme0n1 writes 2000/s, CPUs busy."""
    n = step
    sda = [100 * n, 0, 12800 * n, 800 * n, 0, 0, 0, 0, 0, 900 * n, 1600 * n] + [0] * 6
    nvme = [0, 0, 0, 0, 2000 * n, 500 * n, 16000 * n, 1000 * n, 0, 400 * n, 1000 * n] + [0] * 6
    tree.set_diskstats([diskstats_line(8, 0, "sda", sda), diskstats_line(259, 0, "nvme0n1", nvme),
                        diskstats_line(252, 0, "zram0", [0] * 17)])
    # per tick: usr 30, sys 15, iowait 10, irq 1, soft 4, idle 140 (of 200 ticks over two CPUs)
    cpu0 = [15 * n, 0, 10 * n, 60 * n, 5 * n, 1 * n, 2 * n, 0, 0, 0]
    cpu1 = [15 * n, 0, 5 * n, 80 * n, 5 * n, 0, 2 * n, 0, 0, 0]
    tree.set_stat({"all": [a + b for a, b in zip(cpu0, cpu1)], "0": cpu0, "1": cpu1})


def screen_text(app) -> list[str]:
    """The picture on the terminal as plain text rows, as a person reads it (what export_screenshot draws)."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True, color_system=None,
                      legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text().splitlines()


async def open_and_close_dialogs(pilot, app, times: int) -> None:
    """The job and scheduler pickers opened and closed with their keys, ``times`` each (leak tests)."""
    from iosched.tui.dialogs import JobPicker, SchedulerPicker

    for _ in range(times):
        for key, dialog in (("j", JobPicker), ("s", SchedulerPicker)):
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, dialog)
            await pilot.press("escape")
            await pilot.pause()


async def wait_for_exit(app, within: float = 20.0) -> None:
    """Until the app has exited. A quit that restores exits from its worker once the restore is done: a fixed
    pause was too short on a loaded machine, and the test then saw the device before it was put back."""
    import asyncio
    import time

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if app.return_code is not None:
            return
        await asyncio.sleep(0.05)
