"""A start-up replayed as the foreground of an experiment (`compare DEV --startup FILE --background JOB|GROUP`): an
application's cold start, captured (`iosched capture --cmd CMD --cold`, or the bundled one), replayed onto the device
while a background job loads it, judged on how long the start-up takes under each scheduler (``startup_s``).

How it is replayed: the capture's requests in their captured order, one at a time, each issued when the one before
completed (fio's iolog replay, ``replay_no_stall``, at depth 1 with a synchronous engine), as an application that
waits for each read before it knows the next; direct IO, so every request reaches the device. Its offsets are folded
into the device (`--replay-fit`'s rule): a start-up captured on a system disk is never on the disk under test. Only
the checked copy reaches fio (core/load/replay.py).

What it measures: ``startup_s``, from its first request to its last one's completion: the sum of its requests'
latencies (fio's ``lat`` at depth 1, nanoseconds; fio's own millisecond runtime of the replay agrees), and the
foreground's figures as ``fg:METRIC``; the background's as ``bg:METRIC`` (core/experiment/commands.py).

The cap: a start-up that takes longer than ``cap_multiple`` times its time alone (at least ``CAP_FLOOR_S``) is ended
there, as the S suite (Algodev-github/S, comm_startup_lat.sh) ends a command past its idle time's inflation bound.
Its time alone is measured once, at the start of the experiment: the start-up replayed on the idle device under the
first variant, caches dropped. A run ended at the cap is kept, valid, its ``startup_s`` the cap and its timing marked
``over_cap``: a lower bound of its start-up, so a verdict against it understates the difference, never invents one;
the experiment's notes count such runs per variant.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iosched.core.base.errors import BadInput
from iosched.core.load.bundled import STARTUPS, startup_path
from iosched.core.load.iolog import iolog_path
from iosched.core.load.jobfile import JobFile
from iosched.core.load.jobs import Job
from iosched.core.load.replay import ReplayJob, prepare_replay
from iosched.core.load.startup_timing import CAP_MULTIPLE, FOREGROUND, cap_of, check_cap_multiple
from iosched.core.load.startup_timing import METRIC as STARTUP_METRIC

BUNDLED = "bundled"  # `--startup bundled` (or `--startup` alone): the capture iosched ships
# The foreground's fio options: one request at a time, each when the one before completed, reaching the device.
OPTIONS: tuple[tuple[str, str], ...] = (("ioengine", "psync"), ("direct", "1"), ("iodepth", "1"),
                                        ("replay_no_stall", "1"))


def capture_of(spec: str) -> str:
    """The iolog a ``--startup`` names: the bundled capture for ``bundled`` or its name (``python-imports``), else the
    file (or its metadata)."""
    if spec == BUNDLED:
        return str(startup_path())
    if spec in STARTUPS:  # a bundled capture by its own name
        return str(startup_path(spec))
    if not spec.strip():
        raise BadInput("--startup names no capture: give FILE (a capture), or bundled")
    return str(iolog_path(spec))


@dataclass(frozen=True)
class StartupJob(JobFile):
    """A start-up's replay as a workload, beside ``background`` (None: alone). Made unprepared by a front end (the
    capture as named); the experiment service prepares it (``foreground``: the capture checked whole and copied for
    fio) before anything is locked, and the runner measures its time alone (``alone_s``) before the first run."""

    given: str = BUNDLED  # the capture as the user named it: "bundled", or a path (what a saved matrix keeps)
    background: Job | JobFile | None = None
    cap_multiple: float = CAP_MULTIPLE
    foreground: ReplayJob | None = None
    alone_s: float | None = None

    @property
    def stem(self) -> str:
        return Path(self.path).name.removesuffix(".iolog")

    @property
    def name(self) -> str:
        return f"{self.stem} " + (f"beside {self.background.name}" if self.background is not None else "alone")

    @property
    def writes(self) -> bool:
        """Whether the workload writes: the start-up's own requests (once read) or its background's."""
        own = self.foreground is not None and self.foreground.writes
        return own or (self.background is not None and self.background.writes)

    @property
    def role_names(self) -> list[str]:
        return [FOREGROUND, "bg"] if self.background is not None else [FOREGROUND]

    @property
    def runtime(self) -> float | None:
        return None  # as long as the start-up takes, at most its cap

    def expected_s(self, runtime: float | None) -> float | None:
        return None

    def max_extent(self) -> int | None:
        return None  # folded into the raw device, whatever its size

    @property
    def primary(self) -> str:
        return STARTUP_METRIC

    @property
    def tradeoff(self) -> str | None:
        return "bg:mb_s" if self.background is not None else None

    @property
    def cap_s(self) -> float | None:
        return None if self.alone_s is None else cap_of(self.alone_s, self.cap_multiple)

    @property
    def requests(self) -> int:
        """What fio counts of the capture: its reads, writes and discards (a flush is no request of its own)."""
        assert self.foreground is not None and self.foreground.capture is not None
        m = self.foreground.capture.meta
        return m.reads + m.writes + m.discards

    def estimate_s(self) -> float:
        """Seconds a run may take before it was measured: the capture's own time, and a background's start."""
        took = self.foreground.capture.meta.duration_s if self.foreground and self.foreground.capture else 1.0
        return took + (2.0 if self.background is not None else 0.0)

    def render(self, runtime: float | None, filename: str | None = None) -> str:
        if self.foreground is not None:
            return self.foreground.render(runtime, filename)
        return super().render(runtime, filename)

    def to_json(self) -> dict[str, Any]:
        text = self.foreground.to_json()["text"] if self.foreground is not None else self.render(None)
        return {"name": self.name, "path": self.path, "writes": self.writes, "text": text}

    def release(self) -> None:
        """Remove the checked copy (idempotent)."""
        if self.foreground is not None:
            self.foreground.release()


def startup_job(spec: str, background: Job | JobFile | None = None,
                cap_multiple: float = CAP_MULTIPLE) -> StartupJob:
    """The start-up ``--startup SPEC`` names beside ``background``, unprepared (its capture is read by the service)."""
    return StartupJob(capture_of(spec), ((FOREGROUND, OPTIONS),), given=spec, background=background,
                      cap_multiple=check_cap_multiple(cap_multiple))


def prepare_foreground(path: str, device: str, size_bytes: int) -> ReplayJob:
    """The start-up at ``path`` checked whole and copied for fio, its offsets folded into ``device`` (BadInput:
    nothing left behind)."""
    return prepare_replay(path, "fast", device, size_bytes, fit=True, section=(FOREGROUND, OPTIONS))
