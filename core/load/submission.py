"""Where a run's CPU per IO is spent: in the submitting task or in the kernel's workers.

- ``cpu_us_per_io_task``: fio's job threads, user + sys, as fio accounts them itself (getrusage per thread; its JSON
  gives each entry's ``usr_cpu`` and ``sys_cpu`` as percents of its ``job_runtime``, which group reporting sums over
  the entry's threads), per IO fio completed.
- ``cpu_us_per_io_workers``: every kernel block worker on this machine over the run's window
  (core/kernel/workers.py: kblockd's, whatever disk it served, and the device's own workqueue), per IO of the run.
  kblockd serves every disk and /proc cannot tell its work apart per device: on a machine where other disks are
  busy this counts their dispatch too.

Beside the sampler's ``cpu_us_per_io`` (every CPU's busy time per IO, core/experiment/runner.py ``window_metrics``):
with none, requests go from the task to the driver; with a scheduler they may wait in it and be dispatched by
kblockd, and that CPU is no task's (Ren et al., ICPE 2024). Read at the edges of a run, as the sampler is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iosched.core.kernel.workers import Workers, clock_ticks, read_workers, worker_seconds

TASK = "cpu_us_per_io_task"
WORKERS = "cpu_us_per_io_workers"


def task_cpu_seconds(raw: dict[str, Any] | None) -> float | None:
    """CPU seconds fio's job threads spent, from its JSON (None when it does not say, or says something no run
    could: a negative or non-finite figure)."""
    jobs = raw.get("jobs") if isinstance(raw, dict) else None
    if not isinstance(jobs, list) or not jobs:
        return None
    total = 0.0
    for j in jobs:
        if not isinstance(j, dict):
            return None
        usr, sys_, ran = j.get("usr_cpu"), j.get("sys_cpu"), j.get("job_runtime")
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and 0 <= x <= 1e12
                   for x in (usr, sys_, ran)):
            return None
        assert isinstance(usr, (int, float)) and isinstance(sys_, (int, float)) and isinstance(ran, (int, float))
        total += (usr + sys_) / 100.0 * ran / 1000.0
    return total


@dataclass(frozen=True)
class SubmissionClock:
    """The kernel workers' times at a run's start; ``figures`` at its end gives the run's split."""

    device: str
    before: Workers
    root: str | Path = "/"

    @classmethod
    def start(cls, device: str, root: str | Path = "/") -> SubmissionClock:
        return cls(device, read_workers(root), root)

    def figures(self, fio_raw: dict[str, Any] | None, ios: float | None) -> dict[str, float]:
        """µs per IO of the task (from fio's JSON; none without it) and of the workers, over ``ios`` IOs (none
        when the run did none)."""
        if not ios or ios < 1:
            return {}
        out = {WORKERS: worker_seconds(self.before, read_workers(self.root), self.device, clock_ticks()) * 1e6 / ios}
        task = task_cpu_seconds(fio_raw)
        if task is not None:
            out[TASK] = task * 1e6 / ios
        return out
