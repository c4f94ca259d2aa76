"""What `advise` will run, how long it takes and what it changes on the device, decided before anything changes.

The candidates: every scheduler the device offers, plus the few tunings that matter for its class
(core/advice/tunings.py), each against the current setting (the baseline, with the tunables it has now). The tests,
per goal:

- throughput: the workload at full speed (a capture replayed as fast as it goes, a job as written, a command timed);
- latency: the workload at its own pace (a capture at its captured timing, a job at its own rate and depth), judged
  on the tail (p99): a capture's in the block layer, not fio's (fio's replay reaps completions only when its queue
  fills, core/load/replay_latency.py), so without a tracer a capture has no latency test; a command has only its
  wall time, so it has no latency test either;
- interactive: the workload as the foreground (fg) beside a write flood (bg), judged per role: the foreground's
  latency (a command's wall time), the writers' throughput stated as what it costs. A contention job from the
  catalog is such a test already and runs as it is, judged on its own primary metric and trade-off.

With no workload named, each goal's test is the catalog's: a saturating 4k random read, a depth-1 4k random read,
the interactive reader beside a write flood. On a fast device (non-rotational NVMe, SSD, loop or zram) the first two
run ``FAST_RUN_S`` each, with ``FAST_SETTLE_S`` of quiet before each, unless --runtime and --settle say otherwise:
a read there reaches its rate within milliseconds and a second is 10^4-10^6 requests, and a read leaves nothing to
settle; what a short run adds is noise, which the pilot measures and the runs per variant follow.

Each test's time is variants x runs x (one run + settle + the per-run overhead), plus a pilot at the current
setting when the noise is not known yet. A command's run is timed once before the plan (``cmd_source`` with its
seconds); the time already spent (the timing, an --observe capture) counts against the budget too. Over the budget,
the tunings go first (the one that matters least first), then runs per variant, two at a time (the A B B A order
needs whole pairs), down to the first look of the sequential schedule, then a catalog job's run length (when
--runtime did not set it), down to ``MIN_RUN_S``; what was cut is said. ``smallest_s`` is what is left after every
cut: the smallest budget that can decide the goals, stated before asking and in a refusal, whose suggestions are
only those that would fit (``over_budget_words``). Pure: the callers read the device and the workload.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from iosched.core.advice.device_class import DeviceClass
from iosched.core.advice.tunings import Tuning, class_tunings, defaults_why, non_default
from iosched.core.base.errors import BadInput
from iosched.core.documents.metrics import metric_label, split_metric
from iosched.core.documents.params import Variant
from iosched.core.load.fill import FillPlan
from iosched.core.load.jobs import CATALOG, Job
from iosched.core.load.replay_latency import JUDGED, untraced_words
from iosched.core.load.steady import SteadyWait
from iosched.core.statistics.advice_rule import GOALS, Goal
from iosched.core.statistics.sequential import FIRST_LOOK
from iosched.core.statistics.stats import runs_needed

SourceKind = Literal["capture", "replay", "job", "cmd"]
Pace = Literal["full", "own", "foreground"]

DEFAULT_JOBS: dict[Goal, str] = {"throughput": "4k-randread", "latency": "rnd4k-q1t1-read",
                                 "interactive": "interactive-under-writes"}
FLOOD = "2 x 1M sequential writes, depth 16"  # the catalog's write flood (interactive-under-writes, role bg)
MIN_RUNS = FIRST_LOOK  # fewer leave the t-test a handful of degrees of freedom
DEFAULT_RUNS = 8  # per variant, without a pilot's noise: looks at 4, 6 and 8
MAX_RUNS = 16
TARGET_EFFECT = 0.10  # the difference the runs are planned to see, with a pilot's noise
PILOT_RUNS = 3  # at the current setting, per test: the noise, without changing anything
RUN_OVERHEAD_S = 1.5  # per run: the switch, tunables written and read back, fio's start and its result
MAX_RUN_S = 60.0  # a longer capture replays its first minute
CMD_GUESS_S = 10.0  # a command's length when it was not timed (--dry-run runs nothing, so it guesses)
MIN_RUN_S = 5.0  # a catalog job shortened to fit the budget: two of the interactive foreground's bursts, 2.5 s apart
FLOOD_SLOWDOWN = 2.0  # a command timed alone, run beside the write flood: planned at twice its time
SETTLE_S = 1.0  # seconds of quiet before each run, unless --settle says
FAST_KINDS = ("nvme", "ssd", "loop", "zram")  # non-rotational, these are fast devices (not mmc, network, virtual)
FAST_RUN_S = 1.0  # the catalog's throughput and latency runs on a fast device (the catalog's own: 10 s)
# The quiet before each of those runs: reads leave no writeback, no cache to flush; the previous run's fio has exited
# (its requests completed) and a switch drains the queue before it returns: what is left is the kernel's deferred work
# after a switch or an exit, milliseconds.
FAST_SETTLE_S = 0.1
FAST_GOALS: tuple[Goal, ...] = ("throughput", "latency")  # interactive's bursts are 2.5 s apart: its runs stay

GOAL_WORDS: dict[str, str] = {"throughput": "throughput", "latency": "tail latency", "interactive": "interactive use"}


@dataclass(frozen=True)
class WorkloadSource:
    """Where the load comes from: a capture taken by --observe, --replay FILE, --job NAME or --cmd CMD."""

    kind: SourceKind
    ref: str  # the capture's path, the job's name, the command
    seconds: float | None  # one run at its own pace, when known (a capture's duration, a job's runtime)
    writes: bool = False  # running it writes to the target
    job: Job | None = None

    @property
    def name(self) -> str:
        return Path(self.ref).name if self.kind in ("capture", "replay") else self.ref


def job_source(job: Job) -> WorkloadSource:
    return WorkloadSource("job", job.name, job.runtime, job.writes, job)


def capture_source(path: str | Path, duration_s: float, writes: bool, observed: bool = True) -> WorkloadSource:
    return WorkloadSource("capture" if observed else "replay", str(path), duration_s, writes)


def cmd_source(cmd: str, seconds: float | None = None) -> WorkloadSource:
    return WorkloadSource("cmd", cmd, seconds, True)


@dataclass(frozen=True)
class Candidate:
    variant: Variant
    why: str
    source: str | None  # the kernel document behind a tuning
    goals: tuple[Goal, ...]  # the tests it is part of
    keep: int  # a tuning's rank when the budget is short (plain schedulers are never cut)

    @property
    def tuning(self) -> bool:
        return bool(self.variant.settings)


@dataclass(frozen=True)
class PlannedTest:
    goal: Goal
    how: str  # what runs, in words
    source: WorkloadSource
    pace: Pace
    metric: str  # what the goal is judged on
    costs: tuple[str, ...]  # the other figures stated beside it (the other roles')
    variants: tuple[str, ...]  # labels, the current setting first
    runs: int  # per variant
    run_s: float
    writes: bool
    estimated: bool = False  # run_s is a guess (a command not yet timed) or an upper bound (a fast replay)
    settle_s: float = 1.0
    wait_s: float = 0.0  # --steady: the longest wait for steady state before each run (a job of one stream)
    shortens: bool = False  # a catalog job whose length --runtime did not set: its runs may be shortened to fit

    @property
    def seconds(self) -> float:
        return len(self.variants) * self.runs * self.run_s_with_overhead

    @property
    def run_s_with_overhead(self) -> float:
        return self.run_s + self.wait_s + self.settle_s + RUN_OVERHEAD_S


@dataclass(frozen=True)
class Plan:
    device: str
    goals: tuple[Goal, ...]
    baseline: Variant
    candidates: tuple[Candidate, ...]  # those tested, after any cut
    tests: tuple[PlannedTest, ...]
    pilot_s: float  # 0 when the noise is known
    budget_s: float | None
    cuts: tuple[str, ...]
    notes: tuple[str, ...]
    fill: FillPlan | None = None  # --fill: the raw device trimmed and written to a level before the pilot
    steady: SteadyWait | None = None  # --steady: each run of a one-stream job's test waits for steady state first
    offers: tuple[str, ...] = ()  # what another advice would add (an SSD: re-run at ≥ 50% full)
    spent_s: float = 0.0  # already spent before the plan and counted against the budget (--observe, a command timed)

    @property
    def seconds(self) -> float:
        # At most: the fill to its time bound, each wait for steady state to its timeout (PlannedTest.wait_s).
        return (self.fill.most_s if self.fill is not None else 0.0) + self.pilot_s + sum(t.seconds for t in self.tests)

    @property
    def fits(self) -> bool:
        return self.budget_s is None or self.spent_s + self.seconds <= self.budget_s

    @property
    def left_s(self) -> float | None:
        """What the budget leaves for the pilot and the tests, once the observation and the timing are spent."""
        return None if self.budget_s is None else self.budget_s - self.spent_s

    @property
    def variants(self) -> list[Variant]:
        """Every variant any test runs, the current setting first."""
        return [self.baseline, *(c.variant for c in self.candidates)]

    def changes(self) -> list[str]:
        """What changes on the device, in words."""
        schedulers = sorted({c.variant.scheduler for c in self.candidates} - {self.baseline.scheduler})
        settings = sorted({f"{c.variant.scheduler} {k}" for c in self.candidates for k, _ in c.variant.settings})
        out = [f"{self.device}'s scheduler switches among {', '.join([self.baseline.scheduler, *schedulers])}"
               + (f"; tunables written: {', '.join(settings)}" if settings else "")]
        out.append(f"a switch resets the scheduler's tunables and nr_requests; at the end, and on Ctrl-C, SIGTERM or "
                   f"a lost session, everything is put back to {self.baseline.label} (journaled)")
        if self.fill is not None:
            out.append(f"--fill writes the whole of raw {self.fill.device} before the first test: every test runs "
                       "there")
        return out


def _label(scheduler: str, settings: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> str:
    return ":".join([scheduler, *(f"{k}={v}" for k, v in settings)])


def baseline_variant(scheduler: str, tunables: dict[str, str]) -> Variant:
    """What the device has now, as a variant: its scheduler with the tunables that differ from the defaults."""
    settings = non_default(scheduler, tunables)
    return Variant(_label(scheduler, settings), scheduler, tuple(settings))


def waits_for_steady(src: WorkloadSource, pace: Pace) -> bool:
    """Whether a test's runs can wait for steady state (`--steady`): a job of one stream, not beside the flood."""
    return src.kind == "job" and pace != "foreground" and src.job is not None and not src.job.roles


SSD_KINDS = ("nvme", "ssd", "mmc")  # flash whose speed depends on how full it is (not loop, zram or virtual disks)
REFILL_PERCENT = 50.0


def fill_offers(dev: DeviceClass, fill: FillPlan | None, tested_on: str | None = None) -> tuple[str, ...]:
    """For an SSD tested below half full: the same advice again at ≥ 50% full, since its controller works harder
    the fuller it is (and a read of a trimmed block never reaches flash)."""
    if dev.rotational or dev.kind not in SSD_KINDS or (fill is not None and fill.percent >= REFILL_PERCENT):
        return ()
    on = tested_on or dev.name
    now = f"{fill.percent:g}% full" if fill is not None else "as it is"
    return (f"re-run at ≥ {REFILL_PERCENT:g}% full: {dev.name} is an SSD, and one tested {now} may rank the schedulers "
            f"otherwise once it fills (`iosched advise {dev.name} --fill {REFILL_PERCENT:g}%"
            + (f" --on {on}" if on != dev.name else " --on SPARE")
            + f"`: it trims and writes the whole of {'a spare of the same model' if on == dev.name else on} first)",)


def candidates_for(dev: DeviceClass, schedulers: tuple[str, ...] | list[str], baseline: Variant,
                   goals: tuple[Goal, ...]) -> list[Candidate]:
    """Every scheduler offered (its defaults) and the class's tunings for the goals, the baseline left out."""
    seen = {(baseline.scheduler, tuple(sorted(baseline.settings)))}
    out = []
    for s in schedulers:
        if (s, ()) not in seen:
            seen.add((s, ()))
            out.append(Candidate(Variant(s, s), defaults_why(s), None, goals, 1_000))
    tunings: list[Tuning] = class_tunings(dev, schedulers)
    for t in tunings:
        key = (t.scheduler, tuple(sorted(t.settings)))
        mine = tuple(g for g in goals if g in t.goals)
        if key in seen or not mine:
            continue
        seen.add(key)
        out.append(Candidate(Variant(t.label, t.scheduler, t.settings), t.why, t.source, mine, t.keep))
    return out


def _latency_of(metric: str) -> str | None:
    """A role's p99 latency for a contention job's primary metric, when that is a latency."""
    role, base = split_metric(metric)
    if not base.startswith("clat_"):
        return None
    return f"{role}:clat_p99_us" if role else "clat_p99_us"


def _tests_for(goal: Goal, src: WorkloadSource, notes: list[str],
               untraced: str | None = None) -> list[tuple[str, Pace, str, tuple[str, ...]]]:
    """(how, pace, metric, costs) of the test a goal needs with this workload; empty when it has none. ``untraced``:
    why the block layer cannot be traced here, where a capture's latency is measured."""
    name = src.name
    if src.kind in ("capture", "replay"):
        what = "the observed capture" if src.kind == "capture" else name
        if goal == "throughput":
            return [(f"{what} replayed as fast as it goes", "full", "mb_s", ("iops",))]
        if untraced is not None:
            notes.append(f"{untraced_words(untraced)}: no {GOAL_WORDS[goal]} test")
            return []
        if goal == "latency":
            return [(f"{what} replayed at its captured timing, its latency in the block layer", "own", JUDGED,
                     ("mb_s",))]
        return [(f"{what} at its captured timing as the foreground (fg) beside a write flood (bg: {FLOOD}), its "
                 "latency in the block layer", "foreground", f"fg:{JUDGED}", ("bg:mb_s",))]
    if src.kind == "cmd":
        if goal == "throughput":
            return [(f"`{name}` timed", "full", "wall_s", ())]
        if goal == "latency":
            notes.append("a command has only its wall time, no per-request latency: no latency test (its wall "
                         "time is the throughput test)")
            return []
        return [(f"`{name}` timed beside a write flood (--background: {FLOOD})", "foreground", "wall_s",
                 ("bg:mb_s",))]
    job = src.job
    assert job is not None
    if job.roles:
        primary = job.primary or "iops"
        tradeoff = (job.tradeoff,) if job.tradeoff else ()
        if goal == "interactive":
            return [(f"{name} as it is ({job.description})", "foreground", primary, tradeoff)]
        if goal == "throughput" and job.tradeoff:
            return [(f"{name} as it is, judged on its {metric_label(job.tradeoff)}", "full", job.tradeoff,
                     (primary,))]
        latency = _latency_of(primary)
        if goal == "latency" and latency:
            return [(f"{name} as it is, judged on its {metric_label(latency)}", "own", latency, tradeoff)]
        notes.append(f"{name} has no figure for {GOAL_WORDS[goal]}: no test for it")
        return []
    if goal == "throughput":
        return [(f"{name} at full speed ({job.description})", "full", job.primary or "iops", ("clat_p99_us",))]
    if goal == "latency":
        return [(f"{name} as written, at its own rate and depth", "own", "clat_p99_us", ("iops",))]
    return [(f"{name} as the foreground (fg) beside a write flood (bg: {FLOOD})", "foreground", "fg:clat_p99_us",
             ("bg:mb_s",))]


def _run_s(src: WorkloadSource, pace: Pace, notes: list[str]) -> tuple[float, bool]:
    if src.seconds is None:
        notes.append(f"one run of `{src.name}` is guessed at {CMD_GUESS_S:.0f} s: it was not timed (--dry-run runs "
                     "nothing; `advise` times one run before it plans)")
        return CMD_GUESS_S, True
    if src.kind in ("capture", "replay") and src.seconds > MAX_RUN_S:
        notes.append(f"{src.name} lasts {src.seconds:.0f} s: each run replays its first {MAX_RUN_S:.0f} s")
        return MAX_RUN_S, False
    if src.kind == "cmd":
        notes.append(f"one run of `{src.name}` was timed at {src.seconds:.2f} s before this plan (at the current "
                     f"setting)" + (f"; beside the write flood it is planned at {FLOOD_SLOWDOWN:g}x that"
                                    if pace == "foreground" else ""))
        return max(src.seconds * (FLOOD_SLOWDOWN if pace == "foreground" else 1.0), 0.5), True
    return max(src.seconds, 0.5), False


def fast_device(dev: DeviceClass) -> bool:
    """A device whose catalog read tests run short (``FAST_RUN_S``): non-rotational, of a kind known to be fast."""
    return not dev.rotational and dev.kind in FAST_KINDS


def _runs_for(noise: float | None, variants: int, alpha: float, max_runs: int) -> int:
    if noise is None:
        return min(DEFAULT_RUNS, max_runs)
    n = runs_needed(noise, 1.0 + TARGET_EFFECT, alpha / max(1, variants - 1))
    n = max_runs if n is None else n
    n += n % 2
    return max(MIN_RUNS, min(max_runs, n))


def named_candidates(named: Sequence[Variant], baseline: Variant, goals: tuple[Goal, ...]) -> list[Candidate]:
    """``--candidates``: the variants the user named (the current setting left out), each in every goal's test."""
    out: list[Candidate] = []
    seen = {(baseline.scheduler, tuple(sorted(baseline.settings)))}
    for v in named:
        key = (v.scheduler, tuple(sorted(v.settings)))
        if key not in seen:
            seen.add(key)
            out.append(Candidate(v, "named with --candidates", None, goals, 1_000))
    return out


def plan_advice(device: str, dev: DeviceClass, current: str | None, schedulers: tuple[str, ...] | list[str],
                tunables: dict[str, str], goals: tuple[Goal, ...] | list[Goal], source: WorkloadSource | None = None,
                budget_s: float | None = None, noise: Mapping[Goal, float] | None = None, settle_s: float | None = None,
                alpha: float = 0.05, max_runs: int = MAX_RUNS, runtime: float | None = None,
                size: int | None = None, only: Sequence[Variant] | None = None, untraced: str | None = None,
                fill: FillPlan | None = None, tested_on: str | None = None, steady: SteadyWait | None = None,
                spent_s: float = 0.0) -> Plan:
    """The plan for ``device`` (its class ``dev``, its scheduler and tunables now) and ``goals``: candidates, tests,
    time, cut to ``budget_s`` where it can be. ``noise``: a pilot's per-run noise (log scale) per goal. ``runtime``
    and ``size`` scale the catalog's default tests (a job given is scaled by its caller); ``only``: the candidates
    named (``--candidates``) instead of every scheduler and the class's tunings; ``untraced``: why the block layer
    cannot be traced here (a capture then has no latency or interactive test); ``spent_s``: the budget's seconds
    already spent (an --observe capture, a command timed); ``settle_s``: None for the default (``SETTLE_S``, or
    ``FAST_SETTLE_S`` for a fast device's catalog read tests)."""
    goals = tuple(g for g in GOALS if g in goals)
    if not goals:
        raise BadInput("no goal: throughput, latency, interactive or all")
    if current is None or len(schedulers) < 2:
        raise BadInput(f"{device} has {'no IO scheduler' if current is None else 'one scheduler only'}: there is "
                       "nothing to choose")
    if budget_s is not None and not budget_s > 0:
        raise BadInput("the budget must be a positive duration")
    baseline = baseline_variant(current, tunables)
    notes: list[str] = []
    if source is not None and source.kind == "cmd" and goals == ("latency",):
        raise BadInput("a command has only its wall time, so --goal latency cannot judge it: use --goal "
                       "throughput or interactive")
    if only is not None:
        missing = [v.scheduler for v in only if v.scheduler not in schedulers]
        if missing:
            raise BadInput(f"{device} has no scheduler {missing[0]}; it offers {', '.join(schedulers)}")
        cands = named_candidates(only, baseline, goals)
        if not cands:
            raise BadInput(f"--candidates names only what {device} has now ({baseline.label}): nothing to compare")
    else:
        cands = candidates_for(dev, schedulers, baseline, goals)
    tests: list[PlannedTest] = []
    fast = source is None and fast_device(dev) and (runtime is None or settle_s is None)
    for goal in goals:
        short = fast and goal in FAST_GOALS
        src = source or job_source(CATALOG[DEFAULT_JOBS[goal]].scaled(
            runtime=FAST_RUN_S if short and runtime is None else runtime, size=size))
        settle = FAST_SETTLE_S if short and settle_s is None else SETTLE_S if settle_s is None else settle_s
        for how, pace, metric, costs in _tests_for(goal, src, notes, untraced):
            run_s, guessed = _run_s(src, pace, notes)
            labels = tuple([baseline.label, *(c.variant.label for c in cands if goal in c.goals)])
            runs = _runs_for((noise or {}).get(goal), len(labels), alpha, max_runs)
            writes = src.writes or pace == "foreground"
            waits = steady is not None and waits_for_steady(src, pace)
            if steady is not None and not waits:
                notes.append(f"the {GOAL_WORDS[goal]} test's runs do not wait for steady state: fio judges one "
                             "stream, and this test runs several, a command or a capture")
            tests.append(PlannedTest(goal, how, src, pace, metric, costs, labels, runs, run_s, writes,
                                     guessed or (pace == "full" and src.kind in ("capture", "replay")) or waits,
                                     settle, float(steady.timeout_s) if steady is not None and waits else 0.0,
                                     src.kind == "job" and runtime is None and run_s > MIN_RUN_S))
    if not tests:
        if untraced is not None and source is not None and source.kind in ("capture", "replay"):
            raise BadInput(f"{untraced_words(untraced)}, so --goal {','.join(goals)} cannot judge it: use --goal "
                           "throughput, or run where block tracing works")
        raise BadInput("no test can judge these goals with this workload")
    if fast and any(t.goal in FAST_GOALS for t in tests):
        which = " and ".join(GOAL_WORDS[g] for g in FAST_GOALS if g in goals)
        length = f"{FAST_RUN_S:g} s (--runtime sets them)" if runtime is None else f"{runtime:g} s"
        quiet = f", with {FAST_SETTLE_S:g} s of quiet before each (--settle sets it)" if settle_s is None else ""
        notes.append(f"a fast device ({dev.kind}, non-rotational): the catalog's {which} runs last {length}{quiet}: "
                     "a read there reaches its rate at once and leaves nothing to settle")
    notes = list(dict.fromkeys(notes))
    pilot_s = 0.0 if noise else pilot_seconds(tests)
    plan = Plan(device, goals, baseline, tuple(cands), tuple(tests), pilot_s, budget_s, (), tuple(notes), fill,
                steady, fill_offers(dev, fill, tested_on), spent_s)
    return grow_to_budget(fit_budget(plan), max_runs)


def pilot_seconds(tests: Sequence[PlannedTest]) -> float:
    """The pilot's time: ``PILOT_RUNS`` of each test at the current setting."""
    return sum(PILOT_RUNS * (t.run_s + t.wait_s + t.settle_s) for t in tests)


def shortened(t: PlannedTest, run_s: float) -> PlannedTest:
    """A catalog job's test with runs of ``run_s`` (never longer than planned, never under ``MIN_RUN_S``)."""
    if not t.shortens or t.source.job is None:
        return t
    run_s = max(MIN_RUN_S, min(t.run_s, run_s))
    return replace(t, run_s=run_s, source=job_source(t.source.job.scaled(runtime=run_s)))


def after_pilot(plan: Plan, noise: Mapping[Goal, float | None], alpha: float = 0.05) -> Plan:
    """The accepted plan once a pilot measured each goal's noise: runs per variant as that noise needs for a 10%
    difference, never more than were accepted (the plan said "at most"), never fewer than the first look."""
    tests = []
    for t in plan.tests:
        sd = noise.get(t.goal)
        runs = t.runs if sd is None else min(t.runs, _runs_for(sd, len(t.variants), alpha, t.runs))
        tests.append(replace(t, runs=max(MIN_RUNS, runs)))
    return replace(plan, tests=tuple(tests), pilot_s=0.0)


def grow_to_budget(plan: Plan, max_runs: int = MAX_RUNS) -> Plan:
    """A plan that fits its budget with room to spare runs more per variant, two at a time, up to ``max_runs``:
    the budget is the most it may take, and a noisy device needs the runs (the pilot trims them where the noise
    allows fewer). Without a budget, or with a pilot's noise already known, the plan stays as it is."""
    if plan.budget_s is None or not plan.fits or not plan.pilot_s:
        return plan
    while True:
        more = replace(plan, tests=tuple(replace(t, runs=t.runs + 2) if t.runs + 2 <= max_runs else t
                                         for t in plan.tests))
        if more == plan or not more.fits:
            return plan
        plan = more


def fit_budget(plan: Plan) -> Plan:
    """The plan cut to its budget: the tunings first (lowest keep first), then runs per variant, two at a time,
    down to MIN_RUNS, then a catalog job's run length, down to MIN_RUN_S; each cut said. A plan that cannot fit
    comes back over budget (``fits`` False), cut as far as it goes: its time is then ``smallest_s``."""
    if plan.fits:
        return plan
    cuts: list[str] = list(plan.cuts)
    for cand in sorted((c for c in plan.candidates if c.tuning), key=lambda c: c.keep):
        if plan.fits:
            break
        plan = _without(plan, cand)
        cuts.append(f"left out {cand.variant.label} ({cand.why})")
    runs = max((t.runs for t in plan.tests), default=MIN_RUNS)
    start = runs
    while not plan.fits and runs > MIN_RUNS:
        runs -= 2
        plan = replace(plan, tests=tuple(replace(t, runs=min(t.runs, max(runs, MIN_RUNS))) for t in plan.tests))
    if runs < start:
        cuts.append(f"at most {max(runs, MIN_RUNS)} runs per variant instead of {start}")
    longest = max((t.run_s for t in plan.tests if t.shortens), default=0.0)
    run_s = longest
    while not plan.fits and run_s > MIN_RUN_S:
        run_s = max(MIN_RUN_S, run_s - 1.0)
        plan = _with_runs_of(plan, run_s)
    if run_s < longest:
        cuts.append(f"runs of {run_s:g} s instead of {longest:g} s (--runtime sets a run's length)")
    return replace(plan, cuts=tuple(cuts))


def _without(plan: Plan, cand: Candidate) -> Plan:
    kept = tuple(c for c in plan.candidates if c is not cand)
    tests = tuple(replace(t, variants=tuple(v for v in t.variants if v != cand.variant.label)) for t in plan.tests)
    return replace(plan, candidates=kept, tests=tests)


def _with_runs_of(plan: Plan, run_s: float) -> Plan:
    tests = tuple(shortened(t, run_s) for t in plan.tests)
    return replace(plan, tests=tests, pilot_s=pilot_seconds(tests) if plan.pilot_s else 0.0)


def _smallest(plan: Plan, goals: Sequence[Goal] | None = None, variants: int | None = None,
              run_s: float | None = None) -> float:
    """The plan's time cut as far as it goes: no tunings, ``MIN_RUNS`` a variant, a catalog job's runs at
    ``MIN_RUN_S``; only ``goals``' tests, at most ``variants`` a test (the baseline counted), every run of
    ``run_s`` (a shorter capture, command or --runtime), when given."""
    tuned = {c.variant.label for c in plan.candidates if c.tuning}
    tests = []
    for t in plan.tests:
        if goals is not None and t.goal not in goals:
            continue
        labels = tuple(v for v in t.variants if v not in tuned)
        if variants is not None:
            labels = labels[:variants]
        t = replace(t, variants=labels, runs=MIN_RUNS)
        t = shortened(t, MIN_RUN_S) if run_s is None else replace(t, run_s=run_s)
        tests.append(t)
    fill = plan.fill.seconds if plan.fill is not None else 0.0
    return fill + (pilot_seconds(tests) if plan.pilot_s else 0.0) + sum(t.seconds for t in tests)


def smallest_s(plan: Plan) -> float:
    """The smallest budget that can decide the plan's goals: every cut made, the time already spent counted."""
    return plan.spent_s + _smallest(plan)


def smallest_per_goal(plan: Plan) -> list[tuple[Goal, float]]:
    """Each goal's smallest budget alone (the time already spent counted): what `--goal G` would need."""
    return [(g, plan.spent_s + _smallest(plan, goals=(g,))) for g in plan.goals if any(t.goal == g for t in plan.tests)]


def over_budget_words(plan: Plan, runtime_given: bool = False, form: bool = False) -> str:
    """Why the plan is refused and only what would fit: a budget of at least ``smallest_s``, the goals that fit
    alone, one candidate, shorter runs of what can be shortened (a capture, a command, --runtime), each checked
    against the budget. ``form``: said for a screen whose fields are the goal and the budget (no flags)."""
    budget = plan.budget_s or 0.0
    ways = [f"--budget {budget_words(smallest_s(plan))} or more"]
    alone = [g for g, s in smallest_per_goal(plan) if s <= budget] if len(plan.goals) > 1 else []
    if alone:
        ways.append(f"--goal {alone[0]} alone" + (f" (or {', '.join(alone[1:])})" if alone[1:] else ""))
    if form:
        ways = [f"a budget of {budget_words(smallest_s(plan))} or more"]
        ways += [f"the goal {alone[0]} alone" + (f" (or {', '.join(alone[1:])})" if alone[1:] else "")] if alone else []
        return (f"the plan needs at least {budget_words(smallest_s(plan))}, more than the budget "
                f"{budget_words(budget)}: give " + ", or ".join(ways) + " (nothing was changed)")
    if plan.spent_s + _smallest(plan, variants=2) <= budget:
        plain = [c.variant.label for c in plan.candidates if not c.tuning]
        ways.append(f"one candidate (--candidates {plain[0] if plain else 'NAME'})")
    kind = plan.tests[0].source.kind if plan.tests else "job"
    if kind != "job" or runtime_given:
        # Every test runs the one workload: its time is a + b x (one run's length), solved for the length that fits.
        a = plan.spent_s + _smallest(plan, run_s=0.0)
        b = plan.spent_s + _smallest(plan, run_s=1.0) - a
        if kind == "capture":  # a shorter --observe shortens the capture's own time too
            b += 1.0
            a -= plan.spent_s
        longest = (budget - a) / b if b > 0 else 0.0
        if longest >= 1.0:
            ways.append({"capture": f"a shorter --observe (at most {longest:.0f} s)",
                         "replay": f"a shorter capture to replay (at most {longest:.0f} s a run)",
                         "cmd": f"a shorter command (at most {longest:.1f} s a run)"}.get(kind, f"--runtime "
                                                                                          f"{int(longest)}"))
    spent = f" ({duration_words(plan.spent_s)} of it spent before the plan)" if plan.spent_s >= 1 else ""
    return (f"the plan needs at least {budget_words(smallest_s(plan))}{spent}, more than --budget "
            f"{budget_words(budget)}: give " + ", or ".join(ways) + " (nothing was changed)")


def budget_words(s: float) -> str:
    """A duration as --budget reads it, rounded up: 90s, 4m."""
    if s < 120:
        return f"{math.ceil(s)}s"
    return f"{math.ceil(s / 60)}m"


def duration_words(s: float) -> str:
    """A plan's time as a person reads it: seconds, minutes or hours."""
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def plan_lines(plan: Plan, target: str | None = None) -> list[str]:
    """The plan as `advise` prints it before anything changes: time first (with the smallest budget that can decide
    each goal), then the tests, then the changes and where the tests write (``target``, in words)."""
    budget = "" if plan.budget_s is None else f" of a {duration_words(plan.budget_s)} budget"
    spent = f" (and {duration_words(plan.spent_s)} spent before it)" if plan.spent_s >= 1 else ""
    past = plan.spent_s + plan.seconds - (plan.budget_s or 0.0)
    over = "" if plan.fits else f" (over budget by {duration_words(past)})"
    lines = [f"plan for {plan.device} ({', '.join(GOAL_WORDS[g] for g in plan.goals)}): at most about "
             f"{duration_words(plan.seconds)}{spent}{budget}{over}"]
    per_goal = smallest_per_goal(plan)
    least = "; ".join(f"{GOAL_WORDS[g]} {budget_words(s)}" for g, s in per_goal)  # rounded up, as --budget reads
    lines.append(f"  smallest budget that can decide: {least}" + (
        f"; all together {budget_words(smallest_s(plan))}" if len(per_goal) > 1 else ""))
    lines.append(f"  baseline: {plan.baseline.label} (what {plan.device} has now)")
    for c in plan.candidates:
        cite = f"; {c.source}" if c.source else ""
        lines.append(f"  candidate {c.variant.label}: {c.why}{cite}")
    if plan.fill is not None:
        lines.append(f"  first: {plan.fill.words()}")
    if plan.steady is not None:
        lines.append(f"  each run of a one-stream job waits for steady state first: {plan.steady.words()}; a run "
                     "whose wait times out is kept, marked")
    if plan.pilot_s:
        lines.append(f"  pilot: {PILOT_RUNS} runs of each test at {plan.baseline.label} to measure the noise, about "
                     f"{duration_words(plan.pilot_s)}; {plan.baseline.scheduler} is put in place as every variant "
                     "is (switched away and back once, so its tunables are the kernel's defaults with "
                     f"{plan.baseline.label}'s own written), and put back as found at the end")
    for t in plan.tests:
        costs = f"; also stated: {', '.join(metric_label(c) for c in t.costs)}" if t.costs else ""
        lines.append(f"  {GOAL_WORDS[t.goal]}: {t.how}; judged on {metric_label(t.metric)}{costs}")
        lines.append(f"    {len(t.variants)} variants x {t.runs} runs x {t.run_s_with_overhead:.0f} s = "
                     f"{duration_words(t.seconds)}{_estimate_words(t)}; a clearly worse variant leaves early")
    lines += [f"  cut to fit: {c}" for c in plan.cuts]
    lines += [f"  on the device: {c}" for c in plan.changes()]
    if target is not None:
        lines.append(f"  the tests write to: {target}")
    lines += [f"  note: {n}" for n in plan.notes]
    lines += [f"  offer: {o}" for o in plan.offers]
    if plan.budget_s is not None:
        lines.append("  at the budget the tests stop, whatever they reached, and the answer is what their runs show")
    return lines


def _estimate_words(t: PlannedTest) -> str:
    if not t.estimated:
        return ""
    if t.source.kind == "cmd":
        return " (a guess: not timed)" if t.source.seconds is None else " (from one timed run)"
    return " (at most)"


def runs_total(plan: Plan) -> int:
    return sum(len(t.variants) * t.runs for t in plan.tests)
