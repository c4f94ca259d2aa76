"""Waiting for steady state before a run counts, with fio's own steady-state detection (``steadystate=``,
``steadystate_duration=``, ``steadystate_ramp_time=``, fio's HOWTO "Steady state").

Before each run the workload runs once more as a wait: the same job, time based, its runtime the longest wait, with
fio's criterion in the options iosched writes for it. fio ends the job as soon as the criterion holds over its rolling
window (the IOPS or bandwidth slope, or every sample's deviation from the mean, within a bound given as a percentage
of the window's mean, one sample a second), and says in its JSON whether it did (``steadystate.attained``) and what
the criterion last read (``steadystate.criterion``). Then the run itself starts, on a device in the state the wait
left it: its figures are the run's alone. A wait that times out is said ("steady state not reached in 60 s: IOPS
slope -4%/s"), and the run that follows is kept, marked (its ``steady``), never dropped: the verdict's reader decides.

fio 3.33 judges IOPS or bandwidth; at a fixed depth latency follows IOPS (Little's law), so an IOPS slope within its
bound is a latency slope within it too. One stream only: fio judges a reporting group, and a job with roles (several
groups) would stop when the first role settles.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Annotated, Any

from iosched.core.base.errors import BadInput
from iosched.core.base.schema import Keywords
from iosched.core.load.fio_result import FioUnfinished
from iosched.core.load.jobfile import JobFile
from iosched.core.load.jobs import Job
from iosched.core.load.targets import Target
from iosched.core.load.workdirs import workdir_prefix

if TYPE_CHECKING:  # the documents import SteadyWait: a TUI start loads no fio
    from iosched.core.load.fio import FioProgress, FioRun

CRITERIA = {"iops": ("IOPS", False), "iops_slope": ("IOPS", True), "bw": ("bandwidth", False),
            "bw_slope": ("bandwidth", True)}  # fio's name -> (what it measures, a slope)
Seconds = Annotated[int, Keywords(minimum=0, maximum=24 * 3600)]
Value = Annotated[float, Keywords(minimum=-1e15, maximum=1e15)]


@dataclass(frozen=True, kw_only=True)
class SteadyWait:
    """How each run waits for steady state (`--steady`): fio's criterion with its bound as a percentage of the
    window's mean, its window (ss_dur), the ramp before the window opens (ss_ramp) and the longest wait."""

    criterion: str = field(metadata={"doc": 'fio\'s, the bound a percentage of the mean: "iops_slope:1%"'})
    window_s: Seconds = field(metadata={"doc": "fio's steadystate_duration: the rolling window, one sample a second"})
    ramp_s: Seconds = field(metadata={"doc": "fio's steadystate_ramp_time: seconds before the window opens"})
    timeout_s: Seconds = field(metadata={"doc": "the longest wait: past it the run counts, marked"})

    def check(self) -> SteadyWait:
        """Itself, when its window (after the ramp) fits in its longest wait; BadInput otherwise."""
        if self.timeout_s < self.window_s + self.ramp_s:
            raise BadInput(f"--steady-timeout {self.timeout_s} s is shorter than the window fio needs to judge "
                           f"(--steady-ramp {self.ramp_s} s + --steady-window {self.window_s} s)")
        return self

    def options(self) -> list[tuple[str, str]]:
        """fio's own options for the wait."""
        return [("steadystate", self.criterion), ("steadystate_duration", str(self.window_s)),
                ("steadystate_ramp_time", str(self.ramp_s))]

    def words(self) -> str:
        """"IOPS slope within 1%/s of the mean over 10 s (at most 60 s)"."""
        measure, slope, bound = criterion_parts(self.criterion)
        what = f"{measure} slope within {bound}/s" if slope else f"every {measure} sample within {bound}"
        ramp = f", after {self.ramp_s} s of ramp" if self.ramp_s else ""
        return f"{what} of the mean over {self.window_s} s{ramp} (at most {self.timeout_s} s)"


@dataclass(frozen=True, kw_only=True)
class SteadyRun:
    """A run's wait for steady state before it counted (`--steady`): fio's verdict on the wait."""

    reached: bool
    criterion: str = field(metadata={"doc": "the criterion waited for, as fio's option: iops_slope:1%"})
    waited_s: Annotated[float, Keywords(minimum=0, maximum=1e6)]
    value: Value | None = field(default=None, metadata={
        "doc": "fio's last reading of its criterion: % of the window's mean (per second, for a slope)"})
    mean: Value | None = field(default=None, metadata={
        "doc": "the window's mean: IOPS, or bytes/s for a bandwidth criterion"})
    fault: str | None = field(default=None, metadata={"doc": "the wait could not finish (fio was killed): why",
                                                     "absent": True})

    def sentence(self) -> str:
        """"steady state reached after 14 s", or "steady state not reached in 60 s: IOPS slope -4%/s (bound 1%)"."""
        if self.reached:
            return f"steady state reached after {self.waited_s:.0f} s"
        if self.fault is not None:
            return f"steady state not reached: the wait ended early ({self.fault})"
        if self.value is None:
            return f"steady state not reached in {self.waited_s:.0f} s"
        measure, slope, bound = criterion_parts(self.criterion)
        what = f"{measure} slope {_pct(self.value)}/s" if slope else \
            f"{measure} samples up to {_pct(abs(self.value))} from the mean"
        return f"steady state not reached in {self.waited_s:.0f} s: {what} (bound {bound})"


def criterion_parts(criterion: str) -> tuple[str, bool, str]:
    """"iops_slope:1%" -> ("IOPS", True, "1%"): what is measured, whether its slope is judged, the bound."""
    name, _, bound = criterion.partition(":")
    measure, slope = CRITERIA.get(name, ("IOPS", True))
    return measure, slope, bound


def _pct(x: float) -> str:
    return f"{x:.2g}%" if abs(x) < 10 else f"{x:.0f}%"


def why_no_wait(job: object) -> str | None:
    """Why ``job`` cannot wait for steady state, or None: one stream of fio's only."""
    if isinstance(job, Job):
        return "it has roles (fio judges steady state per reporting group)" if job.roles or job.cgroup_weights \
            else None
    if type(job) is not JobFile:  # a replay or a start-up follows its capture, not a rate
        return "a replayed capture follows its own timing" if isinstance(job, JobFile) else \
            "a command is timed, not fio's"
    return "it has two or more job sections (fio judges steady state per reporting group)" if job.role_names \
        else None


def waiting_job(job: Job | JobFile, wait: SteadyWait) -> Job | JobFile:
    """The job as its wait runs it: time based for the longest wait, with fio's steady-state options."""
    if isinstance(job, Job):
        return replace(job, runtime=float(wait.timeout_s), extra={**job.extra, **dict(wait.options())})
    # Options first in [global]: they apply to every section after it (render() keeps them under its own [global]).
    return JobFile(job.path, (("global", tuple(wait.options())), *job.sections))


def read_steady(raw: dict[str, Any], waited_s: float, criterion: str) -> SteadyRun:
    """fio's steady-state verdict from its JSON (outside input: anything that does not read is "not reached")."""
    jobs = raw.get("jobs")
    ss = jobs[0].get("steadystate") if isinstance(jobs, list) and jobs and isinstance(jobs[0], dict) else None
    if not isinstance(ss, dict):
        return SteadyRun(reached=False, criterion=criterion, waited_s=waited_s,
                         fault="fio said nothing of steady state")
    data = ss.get("data") if isinstance(ss.get("data"), dict) else {}
    assert isinstance(data, dict)
    kind = str(ss.get("ss", "")).partition(":")[0]
    mean = _number(data.get("bw_mean" if kind.startswith("bw") else "iops_mean"))
    return SteadyRun(reached=ss.get("attained") in (1, True), criterion=criterion, waited_s=waited_s,
                     value=_number(str(ss.get("criterion", "")).rstrip("%")), mean=mean)


def _number(x: object) -> float | None:
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    return v if math.isfinite(v) and abs(v) <= 1e15 else None


def wait_for_steady(job: Job | JobFile, target: Target, wait: SteadyWait,
                    on_progress: Callable[[FioProgress], object] | None = None,
                    holder: Callable[[FioRun], None] | None = None) -> SteadyRun:
    """Run ``job`` on ``target`` until fio finds it steady or the wait times out. A fio killed or failing on its
    own is a wait that did not reach it (said); one stopped (``holder``'s stop(): a cancel) raises FioFailed."""
    from iosched.core.load.fio import FioRun, command  # here: the documents import this module's types

    waiting = waiting_job(job, wait)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=workdir_prefix()) as work:
        run = FioRun(command(waiting, target, work, float(wait.timeout_s) if isinstance(job, JobFile) else None),
                     on_progress)  # no expected length: reaching steady state ends it early
        if holder is not None:
            holder(run)
        try:
            result = run.run(timeout=wait.timeout_s * 3 + 120.0)
        except FioUnfinished as e:
            return SteadyRun(reached=False, criterion=wait.criterion, waited_s=time.monotonic() - t0,
                             fault=str(e)[:200])
    return read_steady(result.raw, min(result.runtime_s, time.monotonic() - t0), wait.criterion)

