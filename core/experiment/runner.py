"""The runs on this machine: each slot one run of a workload (fio, a command, a start-up) under its variant, between
two samples of the device, as ``LocalRuns``, the executor the one slot loop (slots.py) runs every local compare and
matrix with (a live alternation's turns are alternation.py's). Also what a run is measured and kept by: the
workload, the sampler's window, the range every figure is held to.

Whatever ends the runs (the last slot, a cancel, a signal), ``LocalRuns.end`` puts back the configuration the
device had at the start, kills fio and removes the scratch files; a crash leaves the journal, which `iosched
restore` replays.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol, TypeVar

from iosched.core.base.decode import decode
from iosched.core.base.errors import IoschedError
from iosched.core.base.figures import figure_fault
from iosched.core.documents.document import (
    CatalogJobDoc,
    JobFileDoc,
    ReplayDoc,
    RunDoc,
    TargetDoc,
    TraceDoc,
    WorkloadDoc,
)
from iosched.core.documents.params import Variant
from iosched.core.experiment.cmd_metrics import CmdMetric
from iosched.core.experiment.commands import run_cmd_reading, run_cmd_under
from iosched.core.experiment.control import Cancelled, Control
from iosched.core.experiment.slots import Executor, Slot
from iosched.core.experiment.startup import measure_alone, run_startup, with_alone
from iosched.core.experiment.variants import Configurator, check_variants, drifted
from iosched.core.kernel.device_doc import DeviceDoc, DeviceNameDoc
from iosched.core.kernel.devices import read_device
from iosched.core.live.monitor import Monitor
from iosched.core.live.sampler import Sample, compute_rates
from iosched.core.load.fio import FioHandle, FioProgress
from iosched.core.load.fio_group import run_fio
from iosched.core.load.fio_result import FioResult, FioUnfinished
from iosched.core.load.jobs import Job, JobFile
from iosched.core.load.replay import ReplayJob, replay_run
from iosched.core.load.replay_lag import ReplayLag
from iosched.core.load.startup_replay import StartupJob
from iosched.core.load.startup_timing import StartupTiming
from iosched.core.load.steady import SteadyRun, SteadyWait, wait_for_steady
from iosched.core.load.submission import SubmissionClock
from iosched.core.load.targets import Target
from iosched.core.settings.writes import drop_caches
from iosched.core.trace.runs import RunTracer

# --- workloads ----------------------------------------------------------------------------------------------


@dataclass
class Workload:
    """A fio job on a target, or a command (timed), alone or under a background job on the target — run once per
    repeat."""

    job: Job | JobFile | None = None
    target: Target | None = None
    runtime: float | None = None
    cmd: str | None = None
    background: Job | JobFile | None = None  # with cmd: the job that loads the target while the command runs
    cmd_metrics: list[CmdMetric] = field(default_factory=list)  # with cmd: figures read from its output
    steady: SteadyWait | None = None  # each run waits for steady state first (a job of one stream)

    @property
    def name(self) -> str:
        if self.job is not None:
            return self.job.name
        return f"cmd: {self.cmd}" + (f" under {self.background.name}" if self.background is not None else "")

    def doc(self) -> WorkloadDoc:
        """What the saved experiment keeps of it (a start-up's: its replay and its background)."""
        replay = self.job.foreground if isinstance(self.job, StartupJob) else self.job
        background = self.job.background if isinstance(self.job, StartupJob) else self.background
        return WorkloadDoc(job=job_doc(self.job) if self.job is not None else None,
                           target=target_doc(self.target) if self.target is not None else None,
                           runtime=self.runtime, cmd=self.cmd,
                           background=job_doc(background) if background is not None else None,
                           cmd_metrics=[m.doc() for m in self.cmd_metrics] or None,
                           replay=decode(ReplayDoc, replay.describe(), "the replay")
                           if isinstance(replay, ReplayJob) else None)


# What the load layer says of a job and a target, as their declared types.
def job_doc(job: Job | JobFile) -> CatalogJobDoc | JobFileDoc:
    if isinstance(job, Job):
        return decode(CatalogJobDoc, job.to_json(), "the job")
    return decode(JobFileDoc, job.to_json(), "the job")


def target_doc(target: Target) -> TargetDoc:
    return decode(TargetDoc, target.to_json(), "the target")


# --- per-run measurement ------------------------------------------------------------------------------------


def window_metrics(device: str, s0: Sample, s1: Sample, ios: int | None) -> dict[str, float]:
    """What the sampler saw over one run: CPU breakdown, CPU time per IO and the device's own latencies."""
    r = compute_rates(s0, s1)
    out: dict[str, float] = {}
    cpu = r.cpus.get("all")
    ncpu = max(sum(1 for k in s1.cpus if k != "all"), 1)
    d = r.disks.get(device)
    if d is not None:
        out.update(dev_iops=d.r_s + d.w_s, dev_r_await=d.r_await, dev_w_await=d.w_await, dev_aqu_sz=d.aqu_sz,
                   dev_util=d.util, dev_ios=(d.r_s + d.w_s) * r.interval,
                   dev_mb=(d.rkB_s + d.wkB_s) * r.interval * 1024 / 1e6)  # decimal MB, as fio's mb_s
        if ios is None:
            ios = round((d.r_s + d.w_s) * r.interval)
    if cpu is not None:
        out.update(cpu_usr=cpu.usr, cpu_sys=cpu.sys, cpu_iowait=cpu.iowait, cpu_irq=cpu.irq, cpu_soft=cpu.soft,
                   cpu_steal=cpu.steal)
        busy = cpu.usr + cpu.nice + cpu.sys + cpu.irq + cpu.soft + cpu.steal
        if ios:
            out["cpu_us_per_io"] = busy / 100.0 * ncpu * r.interval * 1e6 / ios
    return out


R = TypeVar("R", bound=RunDoc)


def hold_to_range(run: R) -> R:
    """``run`` with every figure held to a figure's range (core/base/figures.py): one outside it is not kept, and the
    run is invalid with the reason, so that what is saved reads back and no statistic sees it."""
    metrics = dict(run.metrics)
    valid, reason = run.valid, run.invalid_reason
    for key in [k for k, x in metrics.items() if x is not None]:
        why = figure_fault(metrics[key])
        if why is not None:
            del metrics[key]
            if valid:
                valid, reason = False, f"its {key} {why}"
    if len(metrics) == len(run.metrics):
        return run
    return replace(run, metrics=metrics, valid=valid, invalid_reason=reason)


@dataclass(frozen=True)
class HostInfo:
    """The machine an experiment runs on, and its device as read at the start."""

    kernel: str
    machine: str
    host: str
    device: DeviceDoc | DeviceNameDoc


def sysinfo(device: str, root: str | Path) -> HostInfo:
    dev = read_device(device, root)
    u = platform.uname()
    return HostInfo(u.release, u.machine, u.node,
                    dev if dev else DeviceNameDoc(name=device))


# --- the executor -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OnThisMachine:
    """What runs on this machine: the device, the variants (the baseline first), the workloads (a compare has one,
    a matrix one per job; each on its target), and how each run is prepared."""

    device: str
    variants: list[Variant]
    workloads: list[Workload]
    drop_caches: bool = False
    settle: float = 1.0
    root: str | Path = "/"
    trace: bool = False  # block-layer tracing over every run (time in the scheduler, device time)
    alone: bool = True  # each start-up's time alone measured before the first run (not when no slot is left)

    @property
    def targets(self) -> list[Target]:
        return list({id(w.target): w.target for w in self.workloads if w.target is not None}.values())

    def release(self) -> None:
        """The workloads' targets released: their scratch files removed (idempotent)."""
        for t in self.targets:
            t.release(self.root)


class MachineRuns(Executor[RunDoc], Protocol):
    """An executor of runs on this machine's device (or a simulation of them): what its document says of it."""

    traced: bool  # each run carries its block-layer figures

    def original(self) -> dict[str, str]:
        """The device's settings at the start, as the document keeps them (put back at the end)."""
        ...

    def switches(self) -> list[tuple[float, str]]:
        """Every scheduler switch made so far: (monotonic time, scheduler)."""
        ...


class LocalRuns:
    """Each slot one run on this machine: the slot's variant put in place from its scheduler's defaults
    (variants.py ``Configurator``), caches dropped when asked, the settle (the loop's), then the slot's workload
    between two samples of the device; the run invalid, with why, when fio did not finish, a figure is out of range
    or the device's settings changed under it. It owns the workloads' targets from the start: released when it
    cannot start, and by ``end``."""

    def __init__(self, setup: OnThisMachine, ctl: Control) -> None:
        self.setup, self.ctl, self.root = setup, ctl, setup.root
        self.device, self.variants = setup.device, setup.variants
        self.workloads = list(setup.workloads)
        self.settle = setup.settle
        self.tracer: RunTracer | None = None
        self.note: Callable[[str], None] = lambda text: None
        try:
            check_variants(self.device, self.variants, self.root)
            self.cfg = Configurator(self.device, self.variants, self.root)
            if setup.trace or any(isinstance(w.job, ReplayJob) and w.job.traced for w in self.workloads):
                # --trace, or a timed replay, whose latency is the block layer's (core/load/replay_latency.py)
                self.tracer = RunTracer(self.device, self.root)
                self.tracer.start()  # TracingUnavailable/TracingFailed: one sentence, nothing changed yet
        except BaseException:
            setup.release()
            raise
        self.monitor = Monitor(root=self.root, capacity=1)  # the run windows' edges
        self.traced = self.tracer is not None

    def original(self) -> dict[str, str]:
        return self.cfg.snapshot()

    def switches(self) -> list[tuple[float, str]]:
        return self.cfg.switches

    def begin(self, say: Callable[[str], None], note: Callable[[str], None]) -> None:
        """Each start-up's time alone, under the first variant: its runs' cap is a multiple of it."""
        self.note = note
        jobs = [w.job for w in self.workloads if w.job is not None]
        if not self.setup.alone or not any(isinstance(j, StartupJob) for j in jobs):
            return
        timed, said = with_alone(jobs, self._alone)
        by_name = {j.name: j for j in timed}
        self.workloads = [replace(w, job=by_name[w.job.name]) if w.job is not None else w for w in self.workloads]
        for text in said:
            say(text)

    def _alone(self, job: StartupJob) -> float:
        target = next(w.target for w in self.workloads if w.job is job or w.job == job)
        assert target is not None
        self.cfg.apply(self.variants[0])
        if self.settle and self.ctl.cancelled.wait(self.settle):
            raise Cancelled("cancelled")
        return measure_alone(job, target, self.ctl, self.root)

    def apply(self, slot: Slot) -> dict[str, str]:
        config = self.cfg.apply(self.variants[slot.variant])
        if self.setup.drop_caches:
            drop_caches(self.root)
        return config

    def run(self, slot: Slot, placed: object, progress: Callable[[FioProgress], None]) -> RunDoc:
        assert isinstance(placed, dict)
        run = _one_run(self.device, self.variants[slot.variant], placed, self.workloads[slot.workload],
                       self.monitor, self.ctl, self.root, progress, slot.index)
        if self.tracer is not None:
            run = self._add_trace(run, self.tracer)
        job = self.workloads[slot.workload].job
        if isinstance(job, ReplayJob):  # its latency: its requests' below fio, in the block layer
            run = replace(run, **job.below_fio(run.metrics, run.trace))
        return run

    def _add_trace(self, run: RunDoc, tracer: RunTracer) -> RunDoc:
        """The run's block-layer figures into its metrics; a tracer that died is noted once."""
        got = tracer.collect(run.start, run.end)
        if got is not None:
            metrics = {**run.metrics, **{k: v for k, v in got.metrics.items() if v is not None}}
            run = hold_to_range(replace(run, metrics=metrics, trace=TraceDoc.of(got)))
        if tracer.stopped and not getattr(self, "_trace_said", False):
            self._trace_said = True
            self.note(f"tracing stopped after run {run.index + 1}: {tracer.stopped}")
        return run

    def end(self) -> IoschedError | None:
        """fio killed, the device's starting configuration back (an error returned, not raised), the scratch files
        gone, then the tracer stopped."""
        if self.ctl.fio is not None:
            self.ctl.fio.kill()
        try:
            try:
                self.cfg.put_back()
            except IoschedError as e:
                return e
            return None
        finally:
            self.setup.release()
            if self.tracer is not None:
                self.tracer.stop()


# --- one run ------------------------------------------------------------------------------------------------


def _one_run(device: str, v: Variant, config: dict[str, str], workload: Workload, monitor: Monitor,
             ctl: Control, root: str | Path, on_progress: Callable[[FioProgress], None], n: int) -> RunDoc:
    drift: list[str] = []

    def check_drift() -> None:
        if not drift and (why := drifted(device, config, root)) is not None:
            drift.append(why)

    def progress(p: FioProgress) -> None:
        check_drift()
        on_progress(p)

    def hold(run: FioHandle) -> None:
        ctl.fio = run
        if ctl.cancelled.is_set():
            run.stop()

    steady = _steady_first(workload, ctl, progress, hold, n)
    s0 = monitor.snapshot()
    clock = SubmissionClock.start(device, root)  # where the CPU per IO goes: the task, the kernel's workers
    fio_res: FioResult | None = None
    metrics: dict[str, float | None] = {}
    timing: ReplayLag | None = None  # a timed replay's lag (core/load/replay_lag.py)
    startup: StartupTiming | None = None  # a start-up's time against its cap (core/load/startup_timing.py)
    try:
        if isinstance(workload.job, StartupJob):
            assert workload.target is not None
            got, fio_res, why, startup = run_startup(workload.job, workload.target, ctl, progress, root)
            metrics.update(got)
            if why is not None:
                drift.insert(0, why)
        elif workload.cmd is not None and workload.background is not None:
            assert workload.target is not None
            got, fio_res, why = run_cmd_under(workload.cmd, workload.background, workload.target, ctl, check_drift,
                                              progress, root, workload.cmd_metrics)
            metrics.update(got)
            if why is not None:
                drift.insert(0, why)
        elif workload.cmd is not None:
            figures, why = run_cmd_reading(workload.cmd, ctl, check_drift, workload.cmd_metrics, root)
            metrics.update(figures)
            if why is not None:
                drift.insert(0, why)
        else:
            assert workload.job is not None and workload.target is not None
            fio_res = run_fio(workload.job, workload.target, workload.runtime, progress, hold, root)
            metrics.update(fio_res.metrics())
            if isinstance(workload.job, ReplayJob):  # its own figures and faults (core/load/replay.py)
                replayed = replay_run(workload.job, fio_res.runtime_s, fio_res.total_ios, workload.runtime)
                metrics.update(replayed.metrics)
                timing = replayed.lag
                drift[:0] = replayed.faults
    except FioUnfinished as e:
        if ctl.cancelled.is_set():
            raise Cancelled("cancelled") from None
        drift.insert(0, str(e))  # an unfinished run is no sample: kept, marked invalid, left out of the statistics
    except IoschedError:
        if ctl.cancelled.is_set():
            raise Cancelled("cancelled") from None
        raise
    finally:
        ctl.fio = None
    s1 = monitor.snapshot()
    check_drift()
    # A command's or a start-up's CPU per IO counts the device's IOs (its own and its background's), a job's fio's.
    ios = fio_res.total_ios if fio_res and workload.cmd is None and startup is None else None
    metrics.update(window_metrics(device, s0, s1, ios))
    metrics.update(clock.figures(fio_res.raw if fio_res and ios is not None else None, ios or metrics.get("dev_ios")))
    return hold_to_range(RunDoc(index=n, variant=v.label, start=s0.time, end=s1.time, valid=not drift,
                                invalid_reason=drift[0] if drift else None, config=config, metrics=metrics,
                                fio=fio_res.raw if fio_res else None, replay=timing, startup=startup, steady=steady))


def _steady_first(workload: Workload, ctl: Control, progress: Callable[[FioProgress], None],
                  hold: Callable[[FioHandle], None], n: int = 0) -> SteadyRun | None:
    """A run's wait for steady state (core/load/steady.py), before its window opens; None when it waits for none.
    A cancel says what it stopped: the wait of run ``n`` (from 0), which then is not made."""
    if workload.steady is None or workload.job is None or workload.target is None:
        return None
    t0 = time.monotonic()
    try:
        return wait_for_steady(workload.job, workload.target, workload.steady, progress, hold)
    except IoschedError:
        if ctl.cancelled.is_set():
            raise Cancelled(f"cancelled while run {n + 1} waited for steady state ({time.monotonic() - t0:.0f} s of "
                            f"at most {workload.steady.timeout_s} s): that run was not made") from None
        raise
    finally:
        ctl.fio = None


