"""`iosched advise` as a plan of the experiment service (core/experiment/service.py ``run``): the accepted plan's
pilot and tests run on the device (or ``--on`` a spare), the advice decided by the rule stated before the first run,
and the advice document (core/documents/document.py ``AdviceDoc``) kept after every run.

- **check**: the variants exist on the device tested and every test's workload has a place to write (refused in one
  sentence before anything is locked or changed: the same check the printed plan made).
- **hold**: the captures checked and copied for fio, then the device's load lock.
- **go**: the pilot (``PILOT_RUNS`` of each test at the current setting, the device unchanged: its noise sets the
  runs each test needs, never more than were accepted); then each goal's test in segments between the looks of its
  sequential schedule (core/statistics/advice_looks.py): each segment a compare (core/experiment/compare.py
  ``ComparePlan``) over the current setting and the candidates still running, through the one slot loop with this
  machine's runs or a simulation's (the device put back after each), the clearly worse leaving at the looks, a win
  from 6 runs a variant ending the test at its look. Where its loads write is chosen as any experiment's is
  (core/experiment/local_plan.py ``choose_for``), once per kind of load, and the busy machine is said as any
  experiment's is. Every test's runs are kept as one compare; the document after every run.
- **judged**: the advice from the saved runs (core/advice/decision.py, the same looks again), then how to keep it.

With a budget the tests stop at it: a run that would end past what the budget leaves is not started (``Budgeted``,
the executor held to the deadline: the slot loop ends as when nothing is left to run on), the remaining tests are
not begun, and the advice is what the runs show, its ``budget`` saying it stopped there.

Not resumable: the current setting is the baseline, and an advice stopped half way would go on from whatever the
device has by then. A cancelled advice keeps its finished runs, saved, and gives no advice.
"""

from __future__ import annotations

import contextlib
import os
import platform
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from iosched.core.advice.decision import decide_doc, goal_doc, recommended, with_budget_needed
from iosched.core.advice.keep import keep_doc
from iosched.core.advice.loads import Load, load_of, prepare, release
from iosched.core.advice.observe import Observation, observation_lines
from iosched.core.advice.plan import (
    GOAL_WORDS,
    MAX_RUN_S,
    PILOT_RUNS,
    Plan,
    PlannedTest,
    WorkloadSource,
    after_pilot,
    smallest_s,
)
from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.documents.document import (
    AdviceBudgetDoc,
    AdviceCandidateDoc,
    AdviceDoc,
    AdvicePlanDoc,
    AdviceRuleDoc,
    AdviceTestDoc,
    AdviceWorkloadDoc,
    CompareDoc,
    DroppedDoc,
    ObservedDoc,
)
from iosched.core.documents.params import Variant
from iosched.core.experiment.busy import BusyWatch
from iosched.core.experiment.compare import ComparePlan
from iosched.core.experiment.conditions import holding
from iosched.core.experiment.control import Cancelled
from iosched.core.experiment.events import Event, Note, Progress, RunEnded, RunStarted
from iosched.core.experiment.local_plan import Runs, TargetRequest, choose_for, watched
from iosched.core.experiment.runner import LocalRuns
from iosched.core.experiment.slots import Executor, Slot, run_slots
from iosched.core.experiment.variants import check_variants
from iosched.core.kernel.devices import read_device
from iosched.core.load.cmd_tree import invoking_user
from iosched.core.load.conditions import read_conditions
from iosched.core.load.fill import FillDoc, run_fill
from iosched.core.load.fio import FioProgress
from iosched.core.load.jobs import Job, JobFile, space_needed
from iosched.core.load.replay import ReplayJob
from iosched.core.load.steady import why_no_wait
from iosched.core.load.targets import Refused, Target, check_scratch_dir, why_not_writable
from iosched.core.settings.device_lock import load_lock
from iosched.core.statistics.advice_looks import Looks, look_level, schedule
from iosched.core.statistics.advice_rule import Goal, Rule
from iosched.core.statistics.judge import estimates, run_values
from iosched.core.statistics.planning import pilot_noise
from iosched.core.statistics.verdict import judge

if TYPE_CHECKING:
    from iosched.core.experiment.service import Running, Saver

R = TypeVar("R")
STEPS = ("observe", "plan", "test", "decide", "keep")
END_S = 3.0  # kept from the budget for what follows the last run: the put-back, the decision, the save


class Budgeted(Generic[R]):
    """An executor held to a deadline: a slot whose run would end past it is not begun (``apply`` answers None, so
    the slot loop ends as when nothing is left to run on, the variant not even put in place). A run's length is
    the longest one measured so far (from putting its variant in place to its end), or the planned one before."""

    def __init__(self, inner: Executor[R], deadline: float, run_s: float, clock: Callable[[], float],
                 measured: list[float]) -> None:
        self.inner, self.deadline, self.run_s, self.clock = inner, deadline, run_s, clock
        self.settle = inner.settle
        self.measured = measured  # shared by the test's segments: what its runs took
        self.stopped = False
        self.t0 = 0.0

    def begin(self, say: Callable[[str], None], note: Callable[[str], None]) -> None:
        self.inner.begin(say, note)

    def apply(self, slot: Slot) -> object | None:
        self.t0 = self.clock()
        if self.t0 + max(self.measured, default=self.run_s) > self.deadline:
            self.stopped = True
            return None
        return self.inner.apply(slot)

    def run(self, slot: Slot, placed: object, progress: Callable[[FioProgress], None]) -> R | None:
        got = self.inner.run(slot, placed, progress)
        self.measured.append(self.clock() - self.t0)
        return got

    def end(self) -> IoschedError | None:
        return self.inner.end()


class HeldTarget(Target):
    """A target the advice holds over all its segments: each segment's ``release`` leaves it; the advice releases
    the target it stands for once, at its end."""

    def release(self, root: str | Path = "/") -> None:
        return None


# --- the checks a plan gets before it runs, and before it is only printed -------------------------------------


def check_plan(tested_on: str, plan: Plan, root: str | Path = "/") -> None:
    """What the accepted plan is checked for before anything is locked or changed (``AdvicePlan.check``), and the
    printed plan of `--dry-run` alike: every variant's scheduler on the device tested and every setting one its
    scheduler has, in range (core/experiment/variants.py); with a command, who it runs as (core/load/cmd_tree.py).
    Where the tests write is ``where_tests_write``'s."""
    check_variants(tested_on, plan.variants, root)
    if any(load_of(t).cmd is not None for t in plan.tests):
        invoking_user(os.environ, os.geteuid())  # a SUDO_UID naming no user: refused now, not at the first run


# --- where the tests write, said before anything is made ------------------------------------------------------


def where_tests_write(tested_on: str, loads: Sequence[Load], target_dir: str | None, destroy_data: str | None,
                      root: str | Path = "/", fill: bool = False) -> str:
    """Where the tests' loads will do their IO, in words, checked as `choose_target` will check it but making
    nothing: Refused (confirmable by typing the device's name, or not) for a write the device cannot take."""
    dev = read_device(tested_on, root)
    if dev is None:
        raise BadInput(f"{tested_on} is not a whole-disk block device")
    if destroy_data is not None and destroy_data != tested_on:
        raise BadInput(f"--destroy-data names {destroy_data!r} but the tests run on {tested_on}: they must match")
    mounts = [m for m in dev.mountpoints if m.startswith("/")]
    if fill and dev.mountpoints:
        raise BadInput(f"--fill writes the whole of raw {tested_on}, which is mounted or in use "
                       f"({', '.join(dev.mountpoints[:3])}): run the tests --on an unmounted spare of the same model")
    words: list[str] = []
    for load in loads:
        if load.cmd is not None and load.background is None:
            words.append(f"nothing of iosched's: `{load.cmd}` reads and writes where it does itself")
            continue
        flood = "the write flood beside the command: " if load.cmd is not None else ""
        if not (load.raw_only or fill) and (target_dir is not None or mounts):
            folder = target_dir or mounts[0]
            jobs = [j for j in (load.job, load.background) if j is not None]
            check_scratch_dir(folder, space_needed(jobs, 1 << 30))  # the run's own looks (targets.scratch_target)
            words.append(f"{flood}a scratch file in {folder} (removed afterwards)")
            continue
        if not (load.writes or fill):
            words.append(f"{flood}raw /dev/{tested_on}, reads only")
            continue
        why = why_not_writable(dev, root)
        if why is None:
            words.append(f"{flood}raw /dev/{tested_on}, written over (blank and unused)")
        elif dev.mountpoints:
            raise Refused(f"refused: the tests write to raw {tested_on} (a replay keeps the captured offsets, a "
                          f"flood writes beside it) and that would destroy data: {why}; run them --on a spare "
                          "device", why)
        elif destroy_data == tested_on:
            words.append(f"{flood}raw /dev/{tested_on}, written over although {why} (confirmed)")
        else:
            raise Refused(f"refused: the tests write to raw {tested_on}, which would destroy data: {why}; type its "
                          f"name to confirm (--destroy-data {tested_on}), or run them --on a spare device", why,
                          confirmable=True)
    return "; ".join(dict.fromkeys(words))


# --- the document -----------------------------------------------------------------------------------------------


def observed_doc(obs: Observation) -> ObservedDoc:
    d = obs.device
    return ObservedDoc(device=d.name, kind=d.kind, rotational=d.rotational, model=d.model, serial=d.serial,
                       size_bytes=d.size_bytes, scheduler=obs.scheduler, schedulers=list(obs.schedulers),
                       tunables={t.name: t.value for t in obs.tunables if t.scope == obs.scheduler},
                       set_by=obs.set_by.kind, lines=observation_lines(obs))


def plan_doc(plan: Plan, target: str) -> AdvicePlanDoc:
    return AdvicePlanDoc(
        baseline=plan.baseline.doc(),
        candidates=[AdviceCandidateDoc(variant=c.variant.doc(), why=c.why, source=c.source, goals=list(c.goals))
                    for c in plan.candidates],
        seconds=plan.seconds, budget_s=plan.budget_s, pilot_runs=PILOT_RUNS if plan.pilot_s else 0,
        cuts=list(plan.cuts), notes=list(plan.notes), target=target,
        fill=plan.fill.words() if plan.fill is not None else None, offers=list(plan.offers),
        smallest_s=smallest_s(plan))


def planned_test_doc(t: PlannedTest, alpha: float) -> AdviceTestDoc:
    looks = schedule(t.runs)
    return AdviceTestDoc(goal=t.goal, how=t.how, pace=t.pace, metric=t.metric, costs=list(t.costs),
                         variants=list(t.variants), runs=t.runs, run_s=t.run_s, looks=list(looks),
                         level=look_level(looks, alpha, len(t.variants)), looked=[], dropped=[], pilot=None,
                         noise=None, result=None)


def workload_doc(source: WorkloadSource | None, summary: Sequence[str] = ()) -> AdviceWorkloadDoc:
    """What the tests ran: the catalog's test per goal (no source), or the workload named or observed."""
    if source is None:
        return AdviceWorkloadDoc(kind="catalog", ref=None, summary=list(summary))
    return AdviceWorkloadDoc(kind=source.kind, ref=source.ref, summary=list(summary))


def new_advice(device: str, tested_on: str, plan: Plan, obs: Observation, target: str, rule: Rule,
               workload: AdviceWorkloadDoc) -> AdviceDoc:
    """The advice as planned: nothing ran yet."""
    u = platform.uname()
    notes = [] if tested_on == device else [f"the tests ran on {tested_on}, a spare beside {device}"]
    return AdviceDoc(kind="advice", started=time.time(), finished=None, kernel=u.release, host=u.node, device=device,
                     tested_on=tested_on, goals=list(plan.goals), status="planned", observed=observed_doc(obs),
                     workload=workload, plan=plan_doc(plan, target),
                     rule=AdviceRuleDoc(alpha=rule.alpha, margin=rule.margin, power=rule.power),
                     tests=[planned_test_doc(t, rule.alpha) for t in plan.tests], advice=[], tradeoff=None, keep=[],
                     notes=notes)


def merged(a: CompareDoc | None, b: CompareDoc) -> CompareDoc:
    """``b``'s runs after ``a``'s, as one compare: runs numbered on, on one clock (``a``'s variants hold ``b``'s)."""
    if a is None:
        return b
    shift_i, shift_t = len(a.runs), (a.runs[-1].end if a.runs else 0.0)
    runs = [replace(r, index=r.index + shift_i, start=r.start + shift_t, end=r.end + shift_t) for r in b.runs]
    counts: dict[str, int] = {}
    for r in [*a.runs, *runs]:
        counts[r.variant] = counts.get(r.variant, 0) + 1
    switches = [*(a.switches or []), *((t + shift_t, s) for t, s in b.switches or [])]
    return replace(a, runs=[*a.runs, *runs], order=[*a.order, *b.order], repeat=max(counts.values(), default=1),
                   notes=[*a.notes, *(n for n in b.notes if n not in a.notes)], switches=switches or None,
                   status=b.status, finished=b.finished)


def runs_in(doc: AdviceDoc) -> int:
    return sum(len(t.result.runs) if t.result else 0 for t in doc.tests) + \
        sum(len(t.pilot.runs) if t.pilot else 0 for t in doc.tests)


class _Live:
    """The advice's document as its runs arrive: each change kept (and saved when asked) through the service."""

    def __init__(self, run: Running[AdviceDoc], doc: AdviceDoc) -> None:
        self.run, self.doc = run, doc

    def set_test(self, i: int, save: bool, **changes: object) -> None:
        tests = list(self.doc.tests)
        tests[i] = replace(tests[i], **changes)  # type: ignore[arg-type]
        self.doc = replace(self.doc, tests=tests)
        self.run.keep(self.doc, save)

    def total(self) -> int:
        """Runs so far and still planned: the pilot's that remain, and each test's at most."""
        pilot = 0
        if self.doc.plan.pilot_runs:  # a pilot under way counts its runs still to come, not only those done
            pilot = sum(max(PILOT_RUNS - (len(t.pilot.runs) if t.pilot else 0), 0) for t in self.doc.tests)
        left = 0
        for t in self.doc.tests:
            planned = t.runs * len(t.variants)
            left += max(planned - (len(t.result.runs) if t.result else 0), 0) if len(t.looked) < len(t.looks) else 0
        return runs_in(self.doc) + pilot + left

    def emitter(self, goal: str, before: int) -> Callable[[Event], None]:
        """The runner's events, numbered over the whole advice and labelled with their goal."""
        def emit(e: Event) -> None:
            if isinstance(e, (RunStarted, Progress, RunEnded)):
                e = replace(e, index=before + e.index, total=self.total(),
                            label=f"{GOAL_WORDS[goal]} · {e.label}")
            self.run.emit(e)
        return emit


# --- the plan -----------------------------------------------------------------------------------------------------


@dataclass
class AdvicePlan:
    """An accepted advice plan: the service's plan (check, hold, go, judged, finished)."""

    doc: AdviceDoc  # as planned (``new_advice``)
    plan: Plan
    tested_on: str
    rotational: bool
    runs: Runs | None = None  # each run's executor (None: this machine's, core/experiment/runner.py ``LocalRuns``)
    rule: Rule = field(default_factory=Rule)
    runtime: float | None = None  # a command's or job's run length as given (None: its own)
    settle: float = 1.0  # the most quiet before a run (a test's own is its plan's: less for a fast device's reads)
    target_dir: str | None = None  # --dir: where a scratch file goes
    destroy_data: str | None = None  # the device's name, typed: a raw write over its data is allowed
    root: str | Path = "/"
    on_step: Callable[[str, str], None] | None = None  # (step, what): the five steps as they go
    on_target: Callable[[Target], None] | None = None  # hears where each kind of load writes, when first chosen
    loads: list[Load] = field(default_factory=list)  # per test, prepared under hold()
    targets: dict[tuple[bool, bool], Target] = field(default_factory=dict)  # per kind of load, held to the end
    busy: BusyWatch | None = None
    clock: Callable[[], float] = time.monotonic  # the budget's clock (a test's: a fake one)
    accepted: float | None = None  # the budget's clock when the plan was accepted (None: as the tests start)
    deadline: float | None = None  # set as the tests start: when what the budget leaves is spent
    stopped: bool = False  # the tests stopped at the budget
    took: dict[int, list[float]] = field(default_factory=dict)  # per test, each run's measured length

    def step(self, name: str, what: str) -> None:
        if self.on_step is not None:
            self.on_step(name, what)

    def check(self) -> None:
        check_plan(self.tested_on, self.plan, self.root)
        if len(self.plan.tests) != len(self.doc.tests):
            raise BadInput("the advice's tests are not its plan's")

    def hold(self, saver: Saver[AdviceDoc] | None) -> AbstractContextManager[AdvicePlan]:
        return self._hold()

    @contextlib.contextmanager
    def _hold(self) -> Iterator[AdvicePlan]:
        dev = read_device(self.tested_on, self.root)
        if dev is None:
            raise BadInput(f"{self.tested_on} is not a whole-disk block device")
        loads: list[Load] = []
        try:
            for t in self.plan.tests:
                loads.append(prepare(load_of(t), self.tested_on, dev.size_bytes, t.run_s))
            with load_lock(self.tested_on, "advise", self.root):
                yield replace(self, loads=loads)
        finally:
            for load in loads:
                release(load)

    def finished(self, doc: AdviceDoc) -> int:
        return runs_in(doc)

    def go(self, run: Running[AdviceDoc]) -> AdviceDoc:
        live = _Live(run, replace(self.doc, status="running"))
        run.keep(live.doc, False)
        start = self.clock() if self.accepted is None else self.accepted  # the locks and checks count too
        if self.plan.left_s is not None:
            self.deadline = start + self.plan.left_s - END_S
        try:
            self._prepare(live)  # the fill, before the busy watch's first look: its load is iosched's own
            self.busy = BusyWatch(self.tested_on, self.root, lambda text: run.emit(Note(text)))
            self.busy.before()
            if live.doc.plan.pilot_runs:
                self.step("test", f"the pilot: the noise at {self.plan.baseline.label}, put in place as every "
                          "variant is")
                self._pilot(live)
            self.step("test", "the tests: " + ", ".join(GOAL_WORDS[g] for g in self.plan.goals))
            for i in range(len(self.plan.tests)):
                if self.stopped:
                    break
                self._test(live, i)
        finally:
            for target in self.targets.values():
                target.release(self.root)
            self.targets.clear()
            if run.doc is not None:
                run.keep(self._said(run.doc), False)
        done = replace(live.doc, status="final", finished=time.time(), budget=self._budget(live, start))
        return self._said(done)

    def _budget(self, live: _Live, start: float) -> AdviceBudgetDoc | None:
        """The budget as held: what it counted, and whether the tests stopped at it."""
        if self.plan.budget_s is None:
            return None
        short = max(live.total() - runs_in(live.doc), 0) if self.stopped else 0
        return AdviceBudgetDoc(budget_s=self.plan.budget_s, before_s=self.plan.spent_s,
                               elapsed_s=self.plan.spent_s + self.clock() - start, stopped=self.stopped,
                               runs_short=short)

    def _said(self, doc: AdviceDoc) -> AdviceDoc:
        """``doc`` with what the busy watch said among its notes."""
        if self.busy is None:
            return doc
        self.busy.started()
        new = [line for line in self.busy.lines if line not in doc.notes]
        doc = replace(doc, busy=list(self.busy.named)) if self.busy.named != doc.busy else doc
        return replace(doc, notes=[*doc.notes, *new]) if new else doc

    def _target(self, segment: ComparePlan) -> Target | None:
        """Where a segment's load writes: chosen as any experiment's is, once per kind of load (a scratch file or the
        raw device, reads or writes), and held until the advice ends; with --fill, every test on the raw device the
        fill wrote."""
        if not segment.jobs:  # a command alone: it runs where it runs
            return None
        fill = self.plan.fill is not None
        raw = fill or any(isinstance(j, ReplayJob) for j in segment.jobs)
        return self._held(fill or any(j.writes for j in segment.jobs), raw, segment.jobs)

    def _held(self, writes: bool, raw: bool, jobs: list[Job | JobFile]) -> Target:
        """The target of a kind of load (``writes``, on the ``raw`` device), chosen the first time (a fill's: the raw
        device, written) and held until the advice ends."""
        key = (writes, raw)
        if key not in self.targets:
            request = TargetRequest(None if raw else self.target_dir, raw, self.destroy_data)
            made = choose_for(self.tested_on, jobs, request, self.root, fill=self.plan.fill is not None)
            assert made is not None
            self.targets[key] = made
            if self.on_target is not None:
                self.on_target(made)
        t = self.targets[key]
        return HeldTarget(t.device, t.path, t.kind, t.scratch_dir, t.note)

    def _prepare(self, live: _Live) -> None:
        """What the tests run under, kept in the advice: with --fill, the raw device the tests run on trimmed and
        written to its level first (said as it goes; this machine's runs only: a simulation has no device to fill)."""
        fill: FillDoc | None = None
        if self.plan.fill is not None and self.runs is None:
            self.step("test", self.plan.fill.words())
            ctl = live.run.ctl
            try:
                fill = run_fill(self.plan.fill, self._held(True, True, []), holder=holding(ctl))
            except IoschedError:
                if ctl.cancelled.is_set():
                    raise Cancelled("cancelled") from None
                raise
            finally:
                ctl.fio = None
            live.run.emit(Note(fill.words()))
        live.doc = replace(live.doc, conditions=read_conditions(self.tested_on, fill, self.plan.steady, self.root))
        live.run.keep(live.doc, False)

    def _runtime(self, t: PlannedTest) -> float | None:
        """A run's length cap: a long capture replays its first minute; a job runs as scaled."""
        if t.source.kind in ("capture", "replay"):
            return MAX_RUN_S if (t.source.seconds or 0) > MAX_RUN_S else None
        return None

    def _segment(self, live: _Live, i: int, variants: list[Variant], repeat: int,
                 grown: Callable[[CompareDoc], dict[str, object]]) -> CompareDoc:
        """One segment of test ``i``: a compare of ``variants`` through the one slot loop; ``grown`` says what the
        test's document becomes as the segment's compare grows (kept, and saved after each run)."""
        t, load = self.plan.tests[i], self.loads[i]
        waits = load.job is not None and why_no_wait(load.job) is None  # --steady: a one-stream job's runs wait
        segment = ComparePlan(self.tested_on, variants, job=load.job, cmd=load.cmd, background=load.background,
                              runtime=self._runtime(t), repeat=repeat, settle=min(self.settle, t.settle_s),
                              root=self.root, steady=self.plan.steady if waits else None)
        target = self._target(segment)
        executor = (self.runs or LocalRuns)(segment.setup(target), live.run.ctl)
        doc = segment.document(executor, target)

        def keep(seg: CompareDoc, save: bool) -> None:
            live.set_test(i, save or bool(seg.runs), **grown(seg))

        assert self.busy is not None
        emit = watched(self.busy, live.emitter(t.goal, runs_in(live.doc)))
        course = segment.course(executor, doc, interim=False)
        if self.deadline is None:
            return run_slots(course, executor, doc, keep, emit, live.run.ctl)
        held = Budgeted(executor, self.deadline, t.run_s_with_overhead, self.clock, self.took.setdefault(i, []))
        try:
            return run_slots(course, held, doc, keep, emit, live.run.ctl)
        finally:
            if held.stopped and not self.stopped:
                self.stopped = True
                live.run.emit(Note(f"the budget ({self.plan.budget_s:g} s) leaves no time for another run: the "
                                   "tests stop here, and the answer is what their runs show"))

    def _pilot(self, live: _Live) -> None:
        noise: dict[Goal, float | None] = {}
        for i, t in enumerate(self.plan.tests):
            if self.stopped:
                break
            pilot = self._segment(live, i, [self.plan.baseline], PILOT_RUNS, lambda seg: {"pilot": seg})
            sd, _df = pilot_noise(pilot, t.metric)
            noise[t.goal] = sd
            live.set_test(i, True, pilot=pilot, noise=sd)
        self.plan = after_pilot(self.plan, noise, self.rule.alpha)
        for i, planned in enumerate(self.plan.tests):
            fresh = planned_test_doc(planned, self.rule.alpha)
            live.set_test(i, True, runs=fresh.runs, looks=fresh.looks, level=fresh.level)

    def _test(self, live: _Live, i: int) -> None:
        td = live.doc.tests[i]
        labels = {v.label: v for v in self.plan.variants}
        looks = Looks(td.goal, td.metric, td.variants[0], td.variants[1:], td.looks, td.level, margin=self.rule.margin)
        result: CompareDoc | None = None
        while (n := looks.next_look()) is not None:
            before = result
            variants = [labels[td.variants[0]], *(labels[v] for v in looks.active)]

            def grown(seg: CompareDoc, before: CompareDoc | None = before) -> dict[str, object]:
                return {"result": merged(before, seg)}

            seg = self._segment(live, i, variants, n - looks.reached, grown)
            result = merged(before, seg)
            if self.stopped:  # the look not reached: the runs stand as they are
                live.set_test(i, True, result=result)
                break
            drops = looks.look(n, estimates(result, td.metric), run_values(result, td.metric))
            t = live.doc.tests[i]
            live.set_test(i, True, result=result, looked=[*t.looked, len(result.runs)],
                          dropped=[*t.dropped, *(DroppedDoc(variant=v, at=n) for v in drops)])
        if result is not None and result.runs:
            judged = judge(result, self.rule.alpha, td.metric)
            live.set_test(i, True, result=replace(result, primary_metric=td.metric, judgement=judged))

    def judged(self, doc: AdviceDoc) -> AdviceDoc:
        """The advice decided from the document's runs, once every test reached its last look; how to keep it."""
        if doc.status != "final":
            note = "stopped before every test finished: no advice (the finished runs are kept)"
            return replace(doc, status="cancelled", notes=[*doc.notes, note] if note not in doc.notes else doc.notes)
        self.step("decide", "the rule stated before the first run")
        advice = decide_doc(doc)
        if advice is None:
            b = doc.budget
            note = (f"the tests stopped at the budget, {b.runs_short} run(s) at most short of their plan: no test "
                    "reached its last look" if b is not None and b.stopped else
                    "no test reached its last look: no advice")
            return replace(doc, notes=[*doc.notes, note])
        goals = with_budget_needed(doc, [goal_doc(g, doc.rule.alpha) for g in advice.goals])
        self.step("keep", "the commands and the udev rule")
        variants = {v.label: v for v in self.plan.variants}
        keeps = [keep_doc(doc.device, variants[label], self.rotational, self.root) for label in recommended(goals)
                 if label in variants]
        return replace(doc, advice=goals, tradeoff="", keep=keeps)  # its words: core/present/worded.py
