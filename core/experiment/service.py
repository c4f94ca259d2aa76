"""The one experiment service: a plan in, events while it runs, an outcome out.

Every front end builds a plan and calls `run()`; it only renders the events (core/experiment/events.py) and the
`Outcome` it gets. A kind of experiment is a `Plan`: what differs between kinds (its checks, what it holds while it
runs, how it runs and goes on from a saved document, how its document is judged); the service does what every kind
shares, once: the checks before anything changes, the hold, saving (after every run a plan keeps, and at the end; a
failed save said once as an event while the experiment goes on), cancellation (the runs that finished judged and
saved) and the final judgement. `ExperimentPlan` is this machine's kinds: A/B/n runs, a replay, a command, live
alternation, a matrix or study (a fleet, a layer above, brings plans of its own).

What happens before the first run is refused with an exception (bad input, a device under load elsewhere, a target
that needs the user to type the device's name): nothing ran, nothing changed. Once runs start, the answer is an
`Outcome`, finished or not: a cancelled or failed experiment keeps its finished runs, judged and saved, and says why
it ended; the device is back as it was in every case.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Generic, Literal, Protocol, TypeVar

from iosched.core.base.encode import encode
from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.documents.document import AlternationDoc, CompareDoc, MatrixDoc, RunDoc, SequentialDoc
from iosched.core.documents.metrics import check_roles, split_metric
from iosched.core.documents.params import Variant
from iosched.core.experiment.alternation import ROLE_TURN_METRICS, run_alternation
from iosched.core.experiment.busy import BusyWatch
from iosched.core.experiment.cmd_metrics import CmdMetric
from iosched.core.experiment.commands import BACKGROUND
from iosched.core.experiment.conditions import check_conditions, conditioned, prepare_conditions, runs_range
from iosched.core.experiment.control import Cancelled, Control
from iosched.core.experiment.events import Event, Interim, Note, RunEnded, RunStarted, SaveFailed
from iosched.core.experiment.matrix import MatrixPlan, run_matrix
from iosched.core.experiment.results import new_result_path, result_lock, save_result
from iosched.core.experiment.runner import Workload, run_experiment, why_ended
from iosched.core.experiment.study import CmdJob
from iosched.core.kernel.devices import read_device
from iosched.core.load.cmd_tree import invoking_user
from iosched.core.load.fio_group import check_cgroup_jobs
from iosched.core.load.jobs import Job, JobFile
from iosched.core.load.replay import PRIMARY as REPLAY_PRIMARY
from iosched.core.load.replay import ReplayJob, ReplayRequest, prepare_replay
from iosched.core.load.replay_latency import untraced_words
from iosched.core.load.startup_replay import StartupJob, prepare_foreground
from iosched.core.load.steady import SteadyWait
from iosched.core.load.targets import Target, choose_target
from iosched.core.settings.device_lock import load_lock
from iosched.core.statistics.matrix_judge import judge_matrix
from iosched.core.statistics.matrix_sequential import matrix_sequential_plan
from iosched.core.statistics.verdict import RunningVerdict, judge, sequential_plan
from iosched.core.trace.tracer import TracingUnavailable, why_untraceable

Kind = Literal["compare", "alternate", "matrix"]
LocalDoc = CompareDoc | AlternationDoc | MatrixDoc  # what this machine's plans run to
Status = Literal["final", "cancelled", "failed"]


@dataclass(frozen=True)
class TargetRequest:
    """Where a fio workload may write: a scratch file on the device's filesystem, a directory, or the raw device."""

    dir: str | None = None
    raw: bool = False
    destroy_data: str | None = None  # the device's name, typed by the user: a raw write over its data is allowed
    size: int | None = None  # bytes a job lays out; None: the jobs' own, capped at ``default_size``
    default_size: int = 1 << 30


@dataclass
class ExperimentPlan:
    """Everything decided before the first run."""

    device: str
    kind: Kind
    variants: list[Variant]
    job: Job | JobFile | None = None  # compare and alternate
    cmd: str | None = None  # compare: a command timed under each variant, instead of a job
    background: Job | JobFile | None = None  # with cmd: a job loading the device while the command runs
    cmd_metrics: list[CmdMetric] = field(default_factory=list)  # with cmd: figures read from its output
    runtime: float | None = None  # seconds, for a job file (catalog jobs carry their own)
    replay: ReplayRequest | None = None  # compare: a capture replayed (made into ``job`` by run())
    matrix: MatrixPlan | None = None  # kind == "matrix"
    resume: MatrixDoc | None = None  # a saved, unfinished matrix to continue (its plan is ``matrix``)
    repeat: int = 3
    drop_caches: bool = False
    settle: float = 1.0
    every: float = 0.0  # alternate: seconds per turn
    duration: float = 0.0  # alternate: seconds in all
    alpha: float = 0.05
    metric: str | None = None  # the primary metric (None: IOPS, or wall time for a command)
    until_verdict: int | None = None  # stop at a sequential boundary: at most this many runs (or blocks)
    trace: bool = False  # block-layer tracing over every run
    fill: float | None = None  # --fill: the raw device trimmed and written to this percent before the first run
    steady: SteadyWait | None = None  # --steady: each run waits for steady state first (a matrix's: its plan's)
    target: TargetRequest = field(default_factory=TargetRequest)
    root: str | Path = "/"
    on_target: Callable[[Target], None] | None = None  # hears where fio will write (its note) before the first run
    reload: Callable[[], MatrixDoc] | None = None  # a resumed matrix's file, read again once its lock is held

    def check(self) -> None:
        _check(self)

    def hold(self, saver: Saver[LocalDoc] | None) -> AbstractContextManager[ExperimentPlan]:
        return _hold(self, saver)

    def go(self, run: Running[LocalDoc]) -> LocalDoc:
        return _go(self, run)

    def judged(self, doc: LocalDoc) -> LocalDoc:
        return _judged(self, doc)

    def finished(self, doc: LocalDoc) -> int:
        return len(doc.runs)

    @property
    def jobs(self) -> list[Job | JobFile]:
        """The fio jobs the plan runs (a study's commands are not among them)."""
        if self.matrix is not None:
            return self.matrix.fio_jobs
        if self.cmd is not None:
            return [self.background] if self.background is not None else []
        return [self.job] if self.job is not None else []

    @property
    def primary(self) -> str:
        """The metric the verdict is about: as named, else a command's first figure read from its output, else
        its wall time, else the job's own (a contention job names one), else IOPS."""
        if self.metric:
            return self.metric
        if self.cmd:
            return self.cmd_metrics[0].name if self.cmd_metrics else "wall_s"
        if self.replay is not None and self.job is None:
            return REPLAY_PRIMARY.get(self.replay.mode, "mb_s")
        return (self.job.primary if isinstance(self.job, (Job, ReplayJob, StartupJob)) else None) or "iops"

    @property
    def total_runs(self) -> int:
        if self.matrix is not None:
            return self.matrix.runs
        return self.repeat * len(self.variants)


D = TypeVar("D")
D_in = TypeVar("D_in", contravariant=True)


class Saver(Protocol[D_in]):
    """Where the result goes; a failed save is said (``error``) and never stops the experiment."""

    path: Path | None
    error: str

    def save(self, doc: D_in, empty: bool = False) -> bool:
        """Write ``doc``; ``empty``: no run of it finished yet. False when it could not be written."""
        ...


class ResultFile:
    """A result saved to one file (atomically), after each run of a matrix and at the end. ``path`` None: not
    saved. The TUI's own files wait for a finished run; a file the user named (``keep_empty``) holds a matrix's
    plan from the start, so a matrix stopped in its first run can still be resumed."""

    def __init__(self, path: Path | None, error: str = "", keep_empty: bool = False) -> None:
        self.path = path
        self.error = error
        self.keep_empty = keep_empty
        self.failed = False
        self.refused = False  # the save was refused as bad input (a link planted at the file): exit 2

    @classmethod
    def new_in(cls, directory: Path, device: str, kind: str) -> ResultFile:
        """A fresh name in the results directory (the TUI keeps every result there)."""
        try:
            return cls(new_result_path(device, kind, directory))
        except OSError as e:
            return cls(None, f"{directory}: {e.strerror or e}")

    def save(self, doc: object, empty: bool = False) -> bool:
        if self.path is None or self.failed:
            return False
        if empty and not self.keep_empty and not self.path.exists():  # no run finished: no file
            return True
        try:
            save_result(encode(doc), self.path)
        except (OSError, IoschedError) as e:
            self.error = f"{self.path}: {e.strerror or e}" if isinstance(e, OSError) else f"{self.path}: {e}"
            self.failed, self.refused = True, isinstance(e, BadInput)
            return False
        return True

    @property
    def saved(self) -> Path | None:
        """The file holding the result, once one was written and no save failed since."""
        return self.path if self.path is not None and not self.failed and self.path.exists() else None


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


def all_invalid(doc: LocalDoc) -> bool:
    """Every run that finished is invalid (the command exits 1)."""
    return bool(doc.runs) and not any(r.valid for r in doc.runs)


def interim_verdict(plan: ExperimentPlan) -> tuple[RunningVerdict | None, Callable[[RunDoc], bool] | None,
                                                    SequentialDoc | None]:
    """The running verdict of a compare or alternation, its stopping rule, and the sequential plan (if any)."""
    if plan.kind == "matrix":
        return None, None, None
    seq = None
    if plan.until_verdict is not None:
        seq = sequential_plan(plan.until_verdict, plan.alpha, len(plan.variants), plan.kind == "alternate")
    running = RunningVerdict([v.label for v in plan.variants], plan.alpha, plan.primary, plan.kind, seq)
    return running, (running.should_stop if seq else running.add_and_continue), seq


def make_boundary(plan: ExperimentPlan) -> None:
    """A matrix asked to stop at a verdict (``until_verdict``) gets its sequential boundary, unless it has one (a
    resumed or command-line matrix). Its simulation takes about a second: made here, in the caller's worker,
    not in a front end's event loop."""
    if plan.matrix is not None and plan.until_verdict is not None and plan.matrix.sequential is None:
        plan.matrix.sequential = matrix_sequential_plan(plan.matrix.repeat, plan.alpha, plan.matrix.comparisons)


def choose(plan: ExperimentPlan) -> Target | None:
    """Where the plan's fio jobs write; Refused (maybe confirmable by typing the device's name) or BadInput."""
    jobs = plan.jobs
    if not jobs:
        return None
    t = plan.target
    size = runs_range(plan)
    replay = any(isinstance(j, (ReplayJob, StartupJob)) for j in jobs)  # captured offsets: on the raw device only
    fill = plan.fill is not None and plan.resume is None  # --fill writes the raw device, whatever the jobs do
    return choose_target(plan.device, fill or any(j.writes for j in jobs), t.dir, size, raw=t.raw or fill,
                         destroy_data=t.destroy_data, root=plan.root, scratch_ok=not replay and not fill)


def _check(plan: ExperimentPlan) -> None:
    if plan.replay is not None and plan.job is None and plan.kind != "compare":
        raise BadInput("a replay is compared in repeated runs, not in a matrix or live alternation")
    if plan.replay is not None and plan.replay.mode == "timed" and (why := why_untraceable(plan.root)) is not None:
        raise TracingUnavailable(f"{untraced_words(why)}: --replay-mode fast judges its throughput without it")
    _check_roles(plan)
    backgrounds = [j.background for j in plan.jobs if isinstance(j, StartupJob) and j.background is not None]
    check_cgroup_jobs([*plan.jobs, *backgrounds], plan.root)  # cgroups this system cannot make: refused, nothing ran
    check_conditions(plan)
    if plan.cmd is not None or (plan.matrix is not None and any(isinstance(j, CmdJob) for j in plan.matrix.jobs)):
        invoking_user(os.environ, os.geteuid())  # who its commands run as: a SUDO_UID naming no user refused now
    make_boundary(plan)


def _check_roles(plan: ExperimentPlan) -> None:
    if plan.cmd:
        check_roles(plan.metric, [("the command", [BACKGROUND] if plan.background is not None else [])])
    else:
        check_roles(plan.metric, [(j.name, j.role_names) for j in plan.jobs])
    role, base = split_metric(plan.metric or "")
    if plan.kind == "alternate" and role is not None and base not in ROLE_TURN_METRICS:
        raise BadInput(f"--metric {plan.metric}: live alternation measures each role's "
                       f"{' and '.join(ROLE_TURN_METRICS)} per turn (fio's status reports); "
                       f"use {role}:clat_mean_us, or repeated runs for percentiles")


@contextlib.contextmanager
def _hold(plan: ExperimentPlan, saver: Saver[LocalDoc] | None) -> Iterator[ExperimentPlan]:
    replay = _replay_job(plan)  # the capture checked whole and copied for fio, before anything is locked
    with contextlib.ExitStack() as stack:
        if replay is not None:
            stack.callback(replay.release)
            plan = replace(plan, job=replay, target=replace(plan.target, raw=True, dir=None))
            _check_roles(plan)  # a replay has no roles: a metric of one is refused as for any job
        plan = _with_startups(plan, stack)
        stack.enter_context(load_lock(plan.device, plan.kind, plan.root))  # one load per device, across processes
        if plan.kind == "matrix" and saver is not None and saver.path is not None:
            stack.enter_context(result_lock(saver.path, plan.root))  # one iosched at a time goes on with the file
        if plan.reload is not None:
            again = plan.reload()
            if again.status == "final":
                raise BadInput(f"{saver.path if saver else 'the matrix'} was finished meanwhile: nothing to resume")
            plan = replace(plan, resume=again)
        yield plan


def _replay_job(plan: ExperimentPlan) -> ReplayJob | None:
    """The plan's replay, its capture checked whole and copied for fio: before anything is locked or changed."""
    if plan.replay is None or plan.job is not None:
        return None
    dev = read_device(plan.device, plan.root)
    if dev is None:
        raise BadInput(f"{plan.device} is not a whole-disk block device")
    return prepare_replay(plan.replay.path, plan.replay.mode, plan.device, dev.size_bytes, plan.replay.fit)


def _with_startups(plan: ExperimentPlan, stack: contextlib.ExitStack) -> ExperimentPlan:
    """The plan with each start-up's capture checked whole and copied for fio (once per capture, removed when the
    experiment ends), aimed at the raw device: before anything is locked or changed."""
    jobs = plan.matrix.jobs if plan.matrix is not None else [plan.job] if plan.job is not None else []
    names = {j.path for j in jobs if isinstance(j, StartupJob) and j.foreground is None}
    if not names:
        return plan
    dev = read_device(plan.device, plan.root)
    if dev is None:
        raise BadInput(f"{plan.device} is not a whole-disk block device")
    ready = {}
    for path in sorted(names):
        ready[path] = prepare_foreground(path, plan.device, dev.size_bytes)
        stack.callback(ready[path].release)

    def prepared(job: Job | JobFile | CmdJob) -> Job | JobFile | CmdJob:
        if isinstance(job, StartupJob) and job.foreground is None:
            return replace(job, foreground=ready[job.path])
        return job

    target = replace(plan.target, raw=True, dir=None)
    if plan.matrix is not None:
        return replace(plan, matrix=replace(plan.matrix, jobs=[prepared(j) for j in plan.matrix.jobs]), target=target)
    job = prepared(plan.job) if plan.job is not None else None
    assert not isinstance(job, CmdJob)
    return replace(plan, job=job, target=target)


def _go(plan: ExperimentPlan, run: Running[LocalDoc]) -> LocalDoc:
    target = choose(plan)
    if target is not None and plan.on_target is not None:
        plan.on_target(target)
    keep = conditioned(run.keep, prepare_conditions(plan, target, run.emit, run.ctl))  # the fill, before any run
    running, stop, seq = interim_verdict(plan)
    busy = BusyWatch(plan.device, plan.root, lambda text: run.emit(Note(text)))
    busy.before()

    def relay(e: Event) -> None:
        if isinstance(e, RunEnded) and running is not None:  # stop() has seen the run: the estimates include it
            e = replace(e, lines=tuple(running.lines()), at=running.count,
                        interim=tuple(Interim(*x) for x in running.interim()))
        if isinstance(e, RunStarted):
            busy.started()  # what was seen before: said once the first run starts
        run.emit(e)
        if isinstance(e, RunEnded):
            busy.after_run(e.run)

    try:
        return _said(busy, keep.doc(_dispatch(plan, target, relay, run, stop, seq, keep)))
    finally:
        if run.doc is not None:
            run.keep(_said(busy, run.doc), False)


def _said(busy: BusyWatch, doc: LocalDoc) -> LocalDoc:
    """``doc`` with what the busy watch said among its notes (the result keeps what was said)."""
    busy.started()
    new = [line for line in busy.lines if line not in doc.notes]
    return replace(doc, notes=[*doc.notes, *new]) if new else doc


def _dispatch(plan: ExperimentPlan, target: Target | None, emit: Callable[[Event], None], run: Running[LocalDoc],
              stop: Callable[[RunDoc], bool] | None, seq: SequentialDoc | None,
              keep: Callable[[LocalDoc, bool], None]) -> LocalDoc:
    if plan.kind == "matrix":
        assert plan.matrix is not None
        return run_matrix(plan.device, plan.matrix, target, plan.resume, plan.root, emit, keep, run.ctl)
    if plan.cmd is not None:
        workload = Workload(cmd=plan.cmd, background=plan.background, target=target, cmd_metrics=plan.cmd_metrics)
    else:
        if plan.job is None:
            raise BadInput("an experiment needs a job or a command")
        workload = Workload(job=plan.job, target=target, runtime=None if isinstance(plan.job, Job) else plan.runtime,
                            steady=plan.steady)
    if plan.kind == "alternate":
        return run_alternation(plan.device, plan.variants, workload, plan.every, plan.duration, root=plan.root,
                               on_event=emit, ctl=run.ctl, stop=stop, sequential=seq, keep=keep)
    repeat = plan.until_verdict if plan.until_verdict is not None else plan.repeat
    return run_experiment(plan.device, plan.variants, workload, repeat, plan.drop_caches, plan.settle, plan.root,
                          emit, run.ctl, stop=stop, sequential=seq, trace=plan.trace, keep=keep)


def _judged(plan: ExperimentPlan, doc: LocalDoc) -> LocalDoc:
    """The final judgement into the document: of every finished run, whether the experiment finished or not."""
    if not doc.runs:
        return doc
    if isinstance(doc, MatrixDoc):
        return replace(doc, judgement=judge_matrix(doc, plan.alpha, plan.metric))
    doc = replace(doc, primary_metric=plan.primary)
    return replace(doc, judgement=judge(doc, plan.alpha, plan.primary))
