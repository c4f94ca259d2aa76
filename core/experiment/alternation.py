"""Live alternation: one continuous fio run while the variants take turns every few seconds; each turn is one
sample, the first second of it discarded, and the verdict pairs adjacent turns (core/statistics/verdict.py). A plan
of the experiment service whose turns are slots of the one slot loop (slots.py), each run by ``Turns``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import ClassVar

from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.documents.document import AlternationDoc, RunDoc, SequentialDoc
from iosched.core.documents.metrics import split_metric
from iosched.core.experiment.compare import RunsCourse, boundary, judged_one, on_clock
from iosched.core.experiment.control import Control
from iosched.core.experiment.events import Event, Progress
from iosched.core.experiment.local_plan import LocalPlan
from iosched.core.experiment.runner import MachineRuns, OnThisMachine, Workload, hold_to_range, sysinfo, window_metrics
from iosched.core.experiment.slots import Course, Slot
from iosched.core.experiment.variants import Configurator, alternation_order, check_variants
from iosched.core.live.monitor import Monitor
from iosched.core.load.fio import FioHandle, FioProgress
from iosched.core.load.fio_group import run_fio
from iosched.core.load.fio_result import FioResult
from iosched.core.load.jobs import Job, JobFile
from iosched.core.load.targets import Target
from iosched.core.settings.scheduler import available_schedulers
from iosched.core.statistics.verdict import RunningVerdict

ROLE_TURN_METRICS = ("iops", "clat_mean_us")  # what fio's status reports give per role and interval
DISCARD_S = 1.0  # the first second of a turn: the switch settling


@dataclass
class AlternationPlan(LocalPlan[AlternationDoc]):
    """One continuous run of ``job`` for ``duration`` seconds while the variants take turns every ``every``.

    Turns go in balanced order (`alternation_order`: A B B A B A A B ...) and only whole blocks of two passes are
    run. Each turn is one sample (its mean over the turn, after discarding the first ``discard`` seconds); the
    verdict pairs the turns within each pass (core/statistics/verdict.py), so drift the variants share cancels."""

    job: Job | JobFile | None = None
    every: float = 0.0  # seconds per turn
    duration: float = 0.0  # seconds in all
    runtime: float | None = None  # fio's: it outlives the last turn and is stopped then
    discard: float = DISCARD_S
    until_verdict: int | None = None  # stop at the sequential boundary: at most this many blocks

    kind: ClassVar[str] = "alternate"

    @property
    def jobs(self) -> list[Job | JobFile]:
        return [self.job] if self.job is not None else []

    @property
    def primary(self) -> str:
        return self.metric or (self.job.primary if isinstance(self.job, Job) else None) or "iops"

    @property
    def passes(self) -> int:
        """Passes over the variants: whole blocks of two within the duration."""
        passes = int(self.duration // self.every) // len(self.variants) if self.every > 0 else 0
        return passes - passes % 2

    def check(self) -> None:
        if self.job is None:
            raise BadInput("live alternation needs a fio job")
        if self.every <= self.discard + 0.5:
            raise BadInput(f"--alternate must be longer than {self.discard + 0.5:g} s (the first {self.discard:g} s "
                           "of a turn is discarded)")
        if self.passes < 4:
            raise BadInput(f"--duration must allow at least four turns per variant "
                           f"({4 * len(self.variants) * self.every:g} s)")
        super().check()

    def check_roles(self) -> None:
        super().check_roles()
        role, base = split_metric(self.metric or "")
        if role is not None and base not in ROLE_TURN_METRICS:
            raise BadInput(f"--metric {self.metric}: live alternation measures each role's "
                           f"{' and '.join(ROLE_TURN_METRICS)} per turn (fio's status reports); "
                           f"use {role}:clat_mean_us, or repeated runs for percentiles")

    def check_conditions(self) -> None:
        if self.steady is not None:
            raise BadInput("--steady waits before each run; a live alternation is one run whose variants take turns")
        super().check_conditions()

    def workloads(self, target: Target | None) -> list[Workload]:
        return [Workload(job=self.job, target=target, runtime=None if isinstance(self.job, Job) else self.runtime)]

    def executor(self, setup: OnThisMachine, ctl: Control, emit: Callable[[Event], None]) -> MachineRuns:
        return Turns(setup, ctl, self.every, self.discard, emit)

    def sequential(self) -> SequentialDoc | None:
        return boundary(self.until_verdict, self.alpha, len(self.variants), alternate=True)

    def document(self, executor: MachineRuns, target: Target | None) -> AlternationDoc:
        info = sysinfo(self.device, self.root)
        return AlternationDoc(kind="alternate", started=time.time(), kernel=info.kernel, machine=info.machine,
                              host=info.host, device=info.device, variants=[v.doc() for v in self.variants],
                              every_s=self.every, duration_s=self.duration, discard_s=self.discard,
                              workload=self.workloads(target)[0].doc(), original=executor.original(), runs=[],
                              notes=[], order=[], sequential=self.sequential())

    def course(self, executor: MachineRuns, doc: AlternationDoc) -> Course[AlternationDoc, RunDoc]:
        order = alternation_order(len(self.variants), self.passes)
        labels = [v.label for v in self.variants]
        running = RunningVerdict(labels, self.alpha, self.primary, "alternate", doc.sequential)
        return TurnsCourse([Slot(k, v) for k, v in enumerate(order)], labels, running, executor)

    def judged(self, doc: AlternationDoc) -> AlternationDoc:
        return judged_one(doc, self.alpha, self.primary)


class TurnsCourse(RunsCourse[AlternationDoc]):
    """A live alternation's course: a compare's, its runs turns, each also in the order as it went."""

    unit = "turn"
    covers = "results cover the turns that finished"

    def __init__(self, slots: list[Slot], labels: list[str], running: RunningVerdict, executor: MachineRuns) -> None:
        super().__init__(slots, labels, running, executor.switches)
        self.executor = executor  # a live alternation's (Turns) keeps fio's output; a simulation has none

    def started(self, doc: AlternationDoc, slot: Slot) -> Event | None:
        return None  # one fio run throughout: a turn has no start of its own to say

    def progress(self, doc: AlternationDoc, slot: Slot, p: FioProgress) -> Event | None:
        return None  # said by the executor's fio, whichever turn it is in

    def record(self, doc: AlternationDoc, slot: Slot, run: RunDoc, took: float) -> AlternationDoc:
        return replace(doc, runs=[*doc.runs, on_clock(run, self.origin)],
                       order=[*doc.order, self.labels[slot.variant]])

    def finished(self, doc: AlternationDoc) -> AlternationDoc:
        return replace(doc, status="final")

    def after(self, doc: AlternationDoc) -> AlternationDoc:
        """fio's own output of the whole run, or its error when no turn finished."""
        result = getattr(self.executor, "result", None)
        error = getattr(self.executor, "error", None)
        if error is not None and not doc.runs:
            raise error
        return replace(doc, fio=result.raw) if result is not None else doc


class Turns:
    """Each slot a turn of one continuous fio run, started before the first turn: the variant switched in place
    (variants.py ``Configurator``), the first ``discard`` seconds of the turn left out, then the device's sampler
    over the rest of it and each role's figures from fio's status reports in that window. A turn during which the
    scheduler changed is invalid. ``run`` says None once fio has ended (a turn it ended inside would skew its
    variant)."""

    settle = 0.0

    def __init__(self, setup: OnThisMachine, ctl: Control, every: float, discard: float,
                 emit: Callable[[Event], None]) -> None:
        self.setup, self.ctl, self.every, self.discard, self.emit = setup, ctl, every, discard, emit
        self.device, self.root, self.variants = setup.device, setup.root, setup.variants
        (self.workload,) = setup.workloads
        try:
            if self.workload.job is None or self.workload.target is None:
                raise BadInput("live alternation needs a fio job")
            check_variants(self.device, self.variants, self.root)
            self.cfg = Configurator(self.device, self.variants, self.root)
        except BaseException:
            setup.release()
            raise
        self.monitor = Monitor(root=self.root, capacity=1)  # the run windows' edges
        self.traced = False
        self.current = self.variants[0].label
        self.turns = 0
        self.seen: list[tuple[float, FioProgress]] = []  # fio's status reports, for each role's figures per turn
        self.result: FioResult | None = None
        self.error: IoschedError | None = None
        self.worker = threading.Thread(target=self._fio, name="iosched-fio", daemon=True)

    def original(self) -> dict[str, str]:
        return self.cfg.snapshot()

    def switches(self) -> list[tuple[float, str]]:
        return self.cfg.switches

    def _fio(self) -> None:
        def hold(run: FioHandle) -> None:
            self.ctl.fio = run
            if self.ctl.cancelled.is_set():
                run.stop()

        def progress(p: FioProgress) -> None:
            self.seen.append((time.monotonic(), p))
            self.emit(Progress(self.turns, 0, self.current, p))

        job, target = self.workload.job, self.workload.target
        assert job is not None and target is not None
        try:
            self.result = run_fio(job, target, self.workload.runtime, progress, hold, self.root)
        except IoschedError as e:
            self.error = e

    def begin(self, say: Callable[[str], None], note: Callable[[str], None]) -> None:
        """Each variant put in place once (so its defaults are read before the load), then the first, then fio,
        given a moment to lay out and start."""
        for v in self.variants:
            self.cfg.apply(v)
        self.cfg.apply(self.variants[0])
        self.worker.start()
        self._sleep_until(time.monotonic() + 1.0)

    def apply(self, slot: Slot) -> tuple[dict[str, str], float] | None:
        if not self.worker.is_alive():
            return None
        v = self.variants[slot.variant]
        self.current = v.label
        t_turn = time.monotonic()
        return self.cfg.apply(v), t_turn

    def run(self, slot: Slot, placed: object, progress: Callable[[FioProgress], None]) -> RunDoc | None:
        assert isinstance(placed, tuple)
        config, t_turn = placed
        v = self.variants[slot.variant]
        self._sleep_until(t_turn + self.discard)
        s0 = self.monitor.snapshot()
        self._sleep_until(t_turn + self.every)
        s1 = self.monitor.snapshot()
        if not self.worker.is_alive() and s1.time - s0.time < self.every - self.discard - 0.2:
            return None  # fio ended inside the turn: a short turn would skew its variant
        now = available_schedulers(self.device, self.root)[0]
        m: dict[str, float | None] = {**window_metrics(self.device, s0, s1, None)}
        m["iops"] = m.pop("dev_iops", 0.0)
        m.update(role_turn_metrics([p for t, p in self.seen if s0.time < t <= s1.time + 0.5]))
        self.turns += 1
        return hold_to_range(RunDoc(
            index=slot.index, variant=v.label, start=s0.time, end=s1.time, valid=now == config["scheduler"],
            config=config, metrics=m, fio=None,
            invalid_reason=None if now == config["scheduler"] else f"scheduler changed to {now}"))

    def end(self) -> IoschedError | None:
        """fio stopped (its output kept) and waited for, the device put back, the scratch files gone."""
        if self.worker.is_alive():
            self.ctl.cancel()
        if self.worker.ident is not None:
            self.worker.join(timeout=10)
        try:
            self.cfg.put_back()
        except IoschedError as e:
            return e
        finally:
            self.setup.release()
        return None

    def _sleep_until(self, t: float) -> None:
        _sleep_until(t, self.ctl, self.worker)


def _sleep_until(t: float, ctl: Control, worker: threading.Thread) -> None:
    """Wait until ``t``; a cancel wakes it at once, fio ending within a tenth of a second."""
    while worker.is_alive():
        left = t - time.monotonic()
        if left <= 0 or ctl.cancelled.wait(min(left, 0.1)):
            return


def role_turn_metrics(reports: list[FioProgress]) -> dict[str, float | None]:
    """Each role's IOPS and IO-weighted mean latency over the status reports that fall in a turn."""
    out: dict[str, float | None] = {}
    roles = dict.fromkeys(r for p in reports for r in p.roles)
    for role in roles:
        points = [p.roles[role] for p in reports if role in p.roles]
        out[f"{role}:iops"] = sum(x.iops for x in points) / len(points)
        timed = [(x.iops, x.clat_mean_us) for x in points if x.clat_mean_us is not None and x.iops > 0]
        weight = sum(n for n, _ in timed)
        out[f"{role}:clat_mean_us"] = sum(n * lat for n, lat in timed) / weight if weight else None
    return out
