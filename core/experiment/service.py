"""The one experiment service: a plan in, events while it runs, an outcome out.

Every front end builds a plan and calls `run()`; it only renders the events (core/experiment/events.py) and the
`Outcome` it gets. A kind of experiment is a `Plan`: what differs between kinds (its checks, what it holds while it
runs, how it runs and goes on from a saved document, how its document is judged); the service does what every kind
shares, once: the checks before anything changes, the hold, saving (after every run a plan keeps, and at the end; a
failed save said once as an event while the experiment goes on), cancellation (the runs that finished judged and
saved) and the final judgement. Every plan's runs go through the one slot loop (slots.py). This machine's plans:
compare.py ``ComparePlan`` (repeated runs of a job, a replay, a start-up or a command), alternation.py
``AlternationPlan``, matrix.py ``MatrixRunPlan`` (a matrix or a study); a fleet and an advice, layers above, bring
plans of their own.

What happens before the first run is refused with an exception (bad input, a device under load elsewhere, a target
that needs the user to type the device's name): nothing ran, nothing changed. Once runs start, the answer is an
`Outcome`, finished or not: a cancelled or failed experiment keeps its finished runs, judged and saved, and says why
it ended; the device is back as it was in every case.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Literal, Protocol, TypeVar

from iosched.core.documents.document import AlternationDoc, CompareDoc, MatrixDoc
from iosched.core.experiment.control import Cancelled, Control
from iosched.core.experiment.events import Event, SaveFailed
from iosched.core.experiment.slots import why_ended

Status = Literal["final", "cancelled", "failed"]


D = TypeVar("D")
D_in = TypeVar("D_in", contravariant=True)


class Saver(Protocol[D_in]):
    """Where the result goes; a failed save is said (``error``) and never stops the experiment."""

    path: Path | None
    error: str

    def save(self, doc: D_in, empty: bool = False) -> bool:
        """Write ``doc``; ``empty``: no run of it finished yet. False when it could not be written."""
        ...


class Plan(Protocol[D]):
    """What a kind of experiment supplies to `run()`; its document type is ``D``. The service calls, in order:
    ``check()``, then ``hold(saver)`` around the rest, ``go()`` on the plan that yields, and ``judged()`` on
    the document it returns (or on the last one it kept, when it ends early)."""

    def check(self) -> None:
        """Refuse what cannot run (an exception: BadInput, Refused, …) before anything is locked or changed."""
        ...

    def hold(self, saver: Saver[D] | None) -> AbstractContextManager[Plan[D]]:
        """What it runs under (a device's load lock, a saved file's lock; a fleet: nothing here), as a context that
        yields the plan to run: itself, or as it goes on from its saved document read again under the lock."""
        ...

    def go(self, run: Running[D]) -> D:
        """Run, or go on from the saved document it holds: events to ``run.emit``, the document as it grows to
        ``run.keep`` (so what finished is judged and saved however it ends); the finished document."""
        ...

    def judged(self, doc: D) -> D:
        """``doc`` with its final judgement, of every run it holds."""
        ...

    def finished(self, doc: D) -> int:
        """How many runs ``doc`` holds (none: the experiment ended as if refused before it began)."""
        ...


class Running(Generic[D]):
    """What `run()` hands a plan's ``go()``: where events go, the control a cancel comes through, and ``keep()``."""

    def __init__(self, plan: Plan[D], saver: Saver[D] | None, emit: Callable[[Event], None], ctl: Control) -> None:
        self.plan, self.saver, self.emit, self.ctl = plan, saver, emit, ctl
        self.doc: D | None = None  # the document last kept
        self.warned = False

    def keep(self, doc: D, save: bool = True) -> None:
        """``doc`` is the experiment as it stands (judged and saved if it ends now); ``save``: saved now too (a
        matrix after every run). A failed save is said once, as a SaveFailed event; the experiment goes on."""
        self.doc = doc
        saved = not save or self.saver is None or self.saver.save(doc, empty=self.plan.finished(doc) == 0)
        if not saved and self.saver is not None and self.saver.error and not self.warned:
            self.warned = True
            self.emit(SaveFailed(self.saver.error))


@dataclass
class Outcome(Generic[D]):
    """How an experiment ended: its document (the runs that finished, judged) and why it ended."""

    doc: D
    status: Status  # final: every planned run (or the sequential boundary); cancelled: stopped; failed: an error
    finished_runs: int = 0
    reason: str = ""  # why it ended early, in a few words ("Ctrl-C", "cancelled", "FioFailed: …")
    error: BaseException | None = None  # the error that ended it (failed), or KeyboardInterrupt (Ctrl-C)
    saved: Path | None = None
    save_error: str = ""
    save_refused: bool = False  # the save was refused as bad input (WriteRefused): the command exits 2


def run(plan: Plan[D], saver: Saver[D] | None = None, on_event: Callable[[Event], None] | None = None,
        ctl: Control | None = None) -> Outcome[D]:
    """Run ``plan``; see the module's docstring. Anything raised before its first run finished is raised as it is
    (nothing ran, nothing changed); after that the answer is an Outcome."""
    emit = on_event or (lambda e: None)
    plan.check()
    with plan.hold(saver) as held:
        running = Running(held, saver, emit, ctl or Control())
        try:
            doc = held.go(running)
        except BaseException as e:  # cancel, Ctrl-C, a failed run: the device is back; what finished is kept
            kept = running.doc
            if kept is None or held.finished(kept) == 0:  # nothing finished: as if refused before the first run
                raise
            cancelled = isinstance(e, (Cancelled, KeyboardInterrupt, SystemExit)) or running.ctl.cancelled.is_set()
            outcome = Outcome(held.judged(kept), "cancelled" if cancelled else "failed", held.finished(kept),
                              why_ended(e), None if isinstance(e, Cancelled) else e)
        else:
            outcome = Outcome(held.judged(doc), "final", held.finished(doc))
        if saver is not None:
            saver.save(outcome.doc, empty=outcome.finished_runs == 0)
            outcome.saved, outcome.save_error = getattr(saver, "saved", saver.path), saver.error
            outcome.save_refused = bool(getattr(saver, "refused", False))
    return outcome


def all_invalid(doc: CompareDoc | AlternationDoc | MatrixDoc) -> bool:
    """Every run that finished is invalid (the command exits 1)."""
    return bool(doc.runs) and not any(r.valid for r in doc.runs)
