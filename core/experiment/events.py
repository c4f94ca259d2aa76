"""What an experiment says while it runs: one type per kind of event, each carrying what it is about (a finished
run as its document). The service hands them to the front end's ``on_event``; a front end matches on the type.

``label`` names what runs: a variant ("bfq"), a matrix's cell ("4k-read · bfq"); ``index`` is the run's place in
the order (from 0) and ``total`` the runs planned (0: not known, a live alternation's progress).
"""

from __future__ import annotations

from dataclasses import dataclass

from iosched.core.documents.document import RunDoc
from iosched.core.load.fio import FioProgress
from iosched.core.statistics.verdict import Standing


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
class RunEnded:
    """A run finished: the run as its document holds it, and the interim estimates with it included."""

    index: int
    total: int
    label: str
    run: RunDoc
    standing: Standing | None = None  # a compare's: where it stands with this run (core/present/sentences.py
    # ``interim_lines`` says it in words); its ``count`` changes with each complete round of runs
    eta: str = ""  # a matrix's time left after it


@dataclass(frozen=True)
class Note:
    """Something to tell the user once (a busy machine, a matrix's look at its boundary); on a fleet, what a host
    said (``host`` its name, or "fleet" for the controller's own line about a run)."""

    text: str
    host: str | None = None


@dataclass(frozen=True)
class LookReached:
    """A sequential matrix reached a look: its cells decided so far of all, those decided at this look, and the next
    look (None: the last one has passed); core/present/sentences.py ``look_words`` says it."""

    look: int
    decided: int
    cells: int
    now: tuple[str, ...]  # "workload · variant" of the cells decided at this look
    next_look: int | None


@dataclass(frozen=True)
class SaveFailed:
    """The result could not be saved (said once; the experiment goes on): "PATH: reason"."""

    text: str


@dataclass(frozen=True)
class Done:
    """Every planned run finished (or the boundary was crossed); the verdict follows in the outcome."""


Event = RunStarted | Progress | RunEnded | Note | LookReached | SaveFailed | Done
