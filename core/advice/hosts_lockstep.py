"""`iosched advise --hosts --lockstep`: the advice on many hosts with each goal's test run in lockstep, every
candidate on every host together (as `compare --hosts` runs by default: core/fleet/lockstep.py), then each host
judged and pooled per model as each host on its own is (core/advice/hosts.py, model_pool.py).

First each host's own iosched makes its plan and changes nothing (`advise DEV --dry-run --json`, the bounds of a host
on its own: core/fleet/fleet.py ``OnItsOwn``): the plan the advice makes on that device, its candidates, runs and
looks. The hosts whose plan is the first's (the same tests of the same variants on the same figures: what disks of
one model on one kernel plan) go on; one whose plan differs is failed with why (`--independent` runs each its own).
Then per goal, the goal's catalog job is one lockstep fleet compare of the plan's variants over those hosts
(core/fleet/fleet_plan.py ``run_job``: fleet-host's journal, lock and put-back on each host, fio's client fenced
here), as many runs per variant as the plan's last look. Each host's compare becomes its test's runs in its planned
advice, whose looks are taken again on them and decided by the same rule (decision.py ``decided_again``), exactly as
`report` reads a saved advice: nothing a host says is taken for its conclusion.

What lockstep cannot run is refused before any host is reached: a command (`--cmd` is timed by each host's own
iosched), a job that is not run as the catalog has it (a plain job's interactive test runs it beside a write flood,
which no catalog job names), a job fio's server cannot run. Lockstep has no pilot: each test runs the plan's runs
without one, at --settle (else 1 s) between runs.

With --budget, the lockstep tests' time is known once the hosts' plans are in: each test's variants x runs x (a run,
the settle and what a lockstep run costs beyond them, ``FLEET_RUN_OVERHEAD_S``). A plan that cannot fit what the
budget leaves is refused there, before any run, naming the budget that would fit. During the tests the budget holds
as on one host (core/advice/advice_plan.py ``Budgeted``): a run that would end past what it leaves (less
``END_S``) is not begun, every host ends its session and puts its device back as at the end of a test, the
remaining tests are not begun, and each host's advice is decided from the runs it has with the budget's stop (its
``budget`` saying so, so `report` decides the same again): usually cannot tell, with the runs still needed.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from iosched.core.advice.advice_plan import END_S, Budgeted
from iosched.core.advice.decision import decided_again, looks_again
from iosched.core.advice.hosts import HostsAdvice, host_advice, pooled
from iosched.core.advice.model_pool import model_of
from iosched.core.advice.plan import DEFAULT_JOBS, MAX_RUNS, SETTLE_S
from iosched.core.advice.request import parse_goals
from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.base.terminal_text import printable
from iosched.core.documents.document import (
    AdviceBudgetDoc,
    AdviceDoc,
    AdviceHostDoc,
    AdviceTestDoc,
    CompareDoc,
    FleetAdviceDoc,
)
from iosched.core.documents.params import parse_variants
from iosched.core.experiment.events import Note
from iosched.core.experiment.slots import Executor, run_slots
from iosched.core.fleet.fleet import Host, HostRun, OnItsOwn, OnItsOwnCourse
from iosched.core.fleet.fleet_plan import FleetSettings, HostsRun, run_job
from iosched.core.load.jobs import CATALOG

if TYPE_CHECKING:
    from iosched.core.experiment.service import Running, Saver


def goal_job(goal: str, job: str | None) -> str | None:
    """The catalog job a goal's test runs as the catalog has it (None: it runs something else, which lockstep
    cannot: a plain job beside the write flood)."""
    if job is None:
        return DEFAULT_JOBS[goal]  # type: ignore[index]
    if goal == "interactive" and not CATALOG[job].roles:
        return None
    return job


def check_lockstep(s: HostsAdvice) -> list[str]:
    """What a lockstep advice cannot run, refused in one sentence before any host is reached; the goals' jobs."""
    s.check()
    if s.cmd is not None:
        raise BadInput("--lockstep runs catalog jobs through each host's fio server: a command (--cmd) is timed by "
                       "each host's own iosched (drop --lockstep)")
    jobs = []
    for goal in parse_goals(s.goals):
        job = goal_job(goal, s.job)
        if job is None:
            raise BadInput(f"--lockstep: the {goal} test runs {s.job} beside a write flood, which no catalog job names "
                           "(a job with roles, or drop --lockstep)")
        jobs.append(job)
    FleetSettings("none,bfq", runtime=s.runtime, size=s.size).check(list(dict.fromkeys(jobs)))  # the jobs alone
    return jobs


def looked_of(test: AdviceTestDoc, result: CompareDoc, margin: float | None) -> list[int]:
    """The runs the compare held at each look the test took on them, as the advice on one host takes them: a look
    at the first run by which every variant had that many, until the looks are done (a candidate won at ``margin``
    or every candidate left); a look the runs never reached is not taken."""
    counts = dict.fromkeys(test.variants, 0)
    wanted, reached = list(test.looks), []
    for i, r in enumerate(result.runs, 1):
        if r.variant in counts:
            counts[r.variant] += 1
        while wanted and min(counts.values()) >= wanted[0]:
            reached.append(i)
            wanted.pop(0)
    out: list[int] = []
    for count in reached:
        out.append(count)
        if looks_again(replace(test, result=result, looked=out), margin).done:
            break
    return out


MAX_TEST_RUN_S = 3600.0  # one run of a host's plan: a lockstep host waits out a run at most an hour (fleet's idle_s)


def plan_fault(doc: AdviceDoc) -> str | None:
    """Why a host's plan cannot be run in lockstep as it stands (None: it can): a host's plan is outside input, so
    its variants are read through --schedulers' own parser and its runs and run length held to what `advise` plans."""
    if not doc.tests:
        return "its plan has no test"
    for t in doc.tests:
        try:
            labels = [v.label for v in parse_variants(",".join(t.variants))]
        except BadInput:
            labels = []
        if labels != list(t.variants):
            return f"its {t.goal} test names variants iosched would not ({printable(','.join(t.variants)[:120])})"
        if not 1 <= t.runs <= MAX_RUNS or not 0 < t.run_s <= MAX_TEST_RUN_S or not t.looks or t.looks[-1] > t.runs:
            return f"its {t.goal} test plans {t.runs} runs of {t.run_s:g} s, beyond what advise plans"
    return None


# What a lockstep run costs beyond its runtime and settle: its window (0.11 s past the runtime) and the wait to the
# next run's load (1.45-1.51 s: fio's server starting the job, the round trips), docs/performance.md, "A fleet in
# lockstep" (bench/fleet_lockstep.py).
FLEET_RUN_OVERHEAD_S = 1.6


def lockstep_run_s(test: AdviceTestDoc, settle: float) -> float:
    """One lockstep run of ``test``, as planned: its runtime, the settle and the fleet's own cost."""
    return test.run_s + settle + FLEET_RUN_OVERHEAD_S


def lockstep_s(tests: Sequence[AdviceTestDoc], settle: float) -> float:
    """The lockstep tests' time at most: every variant's planned runs, each test's put-back and save after it."""
    return sum(len(t.variants) * t.runs * lockstep_run_s(t, settle) + END_S for t in tests)


def over_budget(tests: Sequence[AdviceTestDoc], settle: float, budget_s: float, spent_s: float) -> str | None:
    """Why the lockstep tests cannot run in what the budget leaves (None: they fit), in one sentence."""
    need = lockstep_s(tests, settle)
    if spent_s + need <= budget_s:
        return None
    fit = math.ceil(spent_s + need)
    return (f"--lockstep: the tests run their plan's runs on every host together, about {need:.0f} s, past the "
            f"{max(budget_s - spent_s, 0.0):.0f} s the --budget of {budget_s:g} s leaves after the hosts' plans: "
            f"--budget {fit}s would fit, or drop --lockstep (each host on its own, as compare's --independent: its "
            "own pilot, and its tests stop at the budget); nothing was changed on any host")


def held_to(deadline: float, run_s: float, clock: Callable[[], float], held: list[Budgeted[list[HostRun]]]
            ) -> Callable[[Executor[list[HostRun]]], Executor[list[HostRun]]]:
    """A lockstep test's executor held to the budget's deadline (each run ``run_s`` until one is measured), kept in
    ``held`` so the caller learns whether it stopped there."""
    def hold(inner: Executor[list[HostRun]]) -> Executor[list[HostRun]]:
        held.append(Budgeted(inner, deadline, run_s, clock, []))
        return held[-1]
    return hold


def same_plan(a: AdviceDoc, b: AdviceDoc) -> str | None:
    """Why ``b``'s tests cannot run in lockstep with ``a``'s (None: they can)."""
    ta = [(t.goal, t.metric, t.variants, t.runs, t.looks) for t in a.tests]
    tb = [(t.goal, t.metric, t.variants, t.runs, t.looks) for t in b.tests]
    if ta == tb:
        return None
    for x, y in zip(ta, tb, strict=False):
        if x != y:
            return (f"its plan differs from the first host's ({x[0]}: {','.join(y[2])[:160]} x {y[3]} runs, not "
                    f"{','.join(x[2])[:160]} x {x[3]}): a host on its own runs its own plan (drop --lockstep)")
    return "its plan has other goals than the first host's (drop --lockstep)"


@dataclass
class LockstepAdvicePlan:
    """Every host's plan, then each goal's test in lockstep: the service's plan (check, hold, go, judged,
    finished)."""

    settings: HostsAdvice
    hosts: list[Host]
    started: float = field(default_factory=time.time)
    # Who plans and who runs the tests when it is not the hosts over SSH: a test's simulation
    # (core/fleet/simulated_hosts.py runs the lockstep slots).
    planner: Callable[[HostsAdvice, Sequence[Host], Callable[[str, str], None]], OnItsOwn] | None = None
    hosts_run: HostsRun | None = None
    clock: Callable[[], float] = time.monotonic  # the budget's clock (a test's: a fake one)
    start: float = 0.0  # the budget's clock as the advice began (set by ``go``)
    planned_s: float = 0.0  # spent before the first lockstep run: the hosts' plans
    stopped: bool = False  # the tests stopped at the budget

    def check(self) -> None:
        check_lockstep(self.settings)

    def hold(self, saver: Saver[FleetAdviceDoc] | None) -> AbstractContextManager[LockstepAdvicePlan]:
        return contextlib.nullcontext(self)  # no device here: each host holds its own

    def go(self, run: Running[FleetAdviceDoc]) -> FleetAdviceDoc:
        s = self.settings
        start = self.start = self.clock()
        settle = s.settle if s.settle is not None else SETTLE_S
        run.emit(Note(f"advise on {len(self.hosts)} hosts in lockstep: each host's plan first (nothing changed), then "
                      "each goal's test with every variant on every host together, pooled per device model"))

        def said(host: str, line: str) -> None:
            run.emit(Note(printable(line), host=host))

        planner = (self.planner(s, self.hosts, said) if self.planner is not None else
                   OnItsOwn(self.hosts, self.plan_argv, said, s.ssh, s.iosched))
        planned = run_slots(OnItsOwnCourse(), planner, planner.runs, lambda runs, save: None, run.emit, run.ctl)
        entries = {r.host.name: self.planned_entry(r) for r in planned}
        docs: dict[str, AdviceDoc] = {}
        first: AdviceDoc | None = None
        for r in planned:
            e = entries[r.host.name]
            if e.status != "done" or e.result is None:
                continue
            first = first or e.result
            why = same_plan(first, e.result)
            if why is not None:
                entries[r.host.name] = replace(e, status="failed", reason=why, result=None)
            else:
                docs[r.host.name] = e.result
        results: dict[str, dict[int, CompareDoc]] = {h: {} for h in docs}

        def document() -> FleetAdviceDoc:
            return FleetAdviceDoc(kind="advice_fleet", mode="lockstep", started=self.started, finished=time.time(),
                                  goals=s.goals, alpha=s.alpha, hosts=[self.advised(entries[h.name], docs, results)
                                                                       for h in self.hosts], models=[])

        self.planned_s = self.clock() - start
        deadline: float | None = None
        if first is not None and s.budget_s is not None:
            why = over_budget(first.tests, settle, s.budget_s, self.planned_s)
            if why is not None:
                raise BadInput(why)
            deadline = start + s.budget_s - END_S
        if first is not None:
            for i, test in enumerate(first.tests):
                live = [h for h in self.hosts if h.name in docs]
                if not live:
                    break
                held: list[Budgeted[list[HostRun]]] = []
                if deadline is not None and self.clock() + lockstep_run_s(test, settle) > deadline:
                    self.stop_at_budget(run)  # not even one run: the hosts are not reached
                    break
                job = goal_job(test.goal, s.job)
                assert job is not None  # check_lockstep refused the rest
                fs = FleetSettings(",".join(test.variants), repeat=test.runs, runtime=test.run_s, size=s.size,
                                   settle=settle, alpha=s.alpha,
                                   metric=test.metric, ssh=s.ssh, iosched=s.iosched)
                run.emit(Note(f"{test.goal}: {job}, {len(test.variants)} variants x {test.runs} runs on "
                              f"{len(live)} hosts in lockstep"))
                fleet = run_job(fs, live, job, self.started, None, run.emit, lambda _doc: None, run.ctl,
                                self.hosts_run, None if deadline is None else
                                held_to(deadline, lockstep_run_s(test, settle), self.clock, held))
                if any(b.stopped for b in held):
                    self.stop_at_budget(run)
                for h in fleet.hosts:
                    if h.status == "done" and h.result is not None:
                        if h.result.runs:  # a test stopped before its first run was not begun
                            results[h.host][i] = h.result
                        entries[h.host] = replace(entries[h.host], scheduler_after=h.scheduler_after,
                                                  put_back=h.put_back)  # as the controller found it after the test
                    else:
                        docs.pop(h.host, None)
                        entries[h.host] = replace(entries[h.host], status="failed", result=None,
                                                  reason=f"its {test.goal} test: {h.reason or h.status}",
                                                  scheduler_after=h.scheduler_after, put_back=h.put_back)
                run.keep(self.judged(document()))
                if self.stopped:
                    break
        return document()

    def stop_at_budget(self, run: Running[FleetAdviceDoc]) -> None:
        self.stopped = True
        run.emit(Note(f"the budget ({self.settings.budget_s:g} s) leaves no time for another run: the tests stop "
                      "here, every host's device put back, and each host's answer is what its runs show"))

    def plan_argv(self, host: Host) -> list[str]:
        """The plan a host's iosched makes, changing nothing."""
        return [*self.settings.remote_argv(host), "--dry-run"]

    def planned_entry(self, r: HostRun) -> AdviceHostDoc:
        """A host's plan as its entry: its planned advice read whole, or why not."""
        status, reason, result = r.status, r.reason or None, None
        if r.answer is not None:
            try:
                result = host_advice(r.host.name, r.answer)
            except (BadInput, IoschedError) as e:
                status, reason = "failed", f"its plan did not read back: {e}"
        if result is not None and result.status != "planned" and status == "done":
            status, reason, result = "failed", "it sent no plan", None
        if result is not None and (fault := plan_fault(result)) is not None:
            status, reason, result = "failed", fault, None
        model, firmware = model_of(result) if result is not None else (None, None)
        return AdviceHostDoc(host=r.host.name, device=r.host.device, status=status, reason=reason,
                             scheduler_before=r.before, scheduler_after=r.after, put_back=r.put_back, model=model,
                             firmware=firmware, result=result)

    def advised(self, e: AdviceHostDoc, docs: dict[str, AdviceDoc],
                results: dict[str, dict[int, CompareDoc]]) -> AdviceHostDoc:
        """A host's planned advice with its tests' runs so far, decided from them (status final once every test
        ran)."""
        doc = docs.get(e.host)
        if doc is None:
            return e
        ran = results.get(e.host, {})
        margin = doc.rule.margin
        tests = [replace(t, result=ran[i], looked=looked_of(t, ran[i], margin), pilot=None) if i in ran else t
                 for i, t in enumerate(doc.tests)]
        done = len(ran) == len(doc.tests) or self.stopped
        conditions = next((c.conditions for c in ran.values() if c.conditions is not None), doc.conditions)
        advice = replace(doc, tests=tests, status="final" if done else "running", finished=time.time(),
                         conditions=conditions, budget=self.budget(tests))
        advice = decided_again(advice)
        model, firmware = model_of(advice)
        return replace(e, status="done" if done else "running", result=advice, model=model, firmware=firmware)

    def budget(self, tests: Sequence[AdviceTestDoc]) -> AdviceBudgetDoc | None:
        """The budget as a host's advice held it: the hosts' plans counted before, and whether its tests stopped at
        it with how many runs their plan still had."""
        s = self.settings
        if s.budget_s is None:
            return None
        planned = sum(len(t.variants) * t.runs for t in tests)
        held = sum(len(t.result.runs) for t in tests if t.result is not None)
        return AdviceBudgetDoc(budget_s=s.budget_s, before_s=self.planned_s, elapsed_s=self.clock() - self.start,
                               stopped=self.stopped, runs_short=max(planned - held, 0) if self.stopped else 0)

    def judged(self, doc: FleetAdviceDoc) -> FleetAdviceDoc:
        return pooled(doc)

    def finished(self, doc: FleetAdviceDoc) -> int:
        """Hosts with a test's runs (a Ctrl-C after the first goal keeps what the hosts ran)."""
        return sum(1 for h in doc.hosts if h.result is not None and any(t.result for t in h.result.tests))
