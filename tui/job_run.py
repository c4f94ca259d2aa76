"""A background fio job for the TUI: one at a time, on the selected device, stoppable, never orphaned.

The worker thread spawns fio and waits for it (`setpriv --pdeathsig` follows that thread); the UI thread
only reads ``JobState`` and may call ``stop()`` or, on the way out, ``kill(wait=False)``: neither waits.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from iosched.core.load.fio import FioHandle, FioProgress
from iosched.core.load.fio_group import run_fio
from iosched.core.load.fio_result import FioResult
from iosched.core.load.jobs import CATALOG, Job
from iosched.core.load.targets import Target, choose_target
from iosched.core.settings.device_lock import load_lock

TUI_RUNTIME_S = 60.0  # long enough to switch schedulers a few times while watching
TUI_MAX_SIZE = 1 << 30  # a scratch file or device span; the catalog's 32 GiB patterns are cut to this

# Shown first in the picker: the jobs that make scheduler differences visible quickly.
SUGGESTED = ("randread-q16t2", "rnd4k-q32t1-read", "rnd4k-q1t1-read", "seq1m-q8t1-read", "4k-randwrite",
             "4k-rw")
# First in the demo's picker: what schedulers are for (a reader's latency under a write flood), shown live.
DEMO_FIRST = "interactive-under-writes"


def picker_jobs(demo: bool = False) -> list[tuple[str, str, bool, str]]:
    """The picker's jobs as (name, description, writes, what it shows), the suggestions first; in the demo the
    contention job an audience should see leads them."""
    names = (DEMO_FIRST, *SUGGESTED) if demo else SUGGESTED
    first = [CATALOG[n] for n in names]
    rest = [j for j in CATALOG.values() if j.name not in names]
    return [(j.name, j.description, j.writes, j.shows) for j in first + rest]


def tui_job(name: str) -> Job:
    job = CATALOG[name]
    return job.scaled(runtime=TUI_RUNTIME_S, size=min(job.size, TUI_MAX_SIZE))


@dataclass
class JobState:
    device: str
    job: Job
    started: float = field(default_factory=time.monotonic)
    target: Target | None = None
    fio: FioHandle | None = None
    progress: FioProgress | None = None
    stopping: bool = False
    finished: threading.Event = field(default_factory=threading.Event)  # fio reaped, scratch file removed

    def stop(self) -> None:
        self.stopping = True
        if self.fio is not None:
            self.fio.stop()

    def kill(self, root: str | Path, wait: bool) -> None:
        """Quit path: fio is told to die now. ``wait`` (never on the UI thread): until it is gone and its
        scratch file with it. Both steps are idempotent and safe beside the worker doing the same."""
        self.stopping = True
        if self.fio is not None:
            self.fio.kill(wait=wait)
        if wait and self.target is not None:
            self.target.release(root)


def run_job(state: JobState, destroy: bool, root: str | Path,
            on_progress: Callable[[FioProgress], object]) -> FioResult:
    """Worker side: hold the device's load lock (DeviceBusy when another iosched loads it), pick the target
    (Refused when it needs the typed name), run fio, clean up."""
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(load_lock(state.device, f"job {state.job.name}", root))
            state.target = choose_target(state.device, state.job.writes, size=state.job.space,
                                         destroy_data=state.device if destroy else None, root=root)
        except BaseException:
            state.finished.set()
            raise

        def hold(run: FioHandle) -> None:
            state.fio = run
            if state.stopping:
                run.stop()

        try:
            return run_fio(state.job, state.target, None, on_progress, hold, root)
        finally:
            state.target.release(root)
            state.finished.set()

