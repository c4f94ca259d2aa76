"""What an experiment says while it runs: one type per kind of event, each carrying what it is about (a finished
run as its document). The service hands them to the front end's ``on_event``; a front end matches on the type.

``label`` names what runs: a variant ("bfq"), a matrix's cell ("4k-read · bfq"); ``index`` is the run's place in
the order (from 0) and ``total`` the runs planned (0: not known, a live alternation's progress).
"""

from __future__ import annotations

from dataclasses import dataclass

from iosched.core.documents.document import RunDoc
from iosched.core.load.fio import FioProgress


@dataclass(frozen=True)
class RunStarted:
    """A run begins (its variant is in place)."""

    index: int
    total: int
    label: str
    eta: str = ""  # a matrix's time left, in words ("3 min 20 s"), when it can say


@dataclass(frozen=True)
class Progress:
    """fio's status during a run."""

    index: int
    total: int
    label: str
    progress: FioProgress


@dataclass(frozen=True)
class Interim:
    """A compare's interim estimate of one variant against the baseline on the primary metric (never a verdict)."""

    variant: str
    ratio: float
    low: float  # its interval (95%, or the boundary's repeated one)
    high: float


@dataclass(frozen=True)
class RunEnded:
    """A run finished: the run as its document holds it, and the interim estimates with it included."""

    index: int
    total: int
    label: str
    run: RunDoc
    lines: tuple[str, ...] = ()  # a compare's interim lines ("interim, 4 runs per variant: …")
    eta: str = ""  # a matrix's time left after it
    at: int = 0  # the complete runs per variant (or blocks) the interim lines are at: they change when it does
    interim: tuple[Interim, ...] = ()  # the same estimates as numbers, for a line of its own


@dataclass(frozen=True)
class Note:
    """Something to tell the user once (a busy machine, a matrix's look at its boundary); on a fleet, what a host
    said (``host`` its name, or "fleet" for the controller's own line about a run)."""

    text: str
    host: str | None = None


@dataclass(frozen=True)
class SaveFailed:
    """The result could not be saved (said once; the experiment goes on): "PATH: reason"."""

    text: str


@dataclass(frozen=True)
class Done:
    """Every planned run finished (or the boundary was crossed); the verdict follows in the outcome."""


Event = RunStarted | Progress | RunEnded | Note | SaveFailed | Done
