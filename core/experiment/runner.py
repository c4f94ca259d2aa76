"""A/B/n experiments: interleaved repeats of one workload under each variant (variants.py puts each in place;
live alternation is alternation.py), and what every experiment shares: its control, events, run windows and
putting the device back.

Whatever happens (end, cancel, signal), the device gets back the configuration it had at the start; a
crash leaves the journal, which `iosched restore` replays.
"""

from __future__ import annotations

import contextlib
import platform
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Generic, TypeVar

from iosched.core.base.decode import decode
from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.base.figures import figure_fault
from iosched.core.documents.document import (
    CatalogJobDoc,
    CompareDoc,
    JobFileDoc,
    ReplayDoc,
    RunDoc,
    SequentialDoc,
    TargetDoc,
    TraceDoc,
    WorkloadDoc,
)
from iosched.core.documents.params import Variant
from iosched.core.experiment.cmd_metrics import CmdMetric
from iosched.core.experiment.commands import run_cmd_reading, run_cmd_under
from iosched.core.experiment.control import Cancelled, Control
from iosched.core.experiment.events import Done, Event, Note, Progress, RunEnded, RunStarted
from iosched.core.experiment.startup import measure_alone, over_cap_note, run_startup, with_alone
from iosched.core.experiment.variants import Configurator, check_variants, drifted, plan_order
from iosched.core.kernel.device_doc import DeviceDoc, DeviceNameDoc
from iosched.core.kernel.devices import read_device
from iosched.core.live.monitor import Monitor
from iosched.core.live.sampler import Sample, compute_rates
from iosched.core.load.fio import FioHandle, FioProgress
from iosched.core.load.fio_group import run_fio
from iosched.core.load.fio_result import FioResult, FioUnfinished
from iosched.core.load.jobs import Job, JobFile
from iosched.core.load.replay import ReplayJob
from iosched.core.load.replay_lag import METRIC as REPLAY_LAG
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


D = TypeVar("D", bound=Any)


Keep = Callable[[D, bool], None]  # the service's Running.keep: the document as it stands, and whether to save it


class Kept(Generic[D]):
    """An experiment's document as it grows: each change makes a new frozen document (``dataclasses.replace``),
    handed to ``keep`` (the service's: what finished is judged and saved however the experiment ends); ``save()``
    has it saved now too (a matrix after every run)."""

    def __init__(self, doc: D, keep: Keep[D] | None = None) -> None:
        self.doc = doc
        self._keep = keep or (lambda d, save: None)
        self._keep(doc, False)

    def update(self, **changes: Any) -> D:
        self.doc = replace(self.doc, **changes)
        self._keep(self.doc, False)
        return self.doc

    def save(self) -> None:
        self._keep(self.doc, True)

    def note(self, text: str) -> D:
        return self.update(notes=[*self.doc.notes, text])


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


@contextlib.contextmanager
def _released_on_error(workload: Workload, root: str | Path) -> Iterator[None]:
    """An experiment owns its workload's target from the call on: released if it fails before it starts."""
    try:
        yield
    except BaseException:
        if workload.target is not None:
            workload.target.release(root)
        raise


def why_ended(error: BaseException) -> str:
    """A run-ending exception in a few words: "Ctrl-C", "cancelled", "FioFailed: fio exited 1"."""
    if isinstance(error, KeyboardInterrupt):
        return "Ctrl-C"
    if isinstance(error, Cancelled):
        return str(error) or "cancelled"  # what a cancel stopped, where it says ("cancelled while run 4 waited …")
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def mark_cancelled(kept: Kept[Any], error: BaseException, covers: str) -> None:
    """Note why the experiment ended early; the document is kept, to be judged and saved."""
    kept.update(notes=[*kept.doc.notes, f"ended early ({why_ended(error)}): {covers}"], status="cancelled")


@contextlib.contextmanager
def puts_back(kept: Kept[Any], cfg: Configurator, ctl: Control, target: Target | None, root: str | Path,
              ended: Callable[[], str], t_origin: float, offset: float = 0.0) -> Iterator[None]:
    """Around an experiment's runs: whatever ends them, fio is killed, the device gets its starting
    configuration back, the target's scratch files go and the switches made are recorded.

    Anything raised marks the document ``status: cancelled`` with a note (``ended()`` says what the results
    cover); the document is kept, so what finished can still be judged and saved.
    """
    early = False
    try:
        yield
    except BaseException as e:  # cancel, Ctrl-C, SIGTERM, a failed run
        early = True
        mark_cancelled(kept, e, ended())
        raise
    finally:
        with shielded():
            if ctl.fio is not None:
                ctl.fio.kill()
            undone = put_back(cfg, kept)
            if target is not None:
                target.release(root)
        # A resumed document keeps the switches it had (none when it saved none: null reads as none).
        kept.update(switches=[*(kept.doc.switches or []), *((t - t_origin + offset, s) for t, s in cfg.switches)],
                    finished=time.time())
        raise_undone(undone, early, kept, ended)


def put_back(cfg: Configurator, kept: Kept[Any]) -> IoschedError | None:
    """``cfg.put_back()``; when the device vanished (or refuses), the error is noted and returned instead of
    raised over the one that ended the runs."""
    try:
        cfg.put_back()
    except IoschedError as e:
        if not any(str(e) in n for n in kept.doc.notes):  # a vanished device: already the reason the runs ended
            kept.note(f"the starting configuration could not be put back: {e}")
        return e
    return None


def raise_undone(undone: IoschedError | None, early: bool, kept: Kept[Any], ended: Callable[[], str]) -> None:
    """After every run finished, a failed put-back still fails the experiment, with its runs kept."""
    if undone is not None and not early:
        mark_cancelled(kept, undone, ended())
        raise undone


def run_experiment(device: str, variants: list[Variant], workload: Workload, repeat: int = 3,
                   drop: bool = False, settle: float = 1.0, root: str | Path = "/",
                   on_event: Callable[[Event], None] | None = None, ctl: Control | None = None,
                   stop: Callable[[RunDoc], bool] | None = None, sequential: SequentialDoc | None = None,
                   trace: bool = False, keep: Keep[CompareDoc] | None = None) -> CompareDoc:
    """Run every variant ``repeat`` times in interleaved order; returns the document `report` judges.

    ``stop`` sees each finished run and ends the experiment early when it returns True (the sequential
    boundary); ``sequential`` is that boundary's plan, saved so `report` judges against the same level.
    ``trace``: block-layer tracing over every run (time in the scheduler, device time; see trace_runs.py).
    ``keep`` gets the document each time it changes (what finished, however it ends).
    """
    with _released_on_error(workload, root):
        if repeat < 1:
            raise BadInput("--repeat must be at least 1")
        check_variants(device, variants, root)
        cfg = Configurator(device, variants, root)
    ctl = ctl or Control()
    emit = on_event or (lambda e: None)
    monitor = Monitor(root=root, capacity=1)  # the run windows' edges
    order = plan_order(len(variants), repeat)
    info = sysinfo(device, root)
    traced = trace or (isinstance(workload.job, ReplayJob) and workload.job.traced)  # a timed replay's latency
    tracer = _start_tracing(device, root, workload) if traced else None
    kept = Kept(CompareDoc(started=time.time(), kernel=info.kernel, machine=info.machine, host=info.host,
                           device=info.device, variants=[v.doc() for v in variants],
                           order=[variants[i].label for i in order], repeat=repeat, drop_caches=drop, settle_s=settle,
                           workload=workload.doc(), original=cfg.snapshot(), runs=[], notes=[],
                           sequential=sequential, traced=tracer is not None), keep)
    t_origin = time.monotonic()
    try:
        with puts_back(kept, cfg, ctl, workload.target, root, lambda: "results cover the runs that finished",
                       t_origin):
            if isinstance(workload.job, StartupJob):
                [job], said = with_alone([workload.job], lambda j: alone_under(j, cfg, variants[0], workload.target,
                                                                               settle, ctl, root))
                workload = replace(workload, job=job)
                for text in said:
                    kept.note(text)
                    emit(Note(text))
            for n, vi in enumerate(order):
                if ctl.cancelled.is_set():
                    raise Cancelled("cancelled")
                v = variants[vi]
                config = cfg.apply(v)
                if drop:
                    drop_caches(root)
                if settle and ctl.cancelled.wait(settle):  # a cancel ends the settle at once
                    raise Cancelled("cancelled")
                emit(RunStarted(n, len(order), v.label))
                run = _one_run(device, v, config, workload, monitor, ctl, root, emit, n, len(order))
                if tracer is not None:
                    run = _add_trace(run, tracer, kept)
                if isinstance(workload.job, ReplayJob):  # its latency: its requests' below fio, in the block layer
                    run = replace(run, **workload.job.below_fio(run.metrics, run.trace))
                run = replace(run, start=run.start - t_origin, end=run.end - t_origin)
                kept.update(runs=[*kept.doc.runs, run])
                done = stop is not None and stop(run)
                emit(RunEnded(n, len(order), v.label, run))
                if done:
                    kept.note(f"stopped after run {n + 1} of at most {len(order)}: the boundary was crossed")
                    break
            if (capped := over_cap_note([(r.variant, r) for r in kept.doc.runs])) is not None:
                kept.note(capped)
            kept.update(status="final")
    finally:
        if tracer is not None:
            with shielded():
                tracer.stop()
    emit(Done())
    return kept.doc


def alone_under(job: StartupJob, cfg: Configurator, variant: Variant, target: Target | None, settle: float,
                ctl: Control, root: str | Path) -> float:
    """A start-up's time alone, under ``variant`` (the first: its runs' cap is a multiple of it)."""
    assert target is not None
    cfg.apply(variant)
    if settle and ctl.cancelled.wait(settle):
        raise Cancelled("cancelled")
    return measure_alone(job, target, ctl, root)


def _start_tracing(device: str, root: str | Path, workload: Workload) -> RunTracer:
    tracer = RunTracer(device, root)
    with _released_on_error(workload, root):
        tracer.start()  # TracingUnavailable/TracingFailed: one sentence, nothing changed yet
    return tracer


def _add_trace(run: RunDoc, tracer: RunTracer, kept: Kept[Any]) -> RunDoc:
    """The run's block-layer figures into its metrics; a tracer that died is noted once."""
    got = tracer.collect(run.start, run.end)
    if got is not None:
        metrics = {**run.metrics, **{k: v for k, v in got.metrics.items() if v is not None}}
        trace = TraceDoc.of(got)
        run = hold_to_range(replace(run, metrics=metrics, trace=trace))
    if tracer.stopped and not any(n.startswith("tracing stopped") for n in kept.doc.notes):
        kept.note(f"tracing stopped after run {run.index + 1}: {tracer.stopped}")
    return run


def _one_run(device: str, v: Variant, config: dict[str, str], workload: Workload, monitor: Monitor,
             ctl: Control, root: str | Path, emit: Callable[[Event], None], n: int, total: int) -> RunDoc:
    drift: list[str] = []

    def check_drift() -> None:
        if not drift and (why := drifted(device, config, root)) is not None:
            drift.append(why)

    def progress(p: FioProgress) -> None:
        check_drift()
        emit(Progress(n, total, v.label, p))

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
            if isinstance(workload.job, ReplayJob):
                lag = workload.job.lag(fio_res.runtime_s, fio_res.total_ios)  # a timed replay's: None for fast
                if lag is not None:
                    metrics[REPLAY_LAG] = lag.lag_s
                    timing = lag
                    if lag.behind:  # its requests queued in fio, not in the scheduler: another load
                        drift.insert(0, lag.reason())
                short = workload.job.short_of(fio_res.total_ios) if workload.runtime is None else None
                if short is not None:  # a replay cut short measures another load
                    drift.insert(0, short)
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


