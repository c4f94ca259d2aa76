"""Quitting while a compare or an advice runs: the experiment is cancelled and puts its device back itself; the
quit's restore of this session's changes waits for that put-back instead of writing beside it, and the wait for it
covers the scheduler switch's own deadline (tui/worker_run.py)."""

from __future__ import annotations

import threading
import time

from test_tui_jobs import select
from tui_support import SteppedSampler, wait_for_exit

from iosched.core.settings.writes import write_deadline
from iosched.tui import app as app_module
from iosched.tui.app import IoschedApp
from iosched.tui.dialogs import ConfirmScreen
from iosched.tui.worker_run import WorkerRun

from fixtree import LAYOUTS, FixTree, add_kernel_disk


class PuttingBack(WorkerRun):
    """A cancelled experiment's worker: its put-back takes a moment after the cancel."""

    def __init__(self, said: list[str]) -> None:
        self.said, self.ctl, self.leave_when_done, self.running = said, None, False, True
        self.thread = threading.Thread(target=self._run)
        self.cancelled = threading.Event()
        self.thread.start()

    def _run(self) -> None:
        self.cancelled.wait(10)
        time.sleep(1.5)  # longer than the question and its answer take here
        self.said.append("put back")

    def cancel(self) -> None:
        self.cancelled.set()


async def test_the_quits_restore_waits_for_a_cancelled_experiments_put_back(tree: FixTree, monkeypatch) -> None:
    add_kernel_disk(tree, "sda", "8:0", LAYOUTS["6.18"], "mq-deadline")
    tree.set_diskstats(["   8       0 sda " + " ".join(["0"] * 17)])
    said: list[str] = []
    monkeypatch.setattr(app_module, "restore", lambda *a, **k: said.append("restore") or [])
    app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await select(app, pilot, "sda")
        run = PuttingBack(said)
        app.live.compare = run  # type: ignore[assignment]
        app.live.settings.changed.add(("sda", "queue/scheduler"))
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await wait_for_exit(app)
    run.thread.join(5)
    assert said == ["put back", "restore"]


def test_the_wait_for_a_put_back_covers_the_switchs_deadline() -> None:
    joined: list[float | None] = []

    class Thread:
        def join(self, timeout: float | None = None) -> None:
            joined.append(timeout)

    run = WorkerRun()
    run.thread = Thread()  # type: ignore[assignment]
    run.wait()
    assert joined and joined[0] is not None and joined[0] > write_deadline("queue/scheduler")
