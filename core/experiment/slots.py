"""The one slot loop: every experiment's runs, on this machine or on a fleet, go through ``run_slots``.

A plan is an order of slots (a variant, on one of its workloads). Two parts say what differs between kinds:

- the **executor** decides how one slot's run happens: a run of fio, a command or a start-up on this machine
  (runner.py ``LocalRuns``), a turn of a live alternation (alternation.py ``Turns``), a slot on every host of a
  lockstep fleet (core/fleet/lockstep.py ``InLockstep``), every host's own compare (core/fleet/fleet.py ``OnItsOwn``),
  or a simulated run for tests and benches (simulated.py ``Simulated``). It puts the slot's variant in place, runs,
  measures, and at the end puts back what it changed.
- the **course** is the plan's side: which slots, in which order, how its document takes each run, what is said
  while it runs, and its stop rule (a sequential boundary, every cell of a matrix decided).

The loop does what every kind shares, once: the order and what a stop rule leaves out, cancellation, the settle,
the document as it grows (kept after every run, saved after every run where the kind saves), the typed events,
and the put-back at the end, whatever ends it (the last slot, a boundary, a cancel, Ctrl-C, a failed run): the
executor's ``end`` runs with signals held off, and a put-back that fails after every run finished still fails the
experiment, its runs kept.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Generic, Protocol, TypeVar

from iosched.core.base.errors import IoschedError
from iosched.core.documents.document import AlternationDoc, CompareDoc, MatrixDoc
from iosched.core.experiment.control import Cancelled, Control
from iosched.core.experiment.events import Done, Event, Note
from iosched.core.load.fio import FioProgress

D = TypeVar("D")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)

Keep = Callable[[D, bool], None]  # the service's Running.keep: the document as it stands, and whether to save it


@dataclass(frozen=True)
class Slot:
    """One place in a plan's order: a variant (its index in the plan's variants) on a workload (a compare has one)."""

    index: int  # its place in the whole order, from 0: a run's index, a matrix's slot
    variant: int
    workload: int = 0


@dataclass(frozen=True)
class Stop:
    """A stop rule said the loop ends after this slot; ``note``: what the document keeps of it (None: nothing)."""

    note: str | None = None


class Executor(Protocol[R_co]):
    """How a slot's run happens. The loop calls ``begin`` once, then per slot ``apply`` (the variant in place),
    waits ``settle`` seconds (a cancel ends the wait at once) and calls ``run``; last, whatever ended the slots,
    ``end``, with signals held off."""

    settle: float

    def begin(self, say: Callable[[str], None], note: Callable[[str], None]) -> None:
        """What the runs need before the first slot (a start-up's time alone, the alternation's fio, each host's
        session); ``say``: a note for the document and the front end, ``note``: for the document alone (either may
        be called later, from a run)."""
        ...

    def apply(self, slot: Slot) -> object | None:
        """The slot's variant in place (caches dropped, when asked): what ``run`` measures the run against; None:
        nothing is left to run on (a live alternation's fio ended, every host of a fleet failed)."""
        ...

    def run(self, slot: Slot, placed: object, progress: Callable[[FioProgress], None]) -> R_co | None:
        """The slot's run (``progress`` hears fio's status while it runs); None: the load itself ended (a live
        alternation's fio), so no slot is left to run."""
        ...

    def end(self) -> IoschedError | None:
        """Everything put back (fio killed, the device's configuration, scratch files, each host's session): the
        error of a put-back that failed, returned rather than raised over what ended the runs."""
        ...


class Course(Generic[D, R]):
    """What the loop runs and how the plan's document takes each run; a kind of experiment overrides what it needs
    (core/experiment/compare.py, matrix.py, alternation.py, core/fleet/fleet_plan.py)."""

    covers = "results cover the runs that finished"  # what a document ended early holds
    saves = False  # saved after every run, and at the end whatever ends it (a matrix and a fleet: resumable)
    saves_idle = True  # saved at the end even when no slot ran (a fleet's file stays as it was then)
    origin = 0.0  # the runs' clock's zero (monotonic seconds): set by the loop as it starts

    def __init__(self, slots: Sequence[Slot], total: int) -> None:
        self.slots = list(slots)  # the order still to run
        self.total = total  # runs planned in all (a matrix resumed: its saved ones too)

    def skips(self, doc: D, slot: Slot) -> bool:
        """A slot a stop rule leaves out (a matrix's decided cell)."""
        return False

    def started(self, doc: D, slot: Slot) -> Event | None:
        """What is said as the slot's run begins (its variant in place, the settle passed)."""
        return None

    def progress(self, doc: D, slot: Slot, p: FioProgress) -> Event | None:
        """What is said of fio's status during the slot's run."""
        return None

    def record(self, doc: D, slot: Slot, run: R, took: float) -> D:
        """``doc`` with the slot's ``run`` (``took``: seconds from putting its variant in place to its end)."""
        raise NotImplementedError

    def stop(self, doc: D, slot: Slot, run: R) -> Stop | None:
        """The stop rule, after each run: None goes on."""
        return None

    def ended(self, doc: D, slot: Slot, run: R) -> list[Event]:
        """What is said once the run is kept (and the stop rule has seen it)."""
        return []

    def note(self, doc: D, text: str) -> D:
        """``doc`` with a note that stays in it."""
        raise NotImplementedError

    def finished(self, doc: D) -> D:
        """Every slot run, or the stop rule said so: the document final."""
        return doc

    def cancelled(self, doc: D, why: str) -> D:
        """Ended early (``why``: "Ctrl-C", "cancelled", "FioFailed: …"): said in the document, whose runs are kept."""
        return doc

    def put_back_failed(self, doc: D, error: IoschedError) -> D:
        """The starting configuration could not be put back: said, unless it is already why the runs ended."""
        return doc

    def closed(self, doc: D, origin: float) -> D:
        """After the put-back, whatever ended the slots: what it did (the switches made, on the runs' clock whose
        zero is ``origin``) and when it ended."""
        return doc

    def after(self, doc: D) -> D:
        """Every slot ended without an error and everything is back: the last word on the document."""
        return doc


def run_slots(course: Course[D, R], executor: Executor[R], doc: D, keep: Keep[D] | None = None,
              emit: Callable[[Event], None] | None = None, ctl: Control | None = None) -> D:
    """Run ``course``'s slots with ``executor`` from ``doc`` (a new document, or a saved one going on); ``keep``
    hears the document each time it changes (saved when the flag says so), ``emit`` the events. Returns the
    finished document; anything that ends the slots early is raised once everything is back, the document kept
    with what finished, marked cancelled with why."""
    ctl = ctl or Control()
    said = emit or (lambda e: None)
    held = _Held(doc, keep)
    origin = course.origin = time.monotonic()
    early = False
    ran = 0  # runs recorded now

    def note(text: str) -> None:
        held.set(course.note(held.doc, text))

    def say(text: str) -> None:
        note(text)
        said(Note(text))

    try:
        executor.begin(say, note)
        for slot in course.slots:
            if ctl.cancelled.is_set():
                raise Cancelled("cancelled")
            if course.skips(held.doc, slot):
                continue
            t0 = time.monotonic()
            placed = executor.apply(slot)
            if placed is None:
                break
            if executor.settle and ctl.cancelled.wait(executor.settle):  # a cancel ends the settle at once
                raise Cancelled("cancelled")
            if (start := course.started(held.doc, slot)) is not None:
                said(start)
            run = executor.run(slot, placed, _progress(course, held, slot, said))
            if run is None:
                break
            held.set(course.record(held.doc, slot, run, time.monotonic() - t0), save=course.saves)
            ran += 1
            stop = course.stop(held.doc, slot, run)
            for e in course.ended(held.doc, slot, run):
                said(e)
            if stop is not None:
                if stop.note is not None:
                    held.set(course.note(held.doc, stop.note))
                break
        held.set(course.finished(held.doc))
    except BaseException as e:  # cancel, Ctrl-C, SIGTERM, a failed run: what finished is kept
        early = True
        held.set(course.cancelled(held.doc, why_ended(e)))
        raise
    finally:
        with shielded():
            undone = executor.end()
        if undone is not None:
            held.set(course.put_back_failed(held.doc, undone))
        saves = course.saves and (ran > 0 or course.saves_idle)
        held.set(course.closed(held.doc, origin), save=saves)
        if undone is not None and not early:  # every run finished, but the device is not back: a failure still
            held.set(course.cancelled(held.doc, why_ended(undone)), save=saves)
            raise undone
    held.set(course.after(held.doc))
    said(Done())
    return held.doc


def _progress(course: Course[D, R], held: _Held[D], slot: Slot,
              said: Callable[[Event], None]) -> Callable[[FioProgress], None]:
    """What the executor hears fio's status with, during ``slot``'s run: said as the course says it."""

    def progress(p: FioProgress) -> None:
        e = course.progress(held.doc, slot, p)
        if e is not None:
            said(e)

    return progress


class _Held(Generic[D]):
    """The document as it stands, handed to ``keep`` at each change (what finished is judged and saved however the
    experiment ends)."""

    def __init__(self, doc: D, keep: Keep[D] | None) -> None:
        self.keep = keep or (lambda d, save: None)
        self.doc = doc
        self.keep(doc, False)

    def set(self, doc: D, save: bool = False) -> None:
        self.doc = doc
        self.keep(doc, save)


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """Hold off SIGINT/SIGTERM/SIGHUP while putting things back, so a second Ctrl-C cannot cut it short."""
    sigs = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def why_ended(error: BaseException) -> str:
    """A run-ending exception in a few words: "Ctrl-C", "cancelled", "FioFailed: fio exited 1"."""
    if isinstance(error, KeyboardInterrupt):
        return "Ctrl-C"
    if isinstance(error, Cancelled):
        return str(error) or "cancelled"  # what a cancel stopped, where it says ("cancelled while run 4 waited …")
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


Doc = TypeVar("Doc", CompareDoc, AlternationDoc, MatrixDoc)


class DocumentCourse(Course[Doc, R]):
    """A course whose document is one machine's runs (a compare, a live alternation, a matrix): its notes, its
    status, the switches the executor made (``switches``: monotonic time and scheduler) on the runs' clock, shifted
    by ``offset`` (a resumed matrix's runs go on after its saved ones)."""

    def __init__(self, slots: Sequence[Slot], total: int, switches: Callable[[], Sequence[tuple[float, str]]],
                 offset: float = 0.0) -> None:
        super().__init__(slots, total)
        self.switches, self.offset = switches, offset

    def covered(self, doc: Doc) -> str:
        """What a document ended early holds, in words."""
        return self.covers

    def note(self, doc: Doc, text: str) -> Doc:
        return replace(doc, notes=[*doc.notes, text])

    def finished(self, doc: Doc) -> Doc:
        return replace(doc, status="final")

    def cancelled(self, doc: Doc, why: str) -> Doc:
        return replace(doc, notes=[*doc.notes, f"ended early ({why}): {self.covered(doc)}"], status="cancelled")

    def put_back_failed(self, doc: Doc, error: IoschedError) -> Doc:
        if any(str(error) in n for n in doc.notes):  # a vanished device: already the reason the runs ended
            return doc
        return self.note(doc, f"the starting configuration could not be put back: {error}")

    def closed(self, doc: Doc, origin: float) -> Doc:
        # A resumed document keeps the switches it had (none when it saved none: null reads as none).
        made: list[tuple[float, str]] = [(t - origin + self.offset, s) for t, s in self.switches()]
        return replace(doc, switches=[*(doc.switches or []), *made], finished=time.time())
