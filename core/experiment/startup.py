"""A start-up's runs (`compare --startup`): its time alone measured once, then each run its replay beside the
background (or alone), timed against the cap (core/load/startup_replay.py says what is replayed and why).

Each run: the background started, its first IO and a settle awaited (as a command's, core/experiment/commands.py
``beside``), then the start-up's replay, its fio ended by its own ``runtime`` at the cap; then the background
ended. The run's figures: ``startup_s``, the start-up's own as ``fg:METRIC``, the background's as ``bg:METRIC``.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path

from iosched.core.base.errors import IoschedError
from iosched.core.documents.document import RunDoc
from iosched.core.experiment.commands import background_metrics, beside
from iosched.core.experiment.control import Cancelled, Control
from iosched.core.load.fio import FioHandle, FioProgress
from iosched.core.load.fio_group import run_fio
from iosched.core.load.fio_result import FIGURES, FioResult
from iosched.core.load.jobs import Job, JobFile
from iosched.core.load.startup_replay import StartupJob
from iosched.core.load.startup_timing import ALONE_LIMIT_S, FOREGROUND, METRIC, StartupTiming, timing_of
from iosched.core.load.targets import Target
from iosched.core.settings.writes import drop_caches

ALONE_RUNS = 3  # replays of the start-up alone, at the start: their median is its time alone


def _replay(job: StartupJob, target: Target, cap_s: float, ctl: Control, root: str | Path) -> FioResult:
    """The start-up's replay, to its end or ``cap_s``; a cancel stops it."""
    assert job.foreground is not None

    def hold(h: FioHandle) -> None:
        ctl.foreground = h
        if ctl.cancelled.is_set():
            h.stop()

    try:
        return run_fio(job.foreground, target, cap_s, None, hold, root)
    except IoschedError:
        if ctl.cancelled.is_set():
            raise Cancelled("cancelled") from None
        raise
    finally:
        ctl.foreground = None


def measure_alone(job: StartupJob, target: Target, ctl: Control, root: str | Path) -> float:
    """The start-up's time alone on the idle device (its runs' cap is a multiple of it): the median of ALONE_RUNS
    replays, caches dropped before each (one replay alone is at the mercy of a busy machine); the configuration in
    place is the caller's. IoschedError when one does not finish within ALONE_LIMIT_S."""
    took = []
    for _ in range(ALONE_RUNS):
        drop_caches(root)
        result = _replay(job, target, ALONE_LIMIT_S, ctl, root)
        timing, _why = timing_of(result, 0.0, ALONE_LIMIT_S, job.requests)
        if timing.requests < timing.of:
            raise IoschedError(f"the start-up {job.stem} completed {timing.requests} of its {timing.of} requests on "
                               f"{target.device} alone in {ALONE_LIMIT_S:.0f} s: it cannot be timed under load there")
        took.append(timing.startup_s)
    return statistics.median(took)


def with_alone(jobs: Sequence[Job | JobFile],
               measure: Callable[[StartupJob], float]) -> tuple[list[Job | JobFile], list[str]]:
    """``jobs`` with each start-up's time alone, measured once per capture; and what was measured, in words."""
    alone: dict[str, float] = {}
    notes = []
    out: list[Job | JobFile] = []
    for job in jobs:
        if isinstance(job, StartupJob):
            if job.path not in alone:
                alone[job.path] = measure(job)
                done = dataclasses.replace(job, alone_s=alone[job.path])
                notes.append(f"the start-up {job.stem} alone took {alone[job.path]:.3f} s (the median of {ALONE_RUNS} "
                             f"at the start, caches dropped); a run still going at {done.cap_s:.2f} s "
                             f"({job.cap_multiple:g} x that, at least 2 s) is ended there and counted at the cap")
            job = dataclasses.replace(job, alone_s=alone[job.path])
        out.append(job)
    return out, notes


def run_startup(job: StartupJob, target: Target, ctl: Control, on_progress: Callable[[FioProgress], object],
                root: str | Path = "/") -> tuple[dict[str, float | None], FioResult, str | None, StartupTiming]:
    """One run of the start-up (beside its background, or alone): its figures, fio's results as one (the start-up's
    entries, then the background's), why the run is invalid or None, and its timing."""
    assert job.alone_s is not None and job.cap_s is not None
    cap = job.cap_s
    if job.background is None:
        fg, bg, ended_early = _replay(job, target, cap, ctl, root), None, False
    else:
        fg, bg, ended_early = beside(job.background, target, ctl, on_progress, root,
                                     lambda: _replay(job, target, cap, ctl, root), "the start-up")
    timing, why = timing_of(fg, job.alone_s, cap, job.requests)
    own = fg.metrics()
    figures: dict[str, float | None] = {METRIC: timing.startup_s, **{f"{FOREGROUND}:{k}": own[k] for k in FIGURES}}
    raw = fg.raw
    if bg is not None:
        figures.update(background_metrics(bg))
        raw = {**fg.raw, "jobs": [*(fg.raw.get("jobs") or []), *(bg.raw.get("jobs") or [])]}
        if ended_early and why is None:
            why = "the background job ended before the start-up did"
    return figures, dataclasses.replace(fg, raw=raw), why, timing


def over_cap_note(runs: Sequence[tuple[str, RunDoc]]) -> str | None:
    """The runs over the cap, counted per cell ("none beside seq-writers-5: 3 of 3"), in one sentence; None when
    there is none. ``runs``: each run with the name of its cell."""
    counted: dict[str, list[int]] = {}
    cap = None
    for cell, run in runs:
        if run.startup is None or not run.valid:
            continue
        seen = counted.setdefault(cell, [0, 0])
        seen[1] += 1
        if run.startup.over_cap:
            seen[0] += 1
            cap = run.startup.cap_s
    over = [f"{cell} {n} of {of}" for cell, (n, of) in counted.items() if n]
    if not over:
        return None
    return (f"over the cap ({cap:.2f} s): {', '.join(over)}; each counted at the cap, a lower bound of its start-up, "
            "so a difference against it is understated, never invented")
