"""From pressing `j` + Enter to the job's first point on the graphs (sampler) and first fio figure (status).

Drives the real app with Textual's Pilot on a loop device over a sparse file, at 1 s and 0.25 s refresh,
five times each. Run as root: python3 bench/job_first_point.py
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path

from bench.common import extra_loop_devices
from iosched.tui.app import IoschedApp


async def once(dev: str, interval: float) -> tuple[float, float]:
    app = IoschedApp(interval=interval, watch_udev=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        names = [d.name for d in app.monitor.devices]
        await pilot.press(*(["down"] * names.index(dev)))
        await pilot.press("j")
        await pilot.pause()
        t0 = time.monotonic()
        await pilot.press("enter")
        graph = status = None
        while (graph is None or status is None) and time.monotonic() - t0 < 10:
            await asyncio.sleep(0.01)
            now = time.monotonic() - t0
            if graph is None and any(v for v in app.monitor.history.disk_series(dev, "r_s", 8)):
                graph = now
            if status is None and app.live.job is not None and app.live.job.progress is not None:
                status = now
        await pilot.press("x")
        for _ in range(200):  # fio stops within a moment; give up after 10 s
            if app.live.job is None:
                break
            await pilot.pause(0.05)
        await pilot.press("q")
    return graph or float("nan"), status or float("nan")


def main() -> None:
    with extra_loop_devices(1, "1G", direct=True) as (path,):
        dev = Path(path).name
        for interval in (1.0, 0.25):
            res = [asyncio.run(once(dev, interval)) for _ in range(5)]
            g = [r[0] for r in res]
            s = [r[1] for r in res]
            print(f"refresh {interval:g} s: first graph point after {statistics.median(g):.2f} s median "
                  f"(max {max(g):.2f}); first fio figure after {statistics.median(s):.2f} s median (max {max(s):.2f})")


if __name__ == "__main__":
    main()
