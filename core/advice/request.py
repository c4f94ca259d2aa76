"""`iosched advise` up to the point where it asks: what the user asked for (``AdviceRequest``), checked; the first two
steps (observe the device and, with ``--observe``, its workload; plan the candidates and tests against the budget);
and where the tests would write. Both front ends go through here, then show the plan and, once accepted, run
``Prepared.plan_to_run`` through the experiment service. Nothing here changes the device (a capture only reads it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from iosched.core.advice.advice_plan import AdvicePlan, check_plan, new_advice, where_tests_write, workload_doc
from iosched.core.advice.cmd_timing import time_command
from iosched.core.advice.loads import load_of
from iosched.core.advice.observe import Observation, observe
from iosched.core.advice.plan import (
    MIN_RUNS,
    PILOT_RUNS,
    SETTLE_S,
    Plan,
    WorkloadSource,
    capture_source,
    cmd_source,
    job_source,
    over_budget_words,
    plan_advice,
)
from iosched.core.advice.workload import capture_workload
from iosched.core.base.errors import BadInput
from iosched.core.documents.document import AdviceDoc
from iosched.core.documents.params import BadValue, Variant, parse_alpha, parse_budget_s
from iosched.core.experiment.local_plan import Runs
from iosched.core.experiment.results import default_results_dir
from iosched.core.kernel.devices import read_device
from iosched.core.kernel.sysfs import check_device_name
from iosched.core.load.fill import plan_fill
from iosched.core.load.iolog import read_capture
from iosched.core.load.jobs import CATALOG
from iosched.core.load.steady import SteadyWait
from iosched.core.load.targets import Target
from iosched.core.settings.scheduler import available_schedulers, not_listed
from iosched.core.statistics.advice_rule import GOALS, Goal, Rule
from iosched.core.trace.capture import CaptureProgress
from iosched.core.trace.tracer import why_untraceable


def parse_goals(text: str) -> tuple[Goal, ...]:
    """--goal: throughput, latency, interactive, several comma-separated, or all."""
    words = [w.strip().lower() for w in text.split(",") if w.strip()]
    if not words:
        raise BadInput("--goal: throughput, latency, interactive or all")
    if "all" in words:
        return GOALS
    bad = [w for w in words if w not in GOALS]
    if bad:
        raise BadInput(f"--goal {bad[0][:30]!r}: throughput, latency, interactive or all")
    return tuple(g for g in GOALS if g in words)


def parse_budget(text: str) -> float:
    """--budget: 900, 900s, 15m, 2h (between 1 s and a week), as every duration is read
    (core/documents/params.py ``duration_parser``)."""
    try:
        return parse_budget_s(text)
    except BadValue as e:
        raise BadInput(f"--budget: {e}") from None


@dataclass(frozen=True)
class AdviceRequest:
    """What `advise` was asked: the device, goals, workload, budget and where the tests may go."""

    device: str
    goals: tuple[Goal, ...] = GOALS
    observe_s: float | None = None  # --observe DURATION
    replay: str | None = None
    job: str | None = None
    cmd: str | None = None
    budget_s: float | None = None
    on: str | None = None  # a spare device the tests run on
    candidates: tuple[Variant, ...] | None = None
    runtime: float | None = None  # seconds per run (scales a job or the catalog's tests)
    size: int | None = None
    settle: float | None = None  # None: the plan's (core/advice/plan.py: 1 s, less for a fast device's reads)
    alpha: float = 0.05
    target_dir: str | None = None
    destroy_data: str | None = None
    capture_to: Path | None = None  # where --observe writes its capture (default: the results directory's)
    fill: float | None = None  # --fill: the tested device trimmed and written to this percent before the first test
    steady: SteadyWait | None = None  # --steady: each run of a one-stream job waits for steady state first
    time_cmd: bool = True  # a command timed once before the plan, with a budget (False: --dry-run runs nothing)
    started: float | None = None  # the budget's clock (monotonic) at the command's start (None: as prepared)
    root: str | Path = "/"

    @property
    def tested_on(self) -> str:
        return self.on or self.device

    def check(self) -> None:
        """What can be refused before anything is read from the device."""
        given = [f for f, v in (("--observe", self.observe_s), ("--replay", self.replay), ("--job", self.job),
                                ("--cmd", self.cmd)) if v is not None]
        if len(given) > 1:
            raise BadInput(f"{given[0]} and {given[1]} both name the workload: give one")
        check_device_name(self.device, self.root)
        if self.on is not None:
            check_device_name(self.on, self.root)
            if self.on == self.device:
                raise BadInput("--on names a spare device to test on, not the device itself")
        if self.job is not None and self.job not in CATALOG:
            raise BadInput(f"--job {self.job[:40]!r}: advise takes a catalog job (`iosched jobs` lists them); a job "
                           "file is compared with `compare --job FILE`")
        try:
            parse_alpha(self.alpha)  # the flag's own range
        except BadValue as e:
            raise BadInput(f"--alpha {e}") from None
        if self.fill is not None and self.target_dir is not None:
            raise BadInput("--fill writes the whole raw device the tests run on: --dir runs them on a scratch file")


@dataclass
class Prepared:
    """The first two steps done: the device observed (and its workload), the plan made, where the tests write."""

    request: AdviceRequest
    observation: Observation
    plan: Plan
    target: str  # where the tests write, in words
    doc: AdviceDoc  # the advice as planned
    notes: list[str] = field(default_factory=list)  # said before the plan (the spare's class, the capture)

    def plan_to_run(self, runs: Runs | None = None, on_step: Callable[[str, str], None] | None = None,
                    on_target: Callable[[Target], None] | None = None) -> AdvicePlan:
        """The accepted plan as the service's; ``runs``: each run's executor (None: this machine's; a test or a
        bench: a simulation's, core/experiment/simulated.py)."""
        r = self.request
        return AdvicePlan(self.doc, self.plan, r.tested_on, self.observation.device.rotational, runs,
                          Rule(alpha=r.alpha), r.runtime, SETTLE_S if r.settle is None else r.settle, r.target_dir,
                          r.destroy_data, r.root, on_step, on_target, accepted=time.monotonic())


def _source(r: AdviceRequest, summary: list[str], on_progress: Callable[[CaptureProgress], object] | None,
            on_step: Callable[[str, str], None] | None,
            fits: Callable[[WorkloadSource], None] = lambda src: None) -> WorkloadSource | None:
    """The workload named or observed; ``fits`` refuses one the budget cannot hold before it is captured or timed."""
    if r.job is not None:
        return job_source(CATALOG[r.job].scaled(runtime=r.runtime, size=r.size))
    if r.cmd is not None:
        if r.budget_s is None or not r.time_cmd:
            return cmd_source(r.cmd)
        bound = max(1.0, r.budget_s / (PILOT_RUNS + 2 * MIN_RUNS))  # the longest run the smallest plan holds
        if on_step is not None:
            on_step("plan", f"timing one run of `{r.cmd}` at the current setting (at most {bound:.0f} s)")
        return cmd_source(r.cmd, time_command(r.cmd, bound, r.root))
    if r.replay is not None:
        cap = read_capture(r.replay)
        return capture_source(r.replay, cap.meta.duration_s, cap.meta.has_writes, observed=False)
    if r.observe_s is not None:
        out = r.capture_to or default_results_dir(r.root) / "captures" / \
            f"advise-{r.device}-{time.strftime('%Y%m%d-%H%M%S')}.iolog"
        fits(capture_source(out, r.observe_s, False))  # refused before a second of it is captured
        out.parent.mkdir(parents=True, exist_ok=True)
        if on_step is not None:
            on_step("observe", f"capturing {r.device}'s workload for {r.observe_s:g} s into {out}")
        got = capture_workload(r.device, r.observe_s, out, r.root, on_progress)
        if got.interrupted is not None:
            raise got.interrupted
        summary += got.summary.lines()
        if not got.summary.requests:
            raise BadInput(f"{r.device} did no IO in {r.observe_s:g} s: nothing to test; observe longer, or name "
                           "the workload (--job, --cmd, --replay)")
        return capture_source(got.iolog, got.summary.duration_s, got.summary.writes > 0)
    return None


def prepare_advice(r: AdviceRequest, on_progress: Callable[[CaptureProgress], object] | None = None,
                   on_step: Callable[[str, str], None] | None = None) -> Prepared:
    """Observe and plan (the first two steps); BadInput, or Refused (maybe confirmable by typing the tested device's
    name: ask, then prepare again with ``destroy_data``), for what cannot run. Nothing on the device changes."""
    r.check()
    # The budget counts from the command's start: the observation, a capture, a command timed.
    started = r.started if r.started is not None else time.monotonic()
    for device in (r.device, r.on) if r.on is not None else (r.device,):
        # A candidate either disk does not list is refused first, naming the modprobe of one installed, not loaded.
        _, available = available_schedulers(device, r.root)
        for v in r.candidates or ():
            if v.scheduler not in available:
                raise not_listed(device, v.scheduler, available, r.root)
    if on_step is not None:
        on_step("observe", f"{r.device}: its class, its scheduler and who set it")
    obs = observe(r.device, r.root)
    notes: list[str] = []
    schedulers: Sequence[str] = obs.schedulers
    if r.on is not None:
        spare = observe(r.on, r.root)
        schedulers = [s for s in obs.schedulers if s in spare.schedulers]
        a, b = obs.device, spare.device
        if (a.kind, a.rotational, a.model) != (b.kind, b.rotational, b.model):
            notes.append(f"{r.on} is not the same kind of disk as {r.device} ({b.words()}): what it shows may not "
                         f"hold on {r.device}")
    tunables = {t.name: t.value for t in obs.tunables if t.scope == obs.scheduler}
    fill = None
    if r.fill is not None:
        tested = read_device(r.tested_on, r.root)
        if tested is None:
            raise BadInput(f"{r.tested_on} is not a whole-disk block device")
        fill = plan_fill(tested, r.fill, r.root)

    def planned(source: WorkloadSource | None, spent_s: float) -> Plan:
        # A capture's latency is measured in the block layer: where it cannot be traced, no test judges it there.
        replayed = source is not None and source.kind in ("capture", "replay") and r.goals != ("throughput",)
        return plan_advice(r.device, obs.device, obs.scheduler, tuple(schedulers), tunables, r.goals, source,
                           r.budget_s, settle_s=r.settle, alpha=r.alpha, runtime=r.runtime, size=r.size,
                           only=r.candidates, untraced=why_untraceable(r.root) if replayed else None, fill=fill,
                           tested_on=r.tested_on, steady=r.steady, spent_s=spent_s)

    def fits(source: WorkloadSource) -> None:
        ahead = planned(source, time.monotonic() - started + (source.seconds or 0.0))
        if not ahead.fits:
            raise BadInput(f"--observe {r.observe_s:g}s: {over_budget_words(ahead)}")

    summary: list[str] = []
    source = _source(r, summary, on_progress, on_step, fits)
    if on_step is not None:
        on_step("plan", "the candidates, the tests each goal needs, the time against the budget")
    plan = planned(source, time.monotonic() - started if r.budget_s is not None else 0.0)
    check_plan(r.tested_on, plan, r.root)  # the run's own check: a plan printed is one that would run
    target = where_tests_write(r.tested_on, [load_of(t) for t in plan.tests], r.target_dir, r.destroy_data, r.root,
                               fill=fill is not None)
    doc = new_advice(r.device, r.tested_on, plan, obs, target, Rule(alpha=r.alpha), workload_doc(source, summary))
    return Prepared(r, obs, plan, target, doc, notes)
