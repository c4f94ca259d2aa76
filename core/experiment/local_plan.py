"""What every experiment on this machine's device shares as a plan of the service (service.py): the checks before
anything changes, what it holds while it runs (the captures checked and copied, the device's load lock), where its
fio jobs write, the busy machine said, and its runs through the one slot loop (slots.py) with an executor: this
machine's (runner.py ``LocalRuns``, or a live alternation's ``Turns``) or one a test or a bench gives
(simulated.py). A kind of experiment says the rest: its workloads, its course, its document and its judgement
(compare.py, alternation.py, matrix.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import KW_ONLY, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Generic, Protocol, Self, TypeVar

from iosched.core.documents.document import AlternationDoc, CompareDoc, MatrixDoc, RunDoc
from iosched.core.documents.metrics import check_roles
from iosched.core.documents.params import Variant
from iosched.core.experiment.busy import BusyWatch
from iosched.core.experiment.conditions import check_fill, check_steady, prepare_conditions, runs_range
from iosched.core.experiment.control import Control
from iosched.core.experiment.events import Event, Note, RunEnded, RunStarted
from iosched.core.experiment.runner import LocalRuns, MachineRuns, OnThisMachine, Workload
from iosched.core.experiment.slots import Course, run_slots
from iosched.core.experiment.study import CmdJob
from iosched.core.load.fio_group import check_cgroup_jobs
from iosched.core.load.jobs import Job, JobFile
from iosched.core.load.replay import ReplayJob
from iosched.core.load.startup_replay import StartupJob
from iosched.core.load.steady import SteadyWait
from iosched.core.load.targets import Target, choose_target
from iosched.core.settings.device_lock import load_lock
from iosched.core.settings.journal import Journal, default_run_dir

if TYPE_CHECKING:
    from iosched.core.experiment.service import Running, Saver

D = TypeVar("D", CompareDoc, AlternationDoc, MatrixDoc)


@dataclass(frozen=True)
class TargetRequest:
    """Where a fio workload may write: a scratch file on the device's filesystem, a directory, or the raw device."""

    dir: str | None = None
    raw: bool = False
    destroy_data: str | None = None  # the device's name, typed by the user: a raw write over its data is allowed
    size: int | None = None  # bytes a job lays out; None: the jobs' own, capped at ``default_size``
    default_size: int = 1 << 30


def choose_for(device: str, jobs: list[Job | JobFile], request: TargetRequest, root: str | Path = "/",
               fill: bool = False) -> Target | None:
    """Where ``jobs`` write on ``device`` (None: no fio job, and no fill); Refused (maybe confirmable by typing the
    device's name) or BadInput. ``fill``: --fill writes the raw device first, whatever the jobs do. The one way every
    experiment chooses its target (an advice's tests too)."""
    if not jobs and not fill:
        return None
    size = runs_range(jobs, request.size, request.default_size)
    replay = any(isinstance(j, (ReplayJob, StartupJob)) for j in jobs)  # captured offsets: on the raw device only
    return choose_target(device, fill or any(j.writes for j in jobs), request.dir, size, raw=request.raw or fill,
                         destroy_data=request.destroy_data, root=root, scratch_ok=not replay and not fill)


class Runs(Protocol):
    """What makes the executor of a plan's runs on this machine: runner.py ``LocalRuns`` (the real one), or a
    simulation's (simulated.py)."""

    def __call__(self, setup: OnThisMachine, ctl: Control) -> MachineRuns: ...


@dataclass
class LocalPlan(Generic[D]):
    """An experiment on this machine's ``device``: the service's plan (check, hold, go, judged, finished), the kind's
    part in ``workloads``, ``course`` and ``document``."""

    device: str
    variants: list[Variant]
    _: KW_ONLY
    alpha: float = 0.05
    metric: str | None = None  # the primary metric (None: the workload's own, else IOPS)
    trace: bool = False  # block-layer tracing over every run
    fill: float | None = None  # --fill: the raw device trimmed and written to this percent before the first run
    steady: SteadyWait | None = None  # --steady: each run waits for steady state first (a matrix's: its plan's)
    drop_caches: bool = False
    settle: float = 1.0
    target: TargetRequest = field(default_factory=TargetRequest)
    root: str | Path = "/"
    on_target: Callable[[Target], None] | None = None  # hears where fio will write (its note) before the first run
    runs: Runs | None = None  # the executor of each run (None: this machine's, runner.py ``LocalRuns``)

    kind: ClassVar[str]  # what the device's load lock and a saved file's name say it is

    @property
    def jobs(self) -> list[Job | JobFile]:
        """The fio jobs the plan runs: what its target is chosen and sized for."""
        raise NotImplementedError

    @property
    def waits(self) -> SteadyWait | None:
        """The wait for steady state before each run (a matrix's: its plan's, saved with it)."""
        return self.steady

    @property
    def waiting(self) -> Sequence[object]:
        """What waits for steady state before each run: every workload's job (a study's commands too)."""
        return self.jobs

    @property
    def going_on(self) -> bool:
        """A saved experiment going on (a resumed matrix): its conditions are its file's, made when it began."""
        return False

    def check(self) -> None:
        self.check_roles()
        backgrounds: list[Job | JobFile] = [j.background for j in self.jobs
                                            if isinstance(j, StartupJob) and j.background is not None]
        check_cgroup_jobs([*self.jobs, *backgrounds], self.root)  # cgroups this system cannot make: refused
        self.check_conditions()
        Journal(default_run_dir(self.root)).entries()  # every run switches: an unreadable journal refuses before a word

    def check_roles(self) -> None:
        """A metric of a role the workloads do not have is refused."""
        check_roles(self.metric, [(j.name, j.role_names) for j in self.jobs])

    def check_conditions(self) -> None:
        """--steady and --fill refused in one sentence where they cannot apply (conditions.py); a kind says what it
        refuses of its own first."""
        if self.waits is not None and not self.going_on:
            check_steady(self.waits, self.waiting)
        if self.fill is not None:
            check_fill(self.device, self.target.dir, self.root)

    def hold(self, saver: Saver[D] | None) -> AbstractContextManager[Self]:
        return self._hold(saver)

    @contextlib.contextmanager
    def _hold(self, saver: Saver[D] | None) -> Iterator[Self]:
        with contextlib.ExitStack() as stack:
            plan = self.prepared(stack)  # captures checked whole and copied for fio: before anything is locked
            stack.enter_context(load_lock(plan.device, plan.kind, plan.root))  # one load per device, across processes
            yield plan.locked(saver, stack)

    def prepared(self, stack: contextlib.ExitStack) -> Self:
        """The plan with what its jobs read made ready (removed when ``stack`` closes)."""
        return self

    def locked(self, saver: Saver[D] | None, stack: contextlib.ExitStack) -> Self:
        """The plan once the device is held (a saved matrix: its file locked and read again)."""
        return self

    def workloads(self, target: Target | None) -> list[Workload]:
        raise NotImplementedError

    def course(self, executor: MachineRuns, doc: D) -> Course[D, RunDoc]:
        raise NotImplementedError

    def document(self, executor: MachineRuns, target: Target | None) -> D:
        raise NotImplementedError

    def executor(self, setup: OnThisMachine, ctl: Control, emit: Callable[[Event], None]) -> MachineRuns:
        """This kind's executor on this machine (a live alternation's differs)."""
        return LocalRuns(setup, ctl)

    def setup(self, target: Target | None) -> OnThisMachine:
        return OnThisMachine(self.device, self.variants, self.workloads(target), self.drop_caches, self.settle,
                             self.root, self.trace)

    def go(self, run: Running[D]) -> D:
        fill = self.fill is not None and not self.going_on
        target = choose_for(self.device, self.jobs, self.target, self.root, fill=fill)
        try:
            if target is not None and self.on_target is not None:
                self.on_target(target)
            # The fill, before any run (a resumed matrix's file keeps the conditions it began under).
            conditions = None if self.going_on else prepare_conditions(
                self.device, self.fill, self.waits, target, run.emit, run.ctl, self.root,
                range_bytes=runs_range(self.jobs, self.target.size, self.target.default_size))
            busy = BusyWatch(self.device, self.root, lambda text: run.emit(Note(text)))
            busy.before()
            emit = watched(busy, run.emit)
            setup = self.setup(target)
        except BaseException:  # Ctrl-C in the fill or the busy watch's first look: no executor owns the target yet
            if target is not None:
                target.release(self.root)
            raise
        executor = (self.runs or (lambda s, c: self.executor(s, c, emit)))(setup, run.ctl)  # owns the targets now
        doc = self.document(executor, target)
        if conditions is not None:  # every document the runs keep carries them
            doc = replace(doc, conditions=conditions)
        try:
            return said_by(busy, run_slots(self.course(executor, doc), executor, doc, run.keep, emit, run.ctl))
        finally:
            if run.doc is not None:
                run.keep(said_by(busy, run.doc), False)

    def judged(self, doc: D) -> D:
        """``doc`` with its final judgement, of every run it holds."""
        raise NotImplementedError

    def finished(self, doc: D) -> int:
        return len(doc.runs)


def watched(busy: BusyWatch, emit: Callable[[Event], None]) -> Callable[[Event], None]:
    """``emit`` with the busy watch told of each run: what it saw before is said once the first run starts, and it
    looks again after each run."""

    def relay(e: Event) -> None:
        if isinstance(e, RunStarted):
            busy.started()
        emit(e)
        if isinstance(e, RunEnded):
            busy.after_run(e.run)

    return relay


def said_by(busy: BusyWatch, doc: D) -> D:
    """``doc`` with what the busy watch said among its notes (the result keeps what was said)."""
    busy.started()
    new: list[str] = [line for line in busy.lines if line not in doc.notes]
    return replace(doc, notes=[*doc.notes, *new]) if new else doc


def workload_of(job: Job | JobFile | CmdJob, target: Target | None, runtime: float | None,
                steady: SteadyWait | None = None) -> Workload:
    """One of a plan's workloads as it runs: a fio job on the target (a job file with the plan's runtime; ``steady``:
    each run waits for steady state first), or a study's command."""
    if isinstance(job, CmdJob):
        return Workload(cmd=job.cmd, cmd_metrics=list(job.cmd_metrics), target=target)
    return Workload(job=job, target=target, runtime=None if isinstance(job, Job) else runtime, steady=steady)
