"""Matrix experiments: several workloads x several variants, in a drift-balanced order, saved after every run.

A matrix is many A/B/n experiments run together. The order interleaves them: each round visits every
workload once (the workload sequence reversed every other round), and within a workload the variants go
A B, then B A, starting the other way round on every other workload, so slow drift and warm caches favour
no variant, neither within a workload nor across the matrix. The document is written after every run, and
a saved document is a plan that `resume` continues: finished runs are kept, the rest are run.

One module: a matrix's plan, its saved form and its course through the one slot loop (slots.py) change together
(~500 lines).
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Self

from iosched.core.base.decode import DecodeError, decode
from iosched.core.base.errors import BadInput
from iosched.core.base.infile import read_bounded
from iosched.core.documents.document import (
    CatalogJobDoc,
    CatalogJobSpec,
    CmdJobSpec,
    FileJobSpec,
    JobFileDoc,
    MatrixDoc,
    MatrixRunDoc,
    MatrixSequentialDoc,
    RunDoc,
    StartupJobSpec,
    TargetDoc,
    VariantDoc,
)
from iosched.core.documents.metrics import check_roles
from iosched.core.documents.params import (
    BadValue,
    Variant,
    brief,
    parse_metric,
    parse_repeat,
    parse_seconds,
    parse_settle,
    parse_size,
)
from iosched.core.documents.saved import (
    Bad,
    decode_json,
    kind_of,
    need,
    read_matrix,
    saved_steady,
    saved_variants,
    through,
)
from iosched.core.experiment.compare import on_clock
from iosched.core.experiment.events import Event, LookReached, Progress, RunEnded, RunStarted
from iosched.core.experiment.local_plan import LocalPlan, workload_of
from iosched.core.experiment.results import result_lock, saved_matrices
from iosched.core.experiment.runner import HostInfo, MachineRuns, OnThisMachine, Workload, job_doc, sysinfo, target_doc
from iosched.core.experiment.slots import Course, DocumentCourse, Slot, Stop
from iosched.core.experiment.startup import over_cap_note
from iosched.core.experiment.study import CmdJob, command_workload
from iosched.core.kernel.device_doc import DeviceDoc, DeviceNameDoc
from iosched.core.kernel.devices import read_device
from iosched.core.load.cmd_tree import invoking_user
from iosched.core.load.fio import FioProgress
from iosched.core.load.jobs import CATALOG, Job, JobFile, parse_job_file
from iosched.core.load.startup_replay import StartupJob, prepare_foreground, startup_job
from iosched.core.load.steady import SteadyWait
from iosched.core.load.targets import Target
from iosched.core.statistics.judge import primaries
from iosched.core.statistics.matrix_judge import judge_matrix
from iosched.core.statistics.matrix_sequential import State, matrix_sequential_plan, state
from iosched.core.statistics.sequential import look_schedule

if TYPE_CHECKING:
    from iosched.core.experiment.service import Saver

# Seconds a run costs beyond its runtime: fio's start and file layout, the switch, the samples.
RUN_OVERHEAD_S = 1.0
DROP_CACHES_S = 0.5
MAX_RUNS = 10_000
SAVE_LIMIT = 256 << 20  # a saved matrix is read whole: refuse anything larger


def plan_order(n_workloads: int, n_variants: int, repeat: int) -> list[tuple[int, int]]:
    """(workload, variant) pairs in run order, balanced against drift within workloads and across the matrix."""
    order: list[tuple[int, int]] = []
    for r in range(repeat):
        workloads = range(n_workloads) if r % 2 == 0 else range(n_workloads - 1, -1, -1)
        for w in workloads:
            variants = list(range(n_variants))
            if (r + w) % 2:
                variants.reverse()
            order += [(w, v) for v in variants]
    return order


# --- jobs as saved data -------------------------------------------------------------------------------------

_FIO_TIME = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|ms|s|m|h)?\s*$", re.IGNORECASE)
_TIME_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "": 1.0}


def job_file_runtime(job: JobFile) -> float | None:
    """The longest runtime a job file sets (fio's plain number is seconds), or None when it sets none."""
    best = None
    for _, opts in job.sections:
        for key, value in opts:
            m = _FIO_TIME.match(value or "") if key == "runtime" else None
            if m:
                s = float(m.group(1)) * _TIME_UNITS[(m.group(2) or "").lower()]
                best = s if best is None else max(best, s)
    return best


def job_runtime(job: Job | JobFile | CmdJob, runtime: float | None) -> float | None:
    """Seconds one run of ``job`` lasts (None when a job file does not say and --runtime is not given, or for a
    command)."""
    if isinstance(job, Job):
        return job.runtime
    if isinstance(job, CmdJob):
        return None
    if isinstance(job, StartupJob):
        return job.estimate_s()
    return runtime if runtime is not None else job_file_runtime(job)


JobSpec = CatalogJobSpec | FileJobSpec | CmdJobSpec | StartupJobSpec


def job_spec(job: Job | JobFile | CmdJob) -> JobSpec:
    """What identifies a job in a saved matrix: a catalog name with its scaling, a job file's options, a study's
    command, or a start-up with its background."""
    if isinstance(job, Job):
        return CatalogJobSpec(catalog=job.name, runtime=job.runtime, size=job.size)
    if isinstance(job, CmdJob):
        return job.spec()
    if isinstance(job, StartupJob):
        bg = job.background
        return StartupJobSpec(startup=job.given, background=None if bg is None else _job_file_spec(bg),
                              cap_multiple=job.cap_multiple)
    return _job_file_spec(job)


def _job_file_spec(job: Job | JobFile) -> CatalogJobSpec | FileJobSpec:
    if isinstance(job, Job):
        return CatalogJobSpec(catalog=job.name, runtime=job.runtime, size=job.size)
    return FileJobSpec(file=job.path, sections=[(s, [(k, v) for k, v in opts]) for s, opts in job.sections])


def workload_doc(job: Job | JobFile | CmdJob) -> CatalogJobDoc | JobFileDoc | CmdJobSpec:
    """What a matrix's document says of a workload."""
    return job.spec() if isinstance(job, CmdJob) else job_doc(job)


def job_from_spec(spec: JobSpec) -> Job | JobFile | CmdJob:
    """The job a saved spec names, checked again as if typed by the user (a saved file is outside input). A
    command is read back to be compared with the study file given again, never to be run from the file; a
    start-up's capture is read and checked whole again before it runs."""
    if isinstance(spec, CmdJobSpec):
        metrics = [f"{m.name}={m.pattern}" + (f":{m.better}" if m.better else "") for m in spec.cmd_metrics]
        return command_workload(spec.name, spec.cmd, metrics, "its command")
    if isinstance(spec, StartupJobSpec):
        bg = None if spec.background is None else job_from_spec(spec.background)
        assert not isinstance(bg, CmdJob)
        return startup_job(spec.startup, bg, spec.cap_multiple)
    if isinstance(spec, CatalogJobSpec):
        name = spec.catalog
        if name not in CATALOG:
            raise BadInput(f"the saved matrix names a job the catalog does not have: {brief(name)!r}")
        try:  # the parsers of --runtime and --size
            runtime, size = parse_seconds(spec.runtime), parse_size(spec.size)
        except BadValue as e:
            raise BadInput(f"the saved runtime or size of {name} is not one --runtime or --size takes ({e})") \
                from None
        return CATALOG[name].scaled(runtime=runtime, size=size)
    lines: list[str] = []
    for section, opts in spec.sections:
        lines.append(f"[{section}]")
        lines += [k if v is None else f"{k}={v}" for k, v in opts]
    return parse_job_file("\n".join(lines), spec.file)


# --- the plan -----------------------------------------------------------------------------------------------


@dataclass
class MatrixPlan:
    """Everything decided before the first run; a saved document holds it and resuming reads it back."""

    variants: list[Variant]
    jobs: list[Job | JobFile | CmdJob]
    repeat: int = 3
    drop_caches: bool = False
    settle: float = 1.0
    runtime: float | None = None  # applies to job files (catalog jobs carry their own, scaled)
    primary: str | None = None  # None: each job's own (a contention job names one), else IOPS
    order: list[tuple[int, int]] = field(default_factory=list)
    sequential: MatrixSequentialDoc | None = None  # --until-verdict: the boundary (core/statistics/
    # matrix_sequential.py); repeat is then the most runs per cell
    trace: bool = False  # --trace: block-layer tracing over every run, as a compare's (a resume traces on)
    steady: SteadyWait | None = None  # --steady: each run waits for steady state first (saved in its conditions)

    def __post_init__(self) -> None:
        if not self.jobs:
            raise BadInput("the matrix is empty: --jobs names no job")
        if len(self.variants) < 2:
            raise BadInput("a matrix needs at least two variants")
        if not 1 <= self.repeat <= 1000:
            raise BadInput("--repeat must be between 1 and 1000")
        if not self.order:
            self.order = plan_order(len(self.jobs), len(self.variants), self.repeat)
        if len(self.order) > MAX_RUNS:
            raise BadInput(f"the matrix has {len(self.order)} runs; at most {MAX_RUNS} are allowed")

    @property
    def runs(self) -> int:
        return len(self.order)

    def run_seconds(self, w: int) -> float | None:
        rt = job_runtime(self.jobs[w], self.runtime)
        if rt is None:
            return None
        wait = self.steady.timeout_s if self.steady is not None else 0.0  # at most
        return rt + wait + self.settle + RUN_OVERHEAD_S + (DROP_CACHES_S if self.drop_caches else 0.0)

    def estimate(self, slots: list[int] | None = None) -> float | None:
        """Estimated seconds for the runs at ``slots`` of the order (all by default); None when unknown."""
        total = 0.0
        for i in range(len(self.order)) if slots is None else slots:
            s = self.run_seconds(self.order[i][0])
            if s is None:
                return None
            total += s
        return total

    def document(self, info: HostInfo, target: TargetDoc | None, started: float) -> MatrixDoc:
        """A new matrix's document: the plan, where it runs, no run yet (status running)."""
        return MatrixDoc(started=started, kernel=info.kernel, machine=info.machine, host=info.host,
                         device=info.device, variants=[v.doc() for v in self.variants], kind="matrix",
                         jobs=[job_spec(j) for j in self.jobs], workloads=[workload_doc(j) for j in self.jobs],
                         repeat=self.repeat, drop_caches=self.drop_caches, settle_s=self.settle,
                         job_runtime_s=self.runtime, primary_metric=self.primary or "iops",
                         primary_metrics=self._own_primaries(),
                         order=[(self.jobs[w].name, self.variants[v].label) for w, v in self.order],
                         sequential=self.sequential, traced=self.trace, target=target, runs=[], notes=[],
                         status="running")

    @property
    def fio_jobs(self) -> list[Job | JobFile]:
        """The workloads fio runs (a study's commands left out): what the target is chosen and sized for."""
        return [j for j in self.jobs if not isinstance(j, CmdJob)]

    @property
    def comparisons(self) -> int:
        return len(self.jobs) * (len(self.variants) - 1)

    def _own_primaries(self) -> dict[str, str] | None:
        """``primary_metrics``: the jobs that name their own metric, when the user named none."""
        own = {j.name: j.primary for j in self.jobs if isinstance(j, (Job, CmdJob, StartupJob)) and j.primary}
        return own if self.primary is None and own else None


def plan_from_doc(doc: object, path: object = "the file") -> MatrixPlan:
    """The plan a saved matrix was started with, from its parsed JSON (the plan's fields alone, each decoded as its
    declared type: the plan reads back from a document that holds no run yet), every value through its flag's
    parser; BadInput naming ``path`` when the file is not a matrix iosched wrote."""
    try:
        need(isinstance(doc, dict), "it is not an object")
        assert isinstance(doc, dict)
        seq = doc.get("sequential")
        return _plan(decode(list[VariantDoc], doc.get("variants"), "variants"),
                     decode(list[JobSpec], doc.get("jobs"), "jobs"),
                     doc.get("repeat"), doc.get("settle_s"), decode(bool, doc.get("drop_caches"), "drop_caches"),
                     doc.get("job_runtime_s"), doc.get("primary_metric"),
                     decode(dict[str, str] | None, doc.get("primary_metrics"), "primary_metrics"),
                     decode(list[tuple[str, str]], doc.get("order"), "order"),
                     None if seq is None else decode(MatrixSequentialDoc, seq, "sequential"),
                     decode(bool, doc.get("traced", False), "traced"), saved_steady(doc.get("conditions")))
    except (Bad, DecodeError) as e:
        raise BadInput(f"{path} is not a saved iosched matrix: {e}") from None


def plan_of(doc: MatrixDoc, path: object = "the file") -> MatrixPlan:
    """The plan a saved matrix (read whole) was started with, every value through its flag's parser; BadInput
    naming ``path`` when it does not read back."""
    try:
        return _plan(doc.variants, doc.jobs, doc.repeat, doc.settle_s, doc.drop_caches, doc.job_runtime_s,
                     doc.primary_metric, doc.primary_metrics, doc.order, doc.sequential, doc.traced,
                     doc.conditions.steady if doc.conditions is not None else None)
    except Bad as e:
        raise BadInput(f"{path} is not a saved iosched matrix: {e}") from None


def _plan(saved: list[VariantDoc], specs: list[JobSpec], repeat_value: object,
          settle_value: object, drop: bool, runtime_value: object, primary_value: object, own: dict[str, str] | None,
          pairs: list[tuple[str, str]], seq: MatrixSequentialDoc | None, traced: bool,
          steady: SteadyWait | None = None) -> MatrixPlan:
    variants = saved_variants(saved)
    need(bool(specs), "it has no jobs")
    try:
        jobs = [job_from_spec(s) for s in specs]
    except BadInput as e:
        raise Bad(str(e)) from None
    names = {j.name: i for i, j in enumerate(jobs)}
    labels = {v.label: i for i, v in enumerate(variants)}
    need(len(names) == len(jobs), "two of its jobs have one name")
    repeat = int(through(parse_repeat, repeat_value, "repeat"))
    settle = float(through(parse_settle, settle_value, "settle_s"))
    runtime = None if runtime_value is None else float(through(parse_seconds, runtime_value, "job_runtime_s"))
    primary = primary_value or "iops"
    through(parse_metric, primary, "primary_metric")
    if own is not None:  # the jobs' own metrics: the user named none (read back from the jobs themselves)
        for w, m in own.items():
            job = jobs[names[w]] if w in names else None
            if not (isinstance(job, CmdJob) and m in {c.name for c in job.cmd_metrics}):  # else a figure it reads
                through(parse_metric, m, "primary_metrics")
    # Counted before the balanced order is built: a hostile repeat or job list must not make a huge one.
    need(len(pairs) == len(jobs) * len(variants) * repeat <= MAX_RUNS, "its run order does not cover the matrix")
    order = []
    for job_name, label in pairs:
        need(job_name in names and label in labels, "its run order names a job or variant it does not have")
        order.append((names[job_name], labels[label]))
    if seq is not None:
        seq = _boundary(seq, repeat, len(jobs) * (len(variants) - 1))
    try:
        plan = MatrixPlan(variants, jobs, repeat, drop, settle, runtime, None if own is not None else str(primary),
                          order, seq, traced, steady)
    except BadInput as e:
        raise Bad(str(e)) from None
    need(sorted(plan.order) == sorted(plan_order(len(jobs), len(variants), plan.repeat)),
         "its run order does not cover the matrix")
    return plan


def _boundary(seq: MatrixSequentialDoc, repeat: int, comparisons: int) -> MatrixSequentialDoc:
    """A saved boundary, checked against the plan: its looks are the schedule of its most runs per cell, and each
    level lies between the Bonferroni split over the looks and a single look's (a file cannot loosen it)."""
    need(seq.max_per_arm == repeat and tuple(seq.looks) == look_schedule(repeat),
         "its sequential looks are not those of its most runs per cell")
    need(0.0 < seq.alpha <= 0.5 and len(seq.levels) == comparisons, "its sequential boundary does not fit the matrix")
    for r, level in enumerate(seq.levels):
        share = seq.alpha / (comparisons - r)
        need(share / (2 * len(seq.looks)) <= level <= share, "its sequential boundary is looser than alpha allows")
    need(0.0 < seq.ci_level < 1.0, "its sequential interval level is not a probability")
    return seq


def decode_matrix(doc: object, path: object) -> MatrixDoc:
    """A saved matrix checked whole (every field, its plan, its runs against the plan) before any use."""
    d = read_matrix(doc, path)
    plan = plan_of(d, path)
    if [w.name for w in d.workloads] != [j.name for j in plan.jobs]:
        raise BadInput(f"{path} is not a saved iosched matrix: its workloads are not its jobs")
    return d


def load_matrix(path: str | Path) -> MatrixDoc:
    """A saved matrix document, size- and shape-checked; BadInput with one sentence otherwise."""
    data = read_bounded(path, SAVE_LIMIT, "matrix")  # a regular file only: /dev/zero or a FIFO is refused at once
    doc = decode_json(data, path, "matrix")
    if kind_of(doc) in ("fleet", "fleet_matrix"):
        raise BadInput(f"{path} is a saved fleet compare: go on with it with --hosts, as it was run")
    return decode_matrix(doc, path)


def _identity(dev: DeviceDoc | DeviceNameDoc | None) -> tuple[object, ...]:
    return tuple(getattr(dev, k, None) for k in ("name", "size_bytes", "model", "serial", "backing_file"))


def check_resumable(doc: MatrixDoc, device: str, variants: list[Variant] | None,
                    jobs: list[Job | JobFile | CmdJob] | None,
                    runtime: float | None, root: str | Path = "/", path: str = "the file") -> MatrixPlan:
    """The saved plan, after checking the file belongs to this device and to the variants and jobs given."""
    saved = plan_of(doc, path)
    dev = read_device(device, root)
    here = dev  # read_device gives the declared type itself
    if here is None or _identity(here) != _identity(doc.device):
        raise BadInput(f"{path} was saved for another device ({getattr(doc.device, 'name', None)}), not {device}")
    if jobs is not None and ([job_spec(j) for j in jobs] != [job_spec(j) for j in saved.jobs]
                             or runtime != saved.runtime):
        raise BadInput(f"{path} holds another job set ({', '.join(j.name for j in saved.jobs)}); "
                       "resume with the same --jobs, --runtime and --size, or leave them out")
    if variants is not None and [v.doc() for v in variants] != [v.doc() for v in saved.variants]:
        raise BadInput(f"{path} compares other variants ({', '.join(v.label for v in saved.variants)})")
    if doc.status == "final":
        raise BadInput(f"{path} is a finished matrix: nothing to resume")
    if jobs is None and any(isinstance(j, CmdJob) for j in saved.jobs):
        raise BadInput(f"{path} is a study that runs commands: resume it with --study and its file again, so the "
                       "commands run come from you, not from a result file")
    return saved


def done_slots(doc: MatrixDoc) -> set[int]:
    return {r.slot for r in doc.runs}


# --- saving -------------------------------------------------------------------------------------------------


def find_resumable(device: str, directory: str | Path, root: str | Path = "/", look_at: int = 5,
                   only: Path | None = None) -> tuple[Path, MatrixDoc, MatrixPlan] | None:
    """The unfinished matrix last saved for ``device`` (among its ``look_at`` most recent, or ``only`` that
    file) that still fits it: the same device (by identity, not name alone) and a readable plan; None when
    there is none."""
    paths = [only] if only is not None else saved_matrices(device, directory)[:look_at]
    for path in paths:
        try:
            doc = load_matrix(path)
            if doc.status == "final":
                continue
            plan = check_resumable(doc, device, None, None, None, root, path.name)
        except BadInput:  # another device by this name, a plan that does not read back, or not ours
            continue
        if len(doc.runs) < plan.runs:
            return path, doc, plan
    return None


# --- running ------------------------------------------------------------------------------------------------


def new_document(device: str, plan: MatrixPlan, target: Target | None, root: str | Path = "/") -> MatrixDoc:
    return plan.document(sysinfo(device, root), target_doc(target) if target is not None else None, time.time())


@dataclass
class MatrixRunPlan(LocalPlan[MatrixDoc]):
    """A matrix on this machine's device, new or going on from its saved document: the service's plan. Its runs
    are slots of the one slot loop (slots.py), saved after each; ``--until-verdict`` leaves out a decided cell's
    slots and stops once every cell has decided."""

    matrix: MatrixPlan | None = None
    resume: MatrixDoc | None = None  # a saved, unfinished matrix to continue (its plan is ``matrix``)
    reload: Callable[[], MatrixDoc] | None = None  # a resumed matrix's file, read again once its lock is held
    until_verdict: int | None = None  # the boundary is made for at most this many runs per cell (``check``)

    kind: ClassVar[str] = "matrix"

    @property
    def plan(self) -> MatrixPlan:
        assert self.matrix is not None
        return self.matrix

    @property
    def jobs(self) -> list[Job | JobFile]:
        return self.plan.fio_jobs

    @property
    def waits(self) -> SteadyWait | None:
        return self.plan.steady

    @property
    def waiting(self) -> Sequence[object]:
        return self.plan.jobs

    @property
    def going_on(self) -> bool:
        return self.resume is not None or self.reload is not None

    def check(self) -> None:
        super().check()
        if any(isinstance(j, CmdJob) for j in self.plan.jobs):
            invoking_user(os.environ, os.geteuid())  # who its commands run as: a SUDO_UID naming no user refused now
        make_boundary(self)

    def check_roles(self) -> None:
        check_roles(self.metric, [(j.name, j.role_names) for j in self.jobs])

    def check_conditions(self) -> None:
        if self.fill is not None and self.going_on:
            raise BadInput("--fill prepares the device before a matrix's first run: a resumed matrix goes on with the "
                           "device as it is (its file says how it was filled)")
        super().check_conditions()

    def prepared(self, stack: contextlib.ExitStack) -> Self:
        """Each start-up's capture checked whole and copied for fio (once per capture, removed when the matrix
        ends), aimed at the raw device: before anything is locked or changed."""
        names = {j.path for j in self.plan.jobs if isinstance(j, StartupJob) and j.foreground is None}
        if not names:
            return self
        dev = read_device(self.device, self.root)
        if dev is None:
            raise BadInput(f"{self.device} is not a whole-disk block device")
        ready = {}
        for path in sorted(names):
            ready[path] = prepare_foreground(path, self.device, dev.size_bytes)
            stack.callback(ready[path].release)

        def prepared(job: Job | JobFile | CmdJob) -> Job | JobFile | CmdJob:
            if isinstance(job, StartupJob) and job.foreground is None:
                return replace(job, foreground=ready[job.path])
            return job

        return replace(self, matrix=replace(self.plan, jobs=[prepared(j) for j in self.plan.jobs]),
                       target=replace(self.target, raw=True, dir=None))

    def locked(self, saver: Saver[MatrixDoc] | None, stack: contextlib.ExitStack) -> Self:
        if saver is not None and saver.path is not None:
            stack.enter_context(result_lock(saver.path, self.root))  # one iosched at a time goes on with the file
        if self.reload is None:
            return self
        again = self.reload()
        if again.status == "final":
            raise BadInput(f"{saver.path if saver else 'the matrix'} was finished meanwhile: nothing to resume")
        return replace(self, resume=again)

    def setup(self, target: Target | None) -> OnThisMachine:
        todo = self.todo(self.resume)
        return OnThisMachine(self.device, self.variants, self.workloads(target), self.plan.drop_caches,
                             self.plan.settle, self.root, self.plan.trace, alone=bool(todo))

    def workloads(self, target: Target | None) -> list[Workload]:
        return [workload_of(j, target, self.plan.runtime, self.plan.steady) for j in self.plan.jobs]

    def todo(self, doc: MatrixDoc | None) -> list[int]:
        """The slots of the order not yet run."""
        done = done_slots(doc) if doc is not None else set()
        return [i for i in range(self.plan.runs) if i not in done]

    def document(self, executor: MachineRuns, target: Target | None) -> MatrixDoc:
        doc = self.resume if self.resume is not None else new_document(self.device, self.plan, target, self.root)
        # Resumed: the earlier session's "ended early … --resume continues" now says that it was resumed.
        return replace(doc, original=doc.original if doc.original is not None else executor.original(),
                       status="running", notes=[resumed_note(n) for n in doc.notes])

    def course(self, executor: MachineRuns, doc: MatrixDoc) -> Course[MatrixDoc, RunDoc]:
        return MatrixCourse(self.plan, doc, self.todo(doc), executor.switches)

    def judged(self, doc: MatrixDoc) -> MatrixDoc:
        """The final judgement into the document: of every finished run, whether the matrix finished or not."""
        if not doc.runs:
            return doc
        return replace(doc, judgement=judge_matrix(doc, self.alpha, self.metric))


def make_boundary(plan: MatrixRunPlan) -> None:
    """A matrix asked to stop at a verdict (``until_verdict``) gets its sequential boundary, unless it has one (a
    resumed or command-line matrix). Its simulation takes about a second: made in the caller's worker (the
    service's check), not in a front end's event loop."""
    if plan.matrix is not None and plan.until_verdict is not None and plan.matrix.sequential is None:
        plan.matrix.sequential = matrix_sequential_plan(plan.matrix.repeat, plan.alpha, plan.matrix.comparisons)


class MatrixCourse(DocumentCourse[MatrixDoc, RunDoc]):
    """A matrix's course: the slots of its order not yet run, each run kept with its slot and workload and saved; a
    resumed matrix's runs go on after its saved ones. Under its boundary, a decided cell's slots are left out, a
    look is said as it is reached, and the matrix stops once every cell has decided."""

    saves = True

    def __init__(self, plan: MatrixPlan, doc: MatrixDoc, todo: list[int],
                 switches: Callable[[], Sequence[tuple[float, str]]]) -> None:
        super().__init__([Slot(i, plan.order[i][1], plan.order[i][0]) for i in todo], plan.runs, switches,
                         offset=max((r.end for r in doc.runs), default=0.0))  # resumed runs continue the timeline
        self.plan, self.todo = plan, todo
        self.place = {slot: k for k, slot in enumerate(todo)}
        self.labels = [v.label for v in plan.variants]
        self.per_round = len(plan.jobs) * len(self.labels)
        self.metric_of = primaries(doc, plan.primary) if plan.sequential else {}
        self.st = state(doc, self.metric_of) if plan.sequential else State({}, 0)
        self.looked = self.st.last_look
        self.spent: list[tuple[float, float]] = []  # (estimated, measured) seconds of the runs made now

    def covered(self, doc: MatrixDoc) -> str:
        return f"{len(doc.runs)} of {self.plan.runs} runs finished; --resume continues"

    def left(self, slots: list[int]) -> list[int]:
        """The slots still to run: a decided cell's are left out."""
        order, jobs = self.plan.order, self.plan.jobs
        return [s for s in slots if not self.st.skips(jobs[order[s][0]].name, self.labels[order[s][1]], self.labels,
                                                      s // self.per_round)]

    def label(self, slot: Slot) -> str:
        """Its events name the cell (workload and variant), not the variant alone."""
        return f"{self.plan.jobs[slot.workload].name} · {self.labels[slot.variant]}"

    def eta(self, k: int) -> str:
        eta = eta_seconds(self.plan, self.left(self.todo[k:]), self.spent)
        return "" if eta is None else format_duration(eta)

    def skips(self, doc: MatrixDoc, slot: Slot) -> bool:
        return not self.left([slot.index])

    def started(self, doc: MatrixDoc, slot: Slot) -> Event | None:
        return RunStarted(slot.index, self.total, self.label(slot), self.eta(self.place[slot.index]))

    def progress(self, doc: MatrixDoc, slot: Slot, p: FioProgress) -> Event | None:
        return Progress(slot.index, self.total, self.label(slot), p)

    def record(self, doc: MatrixDoc, slot: Slot, run: RunDoc, took: float) -> MatrixDoc:
        one = on_clock(run, self.origin, self.offset)
        kept = MatrixRunDoc(**{f.name: getattr(one, f.name) for f in fields(one)}, slot=slot.index,
                            workload=self.plan.jobs[slot.workload].name)
        est = self.plan.run_seconds(slot.workload)
        if est is not None:
            self.spent.append((est, took))
        return replace(doc, runs=[*doc.runs, kept])

    def stop(self, doc: MatrixDoc, slot: Slot, run: RunDoc) -> Stop | None:
        self.looked = self.st.last_look
        if self.plan.sequential:
            self.st = state(doc, self.metric_of)
        if self.plan.sequential and len(self.st.decided) == self.plan.comparisons:
            return Stop()
        return None

    def ended(self, doc: MatrixDoc, slot: Slot, run: RunDoc) -> list[Event]:
        said: list[Event] = [RunEnded(slot.index, self.total, self.label(slot), doc.runs[-1],
                                      eta=self.eta(self.place[slot.index] + 1))]
        if self.st.last_look != self.looked:
            said.append(look_reached(doc, self.st))
        return said

    def finished(self, doc: MatrixDoc) -> MatrixDoc:
        if (capped := over_cap_note([(f"{r.variant} on {r.workload}", r) for r in doc.runs])) is not None:
            doc = self.note(doc, capped)
        return super().finished(doc)


def look_reached(doc: MatrixDoc, st: State) -> LookReached:
    """What a look of a sequential matrix found: the cells decided so far and now, and its next look."""
    assert doc.sequential is not None
    nxt = [x for x in doc.sequential.looks if x > st.last_look]
    return LookReached(st.last_look, len(st.decided), len(doc.workloads) * (len(doc.variants) - 1),
                       tuple(f"{w} · {v}" for (w, v), d in st.decided.items() if d.look == st.last_look),
                       nxt[0] if nxt else None)


def resumed_note(note: str) -> str:
    """An earlier session's "ended early (why): N of M runs finished; --resume continues", as history."""
    if not note.startswith("ended early") or not note.endswith("; --resume continues"):
        return note
    return "interrupted " + note[len("ended early "):-len("; --resume continues")] + ", then resumed"


def eta_seconds(plan: MatrixPlan, remaining: list[int], spent: list[tuple[float, float]]) -> float | None:
    """Seconds left: the estimate for the remaining runs, corrected by how the finished ones compared to theirs."""
    est = plan.estimate(remaining)
    if est is None:
        return None
    if spent:
        e, m = sum(x for x, _ in spent), sum(y for _, y in spent)
        if e > 0 and math.isfinite(m / e):
            est *= m / e
    return est


def format_duration(s: float) -> str:
    s = max(0, round(s))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def simulate_matrix(rng: random.Random, seq: MatrixSequentialDoc | None, repeat: int, workloads: list[str],
                    labels: list[str], effect: float, cv: float) -> MatrixDoc:
    """One matrix without a device, for calibration checks (tests, bench/matrix_sequential.py): the run loop's
    order and decisions (a decided cell's slots left out, a look after each complete round, the end once every
    cell decided) over log-normal IOPS with noise ``cv`` and ``effect`` times the baseline on every other variant.
    ``seq`` None: a fixed matrix of ``repeat`` runs per cell."""
    order = [(workloads[w], labels[v]) for w, v in plan_order(len(workloads), len(labels), repeat)]
    doc = MatrixDoc(started=0.0, kernel="", machine="", host="", device=None, notes=[], kind="matrix",
                    variants=[VariantDoc(label=lb, scheduler=lb.split("#")[0]) for lb in labels], jobs=[],
                    workloads=[JobFileDoc(name=w, path="", writes=False, text="") for w in workloads],
                    repeat=repeat, drop_caches=False, settle_s=0.0, job_runtime_s=None, primary_metric="iops",
                    order=order, sequential=seq, target=None, runs=[])
    metric_of = {w: "iops" for w in workloads}
    per_round = len(workloads) * len(labels)
    cells = len(workloads) * (len(labels) - 1)
    st = State({}, 0)
    runs: list[MatrixRunDoc] = []
    for slot, (w, v) in enumerate(order):
        if st.skips(w, v, labels, slot // per_round):
            continue
        value = 1000.0 * math.exp(rng.gauss(0.0, cv)) * (effect if v != labels[0] else 1.0)
        runs.append(MatrixRunDoc(index=slot, variant=v, start=0.0, end=0.0, valid=True, invalid_reason=None,
                                 config={}, metrics={"iops": value}, slot=slot, workload=w))
        if seq is not None and (slot + 1) % per_round == 0 and (slot + 1) // per_round in seq.looks:
            st = state(replace(doc, runs=runs), metric_of)
            if len(st.decided) == cells:
                break
    return replace(doc, runs=runs)
