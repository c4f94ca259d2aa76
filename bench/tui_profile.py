#!/usr/bin/env python3
"""Where the TUI's time goes per tick: the main screen headless at 200x50 on fixture data, under cProfile.

Deterministic (a fixture tree, a stepped clock, seeded counters), so it can be compared across versions on a
busy machine where CPU percentages are noisy: 40 idle devices plus one under a random read load, selected,
so its four graphs scroll every tick. Prints CPU per tick (median, without the profiler) and a breakdown.
Usage: python3 bench/tui_profile.py [--ticks 120] [--devices 40] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the fixture tree and stepped sampler of the TUI tests

from tui_support import SteppedSampler  # noqa: E402

from iosched.tui.app import IoschedApp  # noqa: E402

from fixtree import FixTree, diskstats_line  # noqa: E402

# (label, function name, file name ending or endings): cumulative time of each, per tick.
BUCKETS = (
    ("tick: sample, rates, history", "tick", "live_screen.py"),
    ("  device table: changed cells", "update_rates", "device_table.py"),
    ("  graphs: rows built", "set_data", ("line_chart.py", "cpu_pane.py")),
    ("screen update (compositor)", "render_update", "_compositor.py"),
    ("  device table lines", "render_lines", "_data_table.py"),
)


DUMP: str | None = None
IDLE = ("<method 'poll' of 'select.epoll' objects>", "<method 'select' of 'select.epoll' objects>")


class Load:
    """Counters of one busy device (random reads, 1500-2500 IO/s) among idle ones; CPUs partly busy."""

    def __init__(self, tree: FixTree, devices: int, seed: int = 1, idle: bool = False) -> None:
        self.tree, self.devices, self.rng, self.idle = tree, devices, random.Random(seed), idle
        self.busy = [0] * 17
        self.cpu = [0] * 10

    def step(self) -> None:
        rng, b = self.rng, self.busy
        ios = 0 if self.idle else rng.randint(1500, 2500)
        b[0] += ios
        b[2] += ios * 8
        b[3] += int(ios * rng.uniform(0.3, 0.9))
        b[9] += 0 if self.idle else rng.randint(600, 1000)
        b[10] += int(ios * rng.uniform(0.3, 0.9))
        lines = [diskstats_line(7, 0, "loop0", b)]
        lines += [diskstats_line(7, i, f"loop{i}", [0] * 17) for i in range(1, self.devices + 1)]
        self.tree.set_diskstats(lines)
        for i, share in enumerate((rng.randint(10, 40), 0, rng.randint(5, 20), 0, rng.randint(0, 10))):
            self.cpu[i] += share
        self.cpu[3] += 200 - sum(self.cpu[i] for i in (0, 2, 4)) % 200
        self.tree.set_stat({"all": self.cpu, "0": self.cpu, "1": self.cpu})


def build_tree(path: Path, devices: int) -> FixTree:
    tree = FixTree(path)
    for i in range(devices + 1):
        tree.add_disk(f"loop{i}", f"7:{i}", size_sectors=131072, rotational=True, mq=True,
                      scheduler="[none] mq-deadline kyber bfq")
    return tree


async def measure(ticks: int, devices: int, size: tuple[int, int], idle: bool = False) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        tree = build_tree(Path(tmp), devices)
        load = Load(tree, devices, idle=idle)
        load.step()
        app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False)
        async with app.run_test(size=size) as pilot:
            await pilot.pause(0.2)
            tick = app.live.tick  # type: ignore[union-attr]
            for _ in range(5):  # past the first frames
                load.step()
                tick()
                await pilot.pause(0.01)
            cpu: list[float] = []
            profile = cProfile.Profile()
            for i in range(2 * ticks):
                profiled = i >= ticks  # first half timed without the profiler, second half profiled
                load.step()  # the fixture's own writes stay out of the figures
                t0 = time.process_time()
                if profiled:
                    profile.enable()
                tick()
                await pilot.pause()  # the screen update runs here
                if profiled:
                    profile.disable()
                else:
                    cpu.append(time.process_time() - t0)
            stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
            if DUMP:
                profile.dump_stats(DUMP)
    # All profiled time but waiting for events (own times add up to the whole).
    total = sum(tt for (f, _, name), (_, _, tt, _, _) in stats.items() if name not in IDLE)
    out = {"ms_per_tick": statistics.median(cpu) * 1000, "profiled_ms_per_tick": total / ticks * 1000,
           "buckets": {}}
    for label, func, filename in BUCKETS:
        cum = sum(ct for (f, _, name), (_, _, _, ct, _) in stats.items() if name == func and f.endswith(filename))
        out["buckets"][label] = cum / ticks * 1000
    return out


def report(result: dict) -> str:
    lines = [f"  CPU per tick {result['ms_per_tick']:.2f} ms (median; under cProfile "
             f"{result['profiled_ms_per_tick']:.2f} ms, shared out as:)"]
    for label, ms in result["buckets"].items():
        lines.append(f"    {label:<34} {ms:6.2f} ms  {ms / result['profiled_ms_per_tick'] * 100:5.1f}%")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ticks", type=int, default=120)
    p.add_argument("--devices", type=int, default=40)
    p.add_argument("--json", action="store_true")
    p.add_argument("--idle", action="store_true", help="the selected device idle too (only the CPU pane moves)")
    p.add_argument("--dump", help="also write the profile to this file (pstats)")
    args = p.parse_args()
    global DUMP
    DUMP = args.dump
    result = asyncio.run(measure(args.ticks, args.devices, (200, 50), args.idle))
    if args.json:
        print(json.dumps(result))
    else:
        busy = "idle" if args.idle else "under load"
        print(f"{args.devices} idle devices + 1 {busy} (selected), 200x50, headless, fixture data")
        print(report(result))


if __name__ == "__main__":
    main()
