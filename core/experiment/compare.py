"""A compare: repeated runs of one workload (a fio job, a replayed capture, a start-up beside its background, or a
command, maybe under a background job) under each variant, interleaved A B, B A … so drift favours no variant; a
plan of the experiment service run through the one slot loop (slots.py), a matrix of one workload in its order
and its runs (matrix.py is the same with several). ``--until-verdict`` stops it at the sequential boundary.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar, Self, TypeVar

from iosched.core.base.errors import BadInput
from iosched.core.documents.document import AlternationDoc, CompareDoc, RunDoc, SequentialDoc
from iosched.core.documents.metrics import check_roles
from iosched.core.experiment.cmd_metrics import CmdMetric
from iosched.core.experiment.commands import BACKGROUND
from iosched.core.experiment.events import Event, Progress, RunEnded, RunStarted
from iosched.core.experiment.local_plan import LocalPlan
from iosched.core.experiment.runner import MachineRuns, Workload, sysinfo
from iosched.core.experiment.slots import Course, DocumentCourse, Slot, Stop
from iosched.core.experiment.startup import over_cap_note
from iosched.core.experiment.variants import plan_order
from iosched.core.kernel.devices import read_device
from iosched.core.load.cmd_tree import invoking_user
from iosched.core.load.fio import FioProgress
from iosched.core.load.jobs import Job, JobFile
from iosched.core.load.replay import PRIMARY as REPLAY_PRIMARY
from iosched.core.load.replay import ReplayJob, ReplayRequest, prepare_replay
from iosched.core.load.replay_latency import untraced_words
from iosched.core.load.startup_replay import StartupJob, prepare_foreground
from iosched.core.load.targets import Target
from iosched.core.statistics.verdict import RunningVerdict, judge, sequential_plan
from iosched.core.trace.tracer import TracingUnavailable, why_untraceable


@dataclass
class ComparePlan(LocalPlan[CompareDoc]):
    """Repeated runs of one workload under each variant: everything decided before the first run."""

    job: Job | JobFile | None = None  # a fio job (a replay's once its capture is copied)
    cmd: str | None = None  # a command timed under each variant, instead of a job
    background: Job | JobFile | None = None  # with cmd: a job loading the device while the command runs
    cmd_metrics: list[CmdMetric] = field(default_factory=list)  # with cmd: figures read from its output
    runtime: float | None = None  # seconds, for a job file (catalog jobs carry their own)
    replay: ReplayRequest | None = None  # a capture replayed (made into ``job`` by hold())
    repeat: int = 3
    until_verdict: int | None = None  # stop at the sequential boundary: at most this many runs per variant

    kind: ClassVar[str] = "compare"

    @property
    def jobs(self) -> list[Job | JobFile]:
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
    def repeats(self) -> int:
        """Runs per variant at most (under the boundary: the most it may take)."""
        return self.until_verdict if self.until_verdict is not None else self.repeat

    @property
    def total_runs(self) -> int:
        return self.repeats * len(self.variants)

    def check(self) -> None:
        if self.repeats < 1:
            raise BadInput("--repeat must be at least 1")
        if self.replay is not None and self.replay.mode == "timed" and (why := why_untraceable(self.root)) is not None:
            raise TracingUnavailable(f"{untraced_words(why)}: --replay-mode fast judges its throughput without it")
        super().check()
        if self.cmd is not None:
            invoking_user(os.environ, os.geteuid())  # who the command runs as: a SUDO_UID naming no user refused now

    def check_conditions(self) -> None:
        if self.steady is not None and (self.cmd is not None or self.replay is not None):
            raise BadInput("--steady waits for a fio job's own rate to settle: a command or a replayed capture keeps "
                           "its own pace")
        if self.fill is not None and self.cmd is not None and self.background is None:
            raise BadInput("--fill prepares the device a fio job runs on: a command alone writes where it writes")
        super().check_conditions()

    def check_roles(self) -> None:
        if self.cmd:
            check_roles(self.metric, [("the command", [BACKGROUND] if self.background is not None else [])])
        else:
            super().check_roles()

    def prepared(self, stack: contextlib.ExitStack) -> Self:
        plan = self
        if self.replay is not None and self.job is None:  # the capture checked whole and copied for fio
            dev = read_device(self.device, self.root)
            if dev is None:
                raise BadInput(f"{self.device} is not a whole-disk block device")
            job = prepare_replay(self.replay.path, self.replay.mode, self.device, dev.size_bytes, self.replay.fit)
            stack.callback(job.release)
            plan = replace(self, job=job, target=replace(self.target, raw=True, dir=None))
            plan.check_roles()  # a replay has no roles: a metric of one is refused as for any job
        if isinstance(plan.job, StartupJob) and plan.job.foreground is None:
            dev = read_device(plan.device, plan.root)
            if dev is None:
                raise BadInput(f"{plan.device} is not a whole-disk block device")
            ready = prepare_foreground(plan.job.path, plan.device, dev.size_bytes)
            stack.callback(ready.release)
            plan = replace(plan, job=replace(plan.job, foreground=ready),
                           target=replace(plan.target, raw=True, dir=None))
        return plan

    def workloads(self, target: Target | None) -> list[Workload]:
        if self.cmd is not None:
            return [Workload(cmd=self.cmd, background=self.background, target=target, cmd_metrics=self.cmd_metrics)]
        if self.job is None:
            raise BadInput("an experiment needs a job or a command")
        return [Workload(job=self.job, target=target, runtime=None if isinstance(self.job, Job) else self.runtime,
                         steady=self.steady)]

    def sequential(self) -> SequentialDoc | None:
        return boundary(self.until_verdict, self.alpha, len(self.variants), alternate=False)

    def document(self, executor: MachineRuns, target: Target | None) -> CompareDoc:
        info = sysinfo(self.device, self.root)
        order = plan_order(len(self.variants), self.repeats)
        return CompareDoc(started=time.time(), kernel=info.kernel, machine=info.machine, host=info.host,
                          device=info.device, variants=[v.doc() for v in self.variants],
                          order=[self.variants[i].label for i in order], repeat=self.repeats,
                          drop_caches=self.drop_caches, settle_s=self.settle,
                          workload=self.workloads(target)[0].doc(), original=executor.original(), runs=[], notes=[],
                          sequential=self.sequential(), traced=executor.traced)

    def course(self, executor: MachineRuns, doc: CompareDoc, interim: bool = True) -> Course[CompareDoc, RunDoc]:
        """Its course through the loop; ``interim``: each run's end says the estimates so far (an advice's segments
        say none)."""
        order = plan_order(len(self.variants), self.repeats)
        running = RunningVerdict([v.label for v in self.variants], self.alpha, self.primary, "compare",
                                 doc.sequential) if interim else None
        return RunsCourse[CompareDoc]([Slot(n, v) for n, v in enumerate(order)], [v.label for v in self.variants],
                                      running, executor.switches)

    def judged(self, doc: CompareDoc) -> CompareDoc:
        return judged_one(doc, self.alpha, self.primary)


E = TypeVar("E", CompareDoc, AlternationDoc)


def boundary(until_verdict: int | None, alpha: float, variants: int, alternate: bool) -> SequentialDoc | None:
    """A compare's or an alternation's boundary under ``--until-verdict`` (None: a fixed number of runs)."""
    if until_verdict is None:
        return None
    return sequential_plan(until_verdict, alpha, variants, alternate)


def judged_one(doc: E, alpha: float, primary: str) -> E:
    """The final judgement into a compare's or an alternation's document: of every finished run, whether the
    experiment finished or not."""
    if not doc.runs:
        return doc
    doc = replace(doc, primary_metric=primary)
    return replace(doc, judgement=judge(doc, alpha, primary))


class RunsCourse(DocumentCourse[E, RunDoc]):
    """A compare's course: its runs in the interleaved order, the interim estimates after each (never a verdict),
    and, under ``--until-verdict``, the boundary's stop."""

    unit = "run"

    def __init__(self, slots: list[Slot], labels: list[str], running: RunningVerdict | None,
                 switches: Callable[[], Sequence[tuple[float, str]]]) -> None:
        super().__init__(slots, len(slots), switches)
        self.labels, self.running = labels, running

    def started(self, doc: E, slot: Slot) -> Event | None:
        return RunStarted(slot.index, self.total, self.labels[slot.variant])

    def progress(self, doc: E, slot: Slot, p: FioProgress) -> Event | None:
        return Progress(slot.index, self.total, self.labels[slot.variant], p)

    def record(self, doc: E, slot: Slot, run: RunDoc, took: float) -> E:
        return replace(doc, runs=[*doc.runs, on_clock(run, self.origin)])

    def stop(self, doc: E, slot: Slot, run: RunDoc) -> Stop | None:
        r = self.running
        if r is None:
            return None
        if r.sequential is not None and r.should_stop(doc.runs[-1]):
            return Stop(f"stopped after {self.unit} {slot.index + 1} of at most {self.total}: the boundary was crossed")
        if r.sequential is None:
            r.add_and_continue(doc.runs[-1])
        return None

    def ended(self, doc: E, slot: Slot, run: RunDoc) -> list[Event]:
        r = self.running  # it has seen the run: the estimates include it
        standing = r.standing() if r is not None else None
        return [RunEnded(slot.index, self.total, self.labels[slot.variant], doc.runs[-1], standing=standing)]

    def finished(self, doc: E) -> E:
        if (capped := over_cap_note([(r.variant, r) for r in doc.runs])) is not None:
            doc = self.note(doc, capped)
        return replace(doc, status="final")


def on_clock(run: RunDoc, origin: float, offset: float = 0.0) -> RunDoc:
    """A run's window on the experiment's clock: from its start (``origin``, monotonic), after ``offset``."""
    return replace(run, start=run.start - origin + offset, end=run.end - origin + offset)
