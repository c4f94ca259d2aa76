"""The experiment documents as declared types: what `compare --save`, a matrix's file and `--json` hold.

Field names are the JSON keys. A field without a default is one every writer of this schema version writes
(core/experiment/runner.py, matrix.py ``new_document`` and service.py, core/fleet/lockstep.py and fleet_plan.py,
core/statistics/verdict.py ``judge`` and matrix_judge.py); a field with a default may be absent (a file from an
older iosched, a matrix saved while it runs) and its default says what absence means. fio's own JSON stays an open
``JsonObject``: its keys are fio's, not ours.

Declaring them costs about 35 ms at import (a dataclass is built at run time): only what writes, judges or reads
documents imports this; ``SCHEMA_VERSION`` alone is core/documents/schema_version.py's.
``published_schemas()`` makes docs/schema/ from these types (docs/make_schema.py writes the files;
tests/test_schema.py fails when they differ, and validates real output against them). A saved file is read back
into them by core/base/decode.py (core/documents/saved.py): a list field's ``"item"`` metadata and a map's
``"flat"`` name the place of a fault in its messages ("run 3's iops is not a number").
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from iosched.core.base.figures import FIGURE, figure_fault
from iosched.core.base.schema import NON_FINITE, JsonObject, Keywords, Schema, json_schema
from iosched.core.documents.schema_version import SCHEMA_VERSION
from iosched.core.kernel.device_doc import DeviceDoc, DeviceNameDoc
from iosched.core.live.recording_lines import RecordingLine
from iosched.core.load.conditions import ConditionsDoc
from iosched.core.load.iolog import CaptureDoc
from iosched.core.load.replay_lag import ReplayLag
from iosched.core.load.replay_latency import ReplayLatency
from iosched.core.load.startup_timing import StartupTiming
from iosched.core.load.steady import SteadyRun
from iosched.core.settings.journal import JournalFile

if TYPE_CHECKING:
    from iosched.core.trace.runs import OpWindow, TraceWindow

Status = Literal["running", "interim", "final", "cancelled"]
Count = Annotated[int, Keywords(minimum=0)]
# A time in seconds: anything larger is not one iosched wrote.
Measured = Annotated[float, Keywords(minimum=-1e15, maximum=1e15)]
# A run's figure: 0, or between 1e-12 and 1e15 in size (core/base/figures.py, the one rule wherever it comes from).
Figure = Annotated[float, FIGURE]
# A statistic of the runs: judged again on every read, and NaN or Infinity where Python's writer put one.
Statistic = Annotated[float, NON_FINITE]
Pair = tuple[Statistic, Statistic]  # an interval: low, high
CompareReason = Literal["too-wide", "two-groups", "too-few-runs", "unjudged", "replay-behind"]  # a cannot-tell's


# --- how the writers leave fields out (core/base/encode.py) --------------------------------------------------------


def _without_roles(job: CatalogJobDoc, outer: tuple[Any, ...]) -> bool:
    return job.roles is None  # a job with roles says its primary and trade-off, null or not


def _run_order(outer: tuple[Any, ...]) -> tuple[str, ...]:
    """A run's keys in its writer's order: a turn of a live alternation says why it is invalid last."""
    if outer and isinstance(outer[-1], AlternationDoc):
        return ("index", "variant", "start", "end", "valid", "config", "metrics", "fio", "invalid_reason", "trace",
                "replay", "latency", "startup", "steady")
    return ("index", "variant", "start", "end", "valid", "invalid_reason", "config", "metrics", "fio", "replay",
            "latency", "trace", "startup", "steady")


def _baseline_cell(cell: CellDoc, outer: tuple[Any, ...]) -> bool:
    return cell.is_baseline  # the baseline's cell compares with nothing


def _in_baseline_cell(entry: SecondaryDoc, outer: tuple[Any, ...]) -> bool:
    return bool(outer) and isinstance(outer[-1], CellDoc) and outer[-1].is_baseline


def _not_sequential_cell(cell: CellDoc, outer: tuple[Any, ...]) -> bool:
    """``decided_at`` is written on every compared cell of a sequential matrix (null: undecided), on none else."""
    return cell.is_baseline or not any(isinstance(o, MatrixJudgementDoc) and o.correction == "sequential holm"
                                       for o in outer)


# --- parts ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class VariantDoc:
    """A scheduler with the settings put in place for it, as `--schedulers` names it."""

    label: str = field(metadata={"doc": 'as the user wrote it, made unique ("none#2" for an A/A check)'})
    scheduler: str
    settings: dict[str, str] = field(default_factory=dict, metadata={"doc": "tunables and queue knobs set"})


@dataclass(frozen=True, kw_only=True)
class CatalogJobDoc:
    """A job of the catalog, as scaled for this experiment."""

    name: str
    group: str
    description: str
    writes: bool
    options: dict[str, str] = field(metadata={"doc": "the job in fio's own option names (with roles: [global])"})
    roles: dict[str, dict[str, str]] | None = field(
        default=None, metadata={"doc": "a contention job's roles: section name -> its fio options", "absent": True})
    primary: str | None = field(default=None, metadata={"doc": "the metric it is judged on unless one is named",
                                                        "absent": _without_roles})
    tradeoff: str | None = field(default=None, metadata={"doc": "the secondary metric that pays for the primary",
                                                         "absent": _without_roles})
    cgroup_weights: dict[str, int] | None = field(
        default=None, metadata={"doc": "role -> the bfq weight of the cgroup iosched ran it in", "absent": True})


@dataclass(frozen=True, kw_only=True)
class JobFileDoc:
    """A user's fio job file, as checked against the allow-list."""

    name: str
    path: str
    writes: bool
    text: str = field(metadata={"doc": "the job file as run, without the target and output options"})


@dataclass(frozen=True, kw_only=True)
class TargetDoc:
    """Where fio wrote: the raw device or a scratch file on its filesystem."""

    device: str
    path: str
    kind: Literal["device", "file"]
    note: str


@dataclass(frozen=True, kw_only=True)
class CmdMetricDoc:
    """A figure read from the command's output after each run (`--cmd-metric NAME=REGEX[:higher|lower]`)."""

    name: str
    pattern: str = field(metadata={"doc": "the regular expression; its last match's group (else the match)"})
    better: Literal["higher", "lower"] | None = field(metadata={"doc": "which way is better, when the user said"})


@dataclass(frozen=True, kw_only=True)
class ReplayDoc:
    """A capture replayed as the workload (`compare --replay FILE`): what it holds and how it was replayed."""

    capture: str = field(metadata={"doc": "the capture's iolog, as given"})
    mode: Literal["fast", "timed"] = field(
        metadata={"doc": "fast: in order, as fast as the device takes it; timed: each request at its time"})
    device: str = field(metadata={"doc": "the device it was captured on"})
    scheduler: str | None = field(metadata={"doc": "the scheduler it was captured under"})
    duration_s: float
    requests: int
    bytes: int = field(metadata={"doc": "read and written"})
    writes: bool = field(metadata={"doc": "whether it writes or discards (replayed only where writes may go)"})
    iodepth: int
    fitted: bool = field(default=False, metadata={
        "doc": "its offsets folded into a smaller target (--replay-fit: modulo the target's size)"})


@dataclass(frozen=True, kw_only=True)
class WorkloadDoc:
    """What ran under each variant: a fio job on a target, or a command (timed), maybe under a background job."""

    job: CatalogJobDoc | JobFileDoc | None
    target: TargetDoc | None
    runtime: float | None = field(metadata={"doc": "seconds, for a job file (a catalog job carries its own)"})
    cmd: str | None
    background: CatalogJobDoc | JobFileDoc | None = field(
        default=None, metadata={"doc": "with cmd: the job loading the target while the command ran (bg:METRIC)",
                                "absent": True})
    cmd_metrics: list[CmdMetricDoc] | None = field(
        default=None, metadata={"doc": "with cmd: figures read from its output, each a metric of the runs",
                                "item": "command metric", "absent": True})
    replay: ReplayDoc | None = field(default=None, metadata={"doc": "with a replayed capture: what it holds",
                                                             "absent": True})

    @property
    def name(self) -> str:
        """Its name, as a matrix names a workload: the job's, or the command's."""
        return self.job.name if self.job is not None else f"cmd: {self.cmd}"


@dataclass(frozen=True, kw_only=True)
class SequentialDoc:
    """The boundary of `--until-verdict`, fixed before the first run."""

    looks: list[Annotated[int, Keywords(minimum=2)]] = field(
        metadata={"doc": "runs per variant (or blocks) at each look"})
    max_per_arm: int
    alpha: float
    level: float = field(metadata={"doc": "the per-look level a p-value must fall below"})
    ci_level: float = 0.95
    design: Literal["two-sample", "paired"]
    method: str


@dataclass(frozen=True, kw_only=True)
class MatrixSequentialDoc:
    """The boundary of a matrix's `--until-verdict`, fixed before the first run (group-sequential Holm)."""

    looks: list[Annotated[int, Keywords(minimum=2)]] = field(metadata={"doc": "runs per cell at each look"})
    max_per_arm: int
    alpha: float
    levels: list[float] = field(
        metadata={"doc": "the per-look level a cell's p-value must fall below once N cells have decided (index N)"})
    ci_level: float = 0.95
    method: str


Bucket = tuple[Count, Count, Count]  # a log2 histogram's non-empty bucket: low µs, high µs (exclusive), count


def _in_range(x: float | None) -> float | None:
    """A traced figure, or None when it is not one a run may keep (core/base/figures.py)."""
    return x if x is not None and figure_fault(x) is None else None


def _op_doc(op: OpWindow | None) -> TraceOpDoc | None:
    if op is None:
        return None
    return TraceOpDoc(ios=op.ios, mean_us=_in_range(op.mean_us), p50_us=_in_range(op.p50_us),
                      p99_us=_in_range(op.p99_us))


@dataclass(frozen=True, kw_only=True)
class TraceOpDoc:
    """One operation's requests over a run (reads or writes) and their total time in the block layer."""

    ios: Count
    mean_us: Figure | None = field(metadata={"doc": "exact: the interval iostat's r_await (w_await) averages"})
    p50_us: Figure | None
    p99_us: Figure | None


@dataclass(frozen=True, kw_only=True)
class TraceDoc:
    """A run's block-layer histograms (`--trace`, and every timed replay)."""

    ios: Count
    sched_us: list[Bucket]
    device_us: list[Bucket]
    total_us: list[Bucket]
    reads: TraceOpDoc | None = field(default=None, metadata={"doc": "reads' total time", "absent": True})
    writes: TraceOpDoc | None = field(default=None, metadata={"doc": "writes' total time", "absent": True})

    @staticmethod
    def of(window: TraceWindow) -> TraceDoc:
        """A run's trace window (core/trace/runs.py) as its saved trace."""
        return TraceDoc(ios=window.ios, sched_us=window.sched_us, device_us=window.device_us,
                        total_us=window.total_us, reads=_op_doc(window.reads), writes=_op_doc(window.writes))


@dataclass(frozen=True, kw_only=True)
class RunDoc:
    """One run of the workload under one variant (in an alternation: one turn)."""

    index: Count = field(metadata={"doc": "its place in the run order, from 0"})
    variant: str = field(metadata={"doc": "the label of its variant"})
    start: Measured = field(metadata={"doc": "seconds from the experiment's first run (monotonic)"})
    end: Measured
    valid: bool = field(metadata={"doc": "false: left out of the statistics (invalid_reason says why)"})
    invalid_reason: str | None
    config: dict[str, str] = field(metadata={"doc": 'every setting read back: "scheduler", tunables, "knob:NAME"'})
    metrics: dict[str, Figure | None] = field(
        metadata={"doc": "metric name -> value (see the metric table)", "flat": True})
    fio: JsonObject | None = field(default=None, metadata={"doc": "fio's own JSON output of the run, if any"})
    trace: TraceDoc | None = field(default=None, metadata={"absent": True})
    replay: ReplayLag | None = field(default=None, metadata={
        "doc": "a timed replay's run: how far it fell behind the capture's timing (also its metric replay_lag_s); "
               "past bound_s the run is invalid", "absent": True})
    latency: ReplayLatency | None = field(default=None, metadata={
        "doc": "a replay's run: its latency in the block layer against fio's (fio's figures left out past the share "
               "rule) and against the device's own await", "absent": True})
    startup: StartupTiming | None = field(default=None, metadata={
        "doc": "a start-up's run (--startup): its time (also its metric startup_s), its time alone and its cap; "
               "one over the cap is counted at the cap", "absent": True})
    steady: SteadyRun | None = field(default=None, metadata={
        "doc": "--steady: its wait for steady state before it counted; one that did not reach it is kept, marked",
        "absent": True})

    JSON_ORDER: ClassVar[Any] = _run_order


@dataclass(frozen=True, kw_only=True)
class MatrixRunDoc(RunDoc):
    """One run of a matrix: a run, with the slot of the order it fills."""

    slot: Count
    workload: str = field(metadata={"doc": "the name of its job"})

    JSON_ORDER: ClassVar[Any] = ("index", "variant", "start", "end", "valid", "invalid_reason", "config", "metrics",
                                 "fio", "replay", "latency", "trace", "startup", "steady", "slot", "workload")


# --- the judgement ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SummaryDoc:
    """One metric of one variant over its valid runs."""

    n: Count
    mean: Statistic
    stdev: Statistic
    ci95: Pair = field(metadata={"doc": "95% confidence interval of the mean"})


@dataclass(frozen=True, kw_only=True)
class _Outcome:
    """What a comparison comes to, in one of three outcomes: a primary comparison's, a matrix's compared cell's."""

    outcome: Literal["differs", "equal", "cannot-tell"] | None = field(default=None, metadata={
        "doc": "a primary comparison's: differs (significant), equal (its equivalence interval inside ±margin) or "
               "cannot-tell (reasons); absent on a matrix's baseline cells", "absent": True})
    reasons: list[CompareReason] = field(
        default_factory=list, metadata={"doc": "cannot-tell: why, as codes", "absent": True})
    equal_interval: Pair | None = field(default=None, metadata={
        "doc": "the equivalence interval: two-sided at 1 - 2 alpha (90% at alpha 0.05), uncorrected", "absent": True})


def _outcome_after(last: str | None = None) -> Any:
    """A class with the outcome: its fields written after ``last`` (None: at the end), where they always were."""

    def order(cls: type) -> type:
        own = [f.name for f in fields(cls) if f.name not in OUTCOME_FIELDS]
        at = own.index(last) + 1 if last is not None else len(own)
        cls.JSON_ORDER = (*own[:at], *OUTCOME_FIELDS, *own[at:])  # type: ignore[attr-defined]
        return cls

    return order


OUTCOME_FIELDS = tuple(f.name for f in fields(_Outcome))


@_outcome_after()
@dataclass(frozen=True, kw_only=True)
class ComparisonDoc(_Outcome):
    """One metric, one variant against the baseline, as a ratio (variant / baseline) on the log scale."""

    metric: str
    baseline: str
    variant: str
    ratio: Statistic | None = field(metadata={"doc": "null: cannot judge (cannot_judge says why)"})
    ci95: Pair | None
    p_value: Statistic | None
    p_adjusted: Statistic | None = field(metadata={"doc": "Holm-adjusted (secondary: behind the primary's gate)"})
    significant: bool
    primary: bool
    verdict: str = field(metadata={"doc": "the comparison in one sentence"})
    cannot_judge: str | None
    n: tuple[Count, Count] | None = field(metadata={"doc": "runs (baseline, variant), or pairs, judged"})
    interval: Pair | None = field(default=None, metadata={
        "doc": "the interval its words show: the primary metric's carries the correction its p-value carries "
               "(significant exactly when it leaves out 1); a secondary metric's is before correction, at 1 - alpha",
        "absent": True})
    interval_level: Statistic | None = field(default=None, metadata={"doc": "that interval's confidence",
                                                                      "absent": True})
    family: Count | None = field(default=None, metadata={"doc": "how many comparisons its correction covers",
                                                          "absent": True})
    rank: RankDoc | None = field(default=None, metadata={
        "doc": "the primary metric's rank cross-check (repeated runs only)", "absent": True})


@dataclass(frozen=True, kw_only=True)
class RankDoc:
    """A comparison by ranks beside the t-test on log values: Mann-Whitney U and the Hodges-Lehmann shift."""

    u: Statistic = field(metadata={"doc": "pairs of runs (baseline, variant) where the variant's is higher"})
    p_value: Statistic = field(metadata={"doc": "two-sided; exact without ties up to 40 runs"})
    ratio: Statistic = field(metadata={"doc": "Hodges-Lehmann: the median ratio over every pair of runs"})
    ci95: Pair | None = field(metadata={"doc": "its distribution-free 95% interval (null: too few runs for one)"})
    disagrees: list[Literal["t-test only", "rank test only", "opposite directions"]] = field(
        default_factory=list, metadata={"doc": "how it parts from the t-test at alpha (empty: it does not)",
                                         "absent": True})


@dataclass(frozen=True, kw_only=True)
class RunGroupDoc:
    """Runs on one side of a split: their places in the run order and their range."""

    runs: list[Count] = field(metadata={"doc": "each run's index (its place in the run order, from 0)"})
    low: Statistic
    high: Statistic


@dataclass(frozen=True, kw_only=True)
class RunSplitDoc:
    """One variant's runs of one metric that do not agree: two groups, or one run apart from the rest
    (core/statistics/run_groups.py states the rule and its false-alarm rate)."""

    variant: str
    metric: str
    kind: Literal["two groups", "outlier"]
    n: Count = field(metadata={"doc": "the runs checked"})
    groups: tuple[RunGroupDoc, RunGroupDoc] = field(metadata={"doc": "the lower values first"})
    apart: Statistic = field(metadata={"doc": "how many times apart the two sides' nearest runs are"})


@dataclass(frozen=True, kw_only=True)
class PlanningDoc:
    """What more runs would show: the runs a difference of ``difference`` needs at the noise seen (80% power, at the
    first step of Holm's correction over the comparisons), the figure its words plan the next experiment by."""

    difference: float = field(metadata={"doc": "the difference planned for, as a fraction (0.1: 10%)"})
    noise: Statistic | None = field(metadata={
        "doc": "the runs' noise on the log scale (per run, or per block of turns): the largest among the comparisons "
               "(null: none could be judged, or every one was significant: nothing to plan)"})
    runs: Count | None = field(metadata={"doc": "runs per variant (or blocks) it needs; null: no practical number"})


@dataclass(frozen=True, kw_only=True)
class JudgementDoc:
    """The verdict of an experiment: summaries and every variant against the baseline (judged again on read)."""

    alpha: float
    primary_metric: str
    status: Status
    method: str = field(metadata={"doc": "the test, in words"})
    summaries: dict[str, dict[str, SummaryDoc]] = field(metadata={"doc": "variant -> metric -> summary"})
    comparisons: list[ComparisonDoc] = field(metadata={"item": "comparison"})
    invalid: list[str]
    notes: list[str]
    run_groups: list[RunSplitDoc] = field(default_factory=list, metadata={
        "doc": "each variant's metric whose runs fall in two groups or have one run apart", "item": "split",
        "absent": True})
    detectable: Statistic | None = field(default=None, metadata={
        "doc": "the smallest ratio (above 1; its inverse below) the primary comparisons had 80% power to find at "
               "Holm's first step, from the noise and runs seen (null: each was significant)", "absent": True})
    planning: PlanningDoc | None = field(default=None, metadata={
        "doc": "the planning figure: what a 10% difference would need at the noise seen (null: not asked)",
        "absent": True})
    left_out: Count = field(default=0, metadata={
        "doc": "runs after a sequential compare's last planned look, left out of the statistics", "absent": True})
    margin: Statistic | None = field(default=None, metadata={
        "doc": "the margin a primary comparison is shown equal within (a fraction: 0.1 is ±10%)", "absent": True})


@dataclass(frozen=True, kw_only=True)
class SecondaryDoc:
    """A matrix cell's other metric: its mean and, off the baseline, its ratio to the baseline."""

    mean: Statistic
    mean_ci95: Pair | None
    n: Count
    ratio: Statistic | None = field(default=None, metadata={"absent": _in_baseline_cell})
    ci95: Pair | None = field(default=None, metadata={"absent": _in_baseline_cell})


@_outcome_after("planning")
@dataclass(frozen=True, kw_only=True)
class CellDoc(_Outcome):
    """One workload under one variant: the primary metric's mean and, off the baseline, the comparison."""

    workload: str
    variant: str
    baseline: str
    metric: str
    primary: bool
    n: Count
    mean: Statistic | None
    mean_ci95: Pair | None
    secondary: dict[str, SecondaryDoc]
    ratio: Statistic | None = field(default=None, metadata={"absent": _baseline_cell})
    ci95: Pair | None = field(default=None, metadata={"absent": _baseline_cell})
    p_value: Statistic | None = field(default=None, metadata={"absent": _baseline_cell})
    p_adjusted: Statistic | None = field(default=None, metadata={"absent": _baseline_cell})
    significant: bool = field(default=False, metadata={"absent": _baseline_cell})
    cannot_judge: str | None = field(default=None, metadata={"absent": _baseline_cell})
    decided_at: Count | None = field(
        default=None, metadata={"doc": "--until-verdict: runs per cell at the look where it crossed the boundary",
                                "absent": _not_sequential_cell})
    verdict: str | None = field(default=None, metadata={"doc": "absent on the baseline's cells", "absent": True})
    interval: Pair | None = field(default=None, metadata={
        "doc": "the ratio's interval carrying the matrix's correction: significant exactly when it leaves out 1",
        "absent": True})
    interval_level: Statistic | None = field(default=None, metadata={"doc": "that interval's confidence",
                                                                      "absent": True})
    planning: PlanningDoc | None = field(default=None, metadata={
        "doc": "an undecided cell's: what a 10% difference would need at its noise", "absent": True})
    geomean: Statistic | None = field(default=None, metadata={
        "doc": "the geometric mean of its valid runs (a cell decided at a look: of its runs to that look), the "
               "figure its ratio is of: the variant's over the baseline's", "absent": True})

    @property
    def is_baseline(self) -> bool:
        return self.variant == self.baseline


@dataclass(frozen=True, kw_only=True)
class MatrixJudgementDoc:
    """The verdict of a matrix: every cell against its workload's baseline, Holm over the whole matrix."""

    alpha: float
    primary_metric: str
    baseline: str
    comparisons: Count = field(metadata={"doc": "how many comparisons the correction covers"})
    correction: Literal["holm", "sequential holm"]
    method: str | None = field(default=None, metadata={"doc": "how a sequential matrix was judged"})
    workloads: list[str]
    variants: list[str]
    cells: list[CellDoc] = field(metadata={"item": "cell"})
    summary: list[str] = field(metadata={"doc": "one sentence per variant"})
    invalid: list[str]
    planning: list[str] | None = field(
        default=None, metadata={"doc": "the runs undecided cells would need for a 10% difference at their noise"})

    JSON_ORDER: ClassVar[Any] = ("alpha", "primary_metric", "baseline", "comparisons", "correction", "method",
                                 "workloads", "variants", "cells", "summary", "planning", "invalid")


# --- the documents ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Document:
    """What an experiment and a matrix share."""

    version: Annotated[int, Keywords(const=SCHEMA_VERSION)] = SCHEMA_VERSION
    started: float = field(metadata={"doc": "wall clock (Unix seconds)"})
    finished: float | None = field(default=None, metadata={"absent": True})
    kernel: str
    machine: str
    host: str
    device: DeviceDoc | DeviceNameDoc | None = field(metadata={"doc": "null: not known (the report still reads)"})
    conditions: ConditionsDoc | None = field(default=None, metadata={
        "doc": "what the runs were measured under: CPU, device model and firmware, fill level, steady state "
               "(absent: an older file)", "absent": True})
    variants: list[VariantDoc] = field(metadata={"doc": "the first is the baseline", "item": "variant"})
    notes: list[str]
    status: Status | None = field(default=None, metadata={"absent": True})
    cancelled: bool = field(default=False, metadata={"doc": "older files' way of saying status cancelled",
                                                     "absent": True})
    switches: list[tuple[Measured, str]] | None = field(
        default=None, metadata={"doc": "(seconds, scheduler) of every switch made, on the runs' clock", "absent": True})
    primary_metric: str | None = field(default=None, metadata={"absent": True})


@dataclass(frozen=True, kw_only=True)
class _Experiment(_Document):
    workload: WorkloadDoc
    original: dict[str, str] = field(metadata={"doc": "the device's settings at the start, put back at the end"})
    order: list[str] = field(metadata={"doc": "the variants' labels in run order (so far, in an alternation)"})
    sequential: SequentialDoc | None = field(default=None, metadata={"absent": True})
    runs: list[RunDoc] = field(metadata={"item": "run"})
    judgement: JudgementDoc | None = field(default=None, metadata={"absent": True})
    comparisons: list[ComparisonDoc] | None = field(
        default=None, metadata={"doc": "`--json` output only: the judgement's comparisons again", "item": "comparison",
                                "absent": True})


@dataclass(frozen=True, kw_only=True)
class CompareDoc(_Experiment):
    """An A/B/n experiment: repeated runs of one workload under each variant, in interleaved order."""

    kind: Literal["compare"] = "compare"
    repeat: Annotated[int, Keywords(minimum=1)]
    drop_caches: bool
    settle_s: float
    traced: bool = False

    JSON_ORDER: ClassVar[Any] = ("version", "kind", "started", "kernel", "machine", "host", "device", "conditions",
                                 "variants", "order", "repeat", "drop_caches", "settle_s", "workload", "original",
                                 "runs", "notes", "sequential", "traced", "status", "cancelled", "switches", "finished",
                                 "primary_metric", "judgement", "comparisons")


@dataclass(frozen=True, kw_only=True)
class AlternationDoc(_Experiment):
    """Live alternation: one continuous fio run while the variants take turns."""

    kind: Literal["alternate"]
    every_s: float
    duration_s: float
    discard_s: float
    fio: JsonObject | None = field(default=None, metadata={"doc": "fio's own JSON output of the whole run",
                                                           "absent": True})

    JSON_ORDER: ClassVar[Any] = ("version", "kind", "started", "kernel", "machine", "host", "device", "conditions",
                                 "variants", "every_s", "duration_s", "discard_s", "workload", "original", "runs",
                                 "notes", "order", "sequential", "status", "cancelled", "switches", "finished", "fio",
                                 "primary_metric", "judgement", "comparisons")


@dataclass(frozen=True, kw_only=True)
class CatalogJobSpec:
    """A matrix's job from the catalog, with its scaling."""

    catalog: str
    runtime: float
    size: int


@dataclass(frozen=True, kw_only=True)
class FileJobSpec:
    """A matrix's job from a job file: its sections and options."""

    file: str
    sections: list[tuple[str, list[tuple[str, str | None]]]]


@dataclass(frozen=True, kw_only=True)
class CmdJobSpec:
    """A study's command (`--study`): read back to compare with the study file given again, never run from here."""

    name: str
    cmd: str
    cmd_metrics: list[CmdMetricDoc] = field(metadata={"item": "command metric"})


@dataclass(frozen=True, kw_only=True)
class StartupJobSpec:
    """A start-up replayed beside a background (`--startup FILE --jobs GROUP`): read back, its capture is checked
    again before it runs."""

    startup: str = field(metadata={"doc": "the capture as named: bundled, or its iolog's path"})
    background: CatalogJobSpec | FileJobSpec | None = field(metadata={"doc": "none: the start-up alone"})
    cap_multiple: Annotated[float, Keywords(minimum=2, maximum=1000)] = field(
        metadata={"doc": "a run is ended past this many times the start-up's time alone (--startup-cap)"})


@dataclass(frozen=True, kw_only=True)
class MatrixDoc(_Document):
    """A matrix: several workloads x several variants in a drift-balanced order, saved after every run."""

    kind: Literal["matrix"]
    jobs: list[CatalogJobSpec | FileJobSpec | CmdJobSpec | StartupJobSpec] = field(
        metadata={"doc": "the plan's jobs, read back on --resume", "item": "job"})
    workloads: list[CatalogJobDoc | JobFileDoc | CmdJobSpec] = field(metadata={"item": "workload"})
    repeat: Annotated[int, Keywords(minimum=1)]
    drop_caches: bool
    settle_s: float
    job_runtime_s: float | None
    primary_metric: str  # always set in a matrix
    primary_metrics: dict[str, str] | None = field(
        default=None, metadata={"doc": "workload -> its own primary metric, when none was named (contention jobs)",
                                "absent": True})
    order: list[tuple[str, str]] = field(metadata={"doc": "[workload, variant] of every slot, in run order"})
    sequential: MatrixSequentialDoc | None = field(
        default=None, metadata={"doc": "--until-verdict: the boundary; repeat is then the most runs per cell",
                                "absent": True})
    traced: bool = field(default=False, metadata={"doc": "--trace: each run carries its block-layer histograms",
                                                  "absent": True})
    target: TargetDoc | None
    original: dict[str, str] | None = field(default=None, metadata={"absent": True})
    runs: list[MatrixRunDoc] = field(metadata={"item": "run"})
    judgement: MatrixJudgementDoc | None = field(default=None, metadata={"absent": True})

    JSON_ORDER: ClassVar[Any] = ("version", "kind", "started", "kernel", "machine", "host", "device", "conditions",
                                 "variants", "jobs", "workloads", "repeat", "drop_caches", "settle_s", "job_runtime_s",
                                 "primary_metric", "primary_metrics", "order", "sequential", "traced", "target",
                                 "runs", "notes",
                                 "status", "cancelled", "original", "switches", "finished", "judgement")


ExperimentDoc = CompareDoc | AlternationDoc


def _not_pooled(row: PooledRowDoc, outer: tuple[Any, ...]) -> bool:
    return row.ratio is None  # a variant fewer than two hosts could be judged on says why in its sentence alone


@dataclass(frozen=True, kw_only=True)
class PooledHostDoc:
    """One host's own verdict, as the pool took its runs."""

    host: str
    judgement: JudgementDoc


@dataclass(frozen=True, kw_only=True)
class HostRatioDoc:
    """One host's estimate as it entered the pool."""

    host: str
    ratio: Statistic
    se_log: Statistic = field(metadata={"doc": "the standard error of its log ratio, from its own interval"})


@dataclass(frozen=True, kw_only=True)
class PooledRowDoc:
    """One variant against the baseline over the hosts: a random-effects mean of their log ratios, or why not."""

    variant: str
    skipped: list[str] = field(metadata={"doc": "the hosts left out of the pool, each with why"})
    ratio: Statistic | None = field(default=None, metadata={"absent": _not_pooled})
    ci_low: Statistic | None = field(default=None, metadata={"absent": _not_pooled})
    ci_high: Statistic | None = field(default=None, metadata={"absent": _not_pooled})
    p_value: Statistic | None = field(default=None, metadata={"absent": _not_pooled})
    p_adjusted: Statistic | None = field(default=None, metadata={"doc": "as the correction said leaves it",
                                                                 "absent": _not_pooled})
    significant: bool = field(default=False, metadata={"absent": _not_pooled})
    i2: Statistic | None = field(default=None, metadata={"doc": "the share of the spread beyond the hosts' noise",
                                                         "absent": _not_pooled})
    tau2: Statistic | None = field(default=None, metadata={"doc": "the between-host variance of the log ratio",
                                                           "absent": _not_pooled})
    q: Statistic | None = field(default=None, metadata={"doc": "Cochran's Q", "absent": _not_pooled})
    df: Count | None = field(default=None, metadata={"absent": _not_pooled})
    hosts_agree: Count | None = field(default=None, metadata={"doc": "hosts whose own estimate goes the pooled way",
                                                              "absent": _not_pooled})
    hosts_differ: list[str] | None = field(default=None, metadata={"absent": _not_pooled})
    per_host: list[HostRatioDoc] | None = field(default=None, metadata={"item": "host", "absent": _not_pooled})
    outcome: Literal["differs", "equal", "cannot-tell"] | None = field(default=None, metadata={
        "doc": "differs (significant), equal (its equivalence interval inside ±10%) or cannot-tell", "absent": True})
    reasons: list[CompareReason] = field(default_factory=list, metadata={"absent": True})
    equal_interval: Pair | None = field(default=None, metadata={
        "doc": "the pooled interval at 1 - 2 alpha (90% at alpha 0.05)", "absent": True})
    sentence: str


@dataclass(frozen=True, kw_only=True)
class PooledDoc:
    """A comparison over many hosts: each host's own verdict, then each variant pooled over them (`report A B C`
    and a fleet's ``pooled``)."""

    metric: str
    baseline: str
    alpha: float
    method: str
    correction: str = field(default="Holm-corrected over the variants",
                            metadata={"doc": "which correction the adjusted p-values carry"})
    hosts: list[PooledHostDoc] = field(metadata={"item": "host"})
    pooled: list[PooledRowDoc] = field(metadata={"item": "variant"})


@dataclass(frozen=True, kw_only=True)
class CellVerdictDoc:
    """One cell of a fleet matrix (a job and a variant) pooled over the hosts, Holm over the matrix (null: it
    could not be pooled, and its sentence says why)."""

    job: str
    metric: str
    baseline: str
    variant: str
    ratio: Statistic | None
    ci_low: Statistic | None
    ci_high: Statistic | None
    p_adjusted: Statistic | None
    significant: bool | None
    sentence: str


@dataclass(frozen=True, kw_only=True)
class FleetMatrixPooledDoc:
    """A fleet matrix's verdicts: every cell pooled over its hosts, the p-values Holm-corrected over the cells."""

    alpha: float
    cells: Count = field(metadata={"doc": "how many pooled cells the correction covers"})
    correction: str
    verdicts: list[CellVerdictDoc] = field(metadata={"item": "cell"})


@dataclass(frozen=True, kw_only=True)
class FleetHostDoc:
    """One host of a fleet compare: how it ended, its device before and after as the controller read it, and its
    own compare."""

    host: str
    device: str
    status: Literal["done", "failed", "cancelled", "running"]
    reason: str | None = field(metadata={"doc": "why it failed (null: it did not)"})
    scheduler_before: str | None = field(metadata={"doc": "null: not read"})
    scheduler_after: str | None = field(metadata={"doc": "null: not read (the host could not be reached)"})
    put_back: str = field(metadata={"doc": "what the controller found of the device afterwards, in words"})
    result: CompareDoc | None = field(metadata={"doc": "the host's compare, judged as one made there (null: none)"})


@dataclass(frozen=True, kw_only=True)
class FleetDoc:
    """A compare on many hosts (`compare --hosts … --save` and `--json`): each host's compare, then the pooled
    verdict (which `report` makes again from the hosts' runs)."""

    version: Annotated[int, Keywords(const=SCHEMA_VERSION)] = SCHEMA_VERSION
    kind: Literal["fleet"]
    mode: Literal["lockstep", "independent"] = field(
        metadata={"doc": "lockstep: each variant on every host together, fio's client driving a server on each; "
                         "independent: each host's own iosched ran the whole compare"})
    started: float = field(metadata={"doc": "wall clock (Unix seconds), on the controller"})
    finished: float | None = None
    job: str
    schedulers: str = field(metadata={"doc": "the variants as given, the baseline first"})
    repeat: Annotated[int, Keywords(minimum=1)] = field(
        metadata={"doc": "runs per variant and host (with until_verdict: the most)"})
    until_verdict: bool = field(
        default=False, metadata={"doc": "each host's compare carries the boundary; the fleet stops once all cross"})
    runtime_s: float | None = field(metadata={"doc": "each run's length (null: the job's own)"})
    size: int | None = field(metadata={"doc": "bytes the job covers (null: the job's own)"})
    settle_s: float
    hosts: list[FleetHostDoc] = field(metadata={"item": "host"})
    pooled: PooledDoc | None = field(default=None, metadata={"doc": "the verdict per host and pooled, as shown"})


@dataclass(frozen=True, kw_only=True)
class FleetMatrixDoc:
    """A group of jobs on many hosts (`compare --hosts … --jobs GROUP --save` and `--json`): one fleet compare per
    job, one job after another, each pooled over its hosts; the verdicts Holm-corrected over every job and
    variant."""

    version: Annotated[int, Keywords(const=SCHEMA_VERSION)] = SCHEMA_VERSION
    kind: Literal["fleet_matrix"]
    mode: Literal["lockstep", "independent"]
    started: float = field(metadata={"doc": "wall clock (Unix seconds), on the controller"})
    finished: float | None = None
    jobs_spec: str = field(metadata={"doc": "--jobs as given"})
    jobs: list[str] = field(metadata={"item": "job", "doc": "the catalog jobs, in the order they run"})
    schedulers: str = field(metadata={"doc": "the variants as given, the baseline first"})
    repeat: Annotated[int, Keywords(minimum=1)] = field(
        metadata={"doc": "runs per variant, job and host (with until_verdict: the most)"})
    until_verdict: bool = False
    metric: str | None = field(
        default=None, metadata={"doc": "--metric as given: what every job's boundary watches (null: each job's own "
                                       "primary metric)"})
    runtime_s: float | None = field(metadata={"doc": "each run's length (null: each job's own)"})
    size: int | None = field(metadata={"doc": "bytes each job covers (null: each job's own)"})
    settle_s: float
    fleets: list[FleetDoc] = field(metadata={"item": "job's fleet",
                                             "doc": "one per job begun, in the order of jobs"})
    pooled: FleetMatrixPooledDoc | None = field(
        default=None, metadata={"doc": "each cell (job, variant) pooled over the hosts, Holm over the cells"})


# --- advice (`iosched advise`) ---------------------------------------------------------------------------------------

Goal = Literal["throughput", "latency", "interactive"]


@dataclass(frozen=True, kw_only=True)
class ObservedDoc:
    """The device as `advise` first saw it: its class, its scheduler and who set it (observe's words)."""

    device: str
    kind: str = field(metadata={"doc": "nvme, ssd, hdd, virtual, loop, dm, md, mmc, zram, network"})
    rotational: bool
    model: str | None
    serial: str | None
    size_bytes: Count
    scheduler: str | None = field(metadata={"doc": "the scheduler it had (null: none to choose)"})
    schedulers: list[str] = field(metadata={"doc": "every scheduler it offers"})
    tunables: dict[str, str] = field(metadata={"doc": "the scheduler's tunables as it had them"})
    set_by: str = field(metadata={"doc": "iosched, tuned, udev, kernel or unknown"})
    lines: list[str] = field(metadata={"doc": "the observation in words: who set what, the class, the rules seen"})


@dataclass(frozen=True, kw_only=True)
class AdviceWorkloadDoc:
    """What the tests run: the catalog's test per goal, an observed capture, a capture given, a job or a command."""

    kind: Literal["catalog", "capture", "replay", "job", "cmd"]
    ref: str | None = field(metadata={"doc": "the capture's path, the job's name, the command (null: the catalog's)"})
    summary: list[str] = field(metadata={"doc": "an observed capture's summary: mix, sizes, sequential share, depth, "
                                                "processes"})


@dataclass(frozen=True, kw_only=True)
class AdviceCandidateDoc:
    """A variant the tests try beside the current setting, and why it is worth trying."""

    variant: VariantDoc
    why: str
    source: str | None = field(metadata={"doc": "the kernel document behind a tuning"})
    goals: list[Goal]


@dataclass(frozen=True, kw_only=True)
class DroppedDoc:
    """A variant that left a test early: clearly worse at a look."""

    variant: str
    at: Count = field(metadata={"doc": "runs per variant at the look it left"})


@dataclass(frozen=True, kw_only=True)
class AdviceTestDoc:
    """One goal's test: what runs, how it is judged, its looks, and its runs as a compare (judged)."""

    goal: Goal
    how: str
    pace: Literal["full", "own", "foreground"]
    metric: str = field(metadata={"doc": "the figure the goal is judged on"})
    costs: list[str] = field(metadata={"doc": "the other figures stated beside it (the other roles')"})
    variants: list[str] = field(metadata={"doc": "labels, the current setting first"})
    runs: Annotated[int, Keywords(minimum=1)] = field(metadata={"doc": "runs per variant at most"})
    run_s: float = field(metadata={"doc": "one run's planned length"})
    looks: list[Annotated[int, Keywords(minimum=1)]] = field(metadata={"doc": "runs per variant at each look"})
    level: Statistic = field(metadata={"doc": "the per-look level a crossing needs (the boundary's)"})
    looked: list[Count] = field(metadata={"doc": "the runs the compare held at each look taken, in order"})
    dropped: list[DroppedDoc] = field(metadata={"item": "dropped variant"})
    pilot: CompareDoc | None = field(metadata={"doc": "runs at the current setting alone: the noise (null: none)"})
    noise: Statistic | None = field(metadata={"doc": "the pilot's per-run noise of the metric, on the log scale"})
    result: CompareDoc | None = field(metadata={"doc": "every run of the test as one compare, judged on its metric "
                                                       "(null: none ran)"})


@dataclass(frozen=True, kw_only=True)
class AdviceBudgetDoc:
    """The budget as it was held: what it counted and whether the tests stopped at it."""

    budget_s: float = field(metadata={"doc": "--budget, in seconds"})
    before_s: float = field(metadata={"doc": "spent before the plan and counted against the budget: an --observe "
                                             "capture, a command timed once"})
    elapsed_s: float = field(metadata={"doc": "before_s and the pilot and tests (the wait for the plan's acceptance "
                                              "is not counted): at most budget_s"})
    stopped: bool = field(metadata={"doc": "the tests stopped at the budget before every test reached its last "
                                           "look: what their runs show is the answer"})
    runs_short: Count = field(metadata={"doc": "runs the plan still had, at most, when the tests stopped"})


@dataclass(frozen=True, kw_only=True)
class AdvicePlanDoc:
    """The plan, as printed and accepted before anything changed."""

    baseline: VariantDoc = field(metadata={"doc": "what the device had: its scheduler, with the tunables that "
                                                  "differ from the defaults"})
    candidates: list[AdviceCandidateDoc] = field(metadata={"item": "candidate"})
    seconds: float = field(metadata={"doc": "the plan's estimated length at most, pilot included"})
    budget_s: float | None
    pilot_runs: Count = field(metadata={"doc": "runs of each test at the current setting to measure the noise"})
    cuts: list[str] = field(metadata={"doc": "what was cut to fit the budget"})
    notes: list[str]
    target: str = field(metadata={"doc": "where the tests write, in words"})
    fill: str | None = field(default=None, metadata={
        "doc": "--fill: the device prepared before the first test, in words, with its time (counted in seconds)",
        "absent": True})
    offers: list[str] = field(default_factory=list, metadata={
        "doc": "what another advice would add: an SSD tested below half full, the same at ≥ 50% full",
        "absent": True})
    smallest_s: float | None = field(default=None, metadata={
        "doc": "the smallest budget that can decide the goals: every cut made, the time spent before the plan "
               "counted (absent: an older file)", "absent": True})


@dataclass(frozen=True, kw_only=True)
class AdviceRuleDoc:
    """The decision rule, fixed before the first run."""

    alpha: float
    margin: float = field(metadata={"doc": "how much worse than the best on another goal a winner may be shown"})
    power: float = field(metadata={"doc": "for the smallest effect the experiment could see"})


@dataclass(frozen=True, kw_only=True)
class EstimateDoc:
    """A candidate against the current setting on one figure, as the rule took it."""

    variant: str
    ratio: Statistic | None = field(metadata={"doc": "candidate / current setting (null: cannot judge)"})
    ci_low: Statistic | None = field(metadata={"doc": "at the level that goes with its Holm-adjusted p-value"})
    ci_high: Statistic | None
    p_adjusted: Statistic | None
    sd_log: Statistic | None = field(metadata={"doc": "its runs' noise, on the log scale"})
    n: Count
    cannot_judge: str | None
    level: Statistic | None = field(default=None, metadata={"doc": "the confidence of ci_low..ci_high"})
    equal_low: Statistic | None = field(default=None, metadata={
        "doc": "the equivalence interval (two-sided at 1 - 2 alpha, 90% at alpha 0.05, uncorrected), as a ratio: its "
               "end on the better side is the keep's one-sided bound"})
    equal_high: Statistic | None = None


Outcome = Literal["switch", "keep-equal", "cannot-tell"]
Reason = Literal["too-wide", "budget", "two-groups", "busy", "too-few-runs", "unjudged", "replay-behind"]


@dataclass(frozen=True, kw_only=True)
class SplitDoc:
    """A variant whose runs on the goal's figure fall in two groups."""

    variant: str
    better: Count = field(metadata={"doc": "runs in the group on the better side"})
    n: Count = field(metadata={"doc": "its valid runs"})
    better_range: tuple[Statistic, Statistic] = field(metadata={"doc": "that group's lowest and highest value"})
    worse_range: tuple[Statistic, Statistic]
    worse_vs_baseline: Statistic | None = field(default=None, metadata={
        "doc": "the worse group's geometric mean over the current setting's, as a ratio"})


@dataclass(frozen=True, kw_only=True)
class GoalAdviceDoc:
    """The answer for one goal: switch to a setting, keep what the device has (shown equal), or cannot tell, with
    the evidence. Every effect is signed as the figure moves (candidate / current setting - 1: -0.95 is a 95% drop);
    ``better`` says which way is better."""

    goal: Goal
    metric: str
    baseline: str
    recommended: str | None = field(metadata={"doc": "the variant to switch to (null: keep-equal or cannot-tell)"})
    estimate: EstimateDoc | None = field(metadata={"doc": "the recommended variant's, else the closest candidate's"})
    smallest_effect: Statistic | None = field(
        metadata={"doc": "the smallest effect the test could see, signed as the figure moves (-0.91: a 91% drop, on "
                         "a figure better lower); null: unknown"})
    excluded: list[tuple[str, str]] = field(metadata={"doc": "[variant, why] left out by another goal"})
    costs: list[tuple[str, EstimateDoc]] = field(metadata={"doc": "[metric, estimate]: the recommendation's other "
                                                                  "figures"})
    notes: list[str]
    outcome: Outcome = field(default="cannot-tell", metadata={
        "doc": "switch: a candidate is better by at least the margin; keep-equal: no candidate is better by the margin "
               "(each one-sided bound below it); cannot-tell: neither (reasons)"})
    reasons: list[Reason] = field(default_factory=list, metadata={"doc": "cannot-tell: why, as codes"})
    margin: Statistic | None = field(default=None, metadata={"doc": "the effect that matters, as a fraction"})
    better: Literal["higher", "lower"] | None = field(default=None, metadata={"doc": "which way the figure is better"})
    effect: Statistic | None = field(default=None, metadata={
        "doc": "estimate's ratio - 1, signed as the figure moves (null: none judged)"})
    effect_low: Statistic | None = field(default=None, metadata={"doc": "its interval, signed the same way"})
    effect_high: Statistic | None = None
    effect_level: Statistic | None = field(default=None, metadata={
        "doc": "that interval's confidence: a switch's the Holm-adjusted one; a keep's or cannot-tell's the "
               "equivalence interval's (1 - 2 alpha)"})
    estimates: list[EstimateDoc] = field(default_factory=list, metadata={"item": "candidate",
                                                                         "doc": "every candidate's, in order"})
    runs_per_variant: Count = 0
    runs_needed: Count | None = field(default=None, metadata={
        "doc": "too-wide: runs a variant with which the test would decide at the noise seen (null: unknown)"})
    splits: list[SplitDoc] = field(default_factory=list, metadata={"item": "split"})
    busy: list[str] = field(default_factory=list, metadata={"doc": "what the busy-machine watch named"})
    invalid_runs: Count = 0
    behind_runs: Count = field(default=0, metadata={"doc": "invalid runs of a replay that fell behind its capture"})
    budget_needed_s: float | None = field(default=None, metadata={
        "doc": "budget: about the --budget, in seconds, that would give every goal stopped its runs_needed "
               "(absent: not stopped at the budget, or unknown)", "absent": True})


@dataclass(frozen=True, kw_only=True)
class _Keep:
    """What keeping a recommendation comes to, on one device or on every disk of a model: the commands for now, and
    the udev rule for every boot."""

    variant: str
    scheduler: str
    settings: dict[str, str]
    commands: list[str] = field(metadata={"doc": "what sets it now, until the next boot (a model's: on each host)"})
    rule: str | None = field(metadata={
        "doc": "the udev rule: a device's for its most stable identity, a model's matching the model (null: none "
               "made; warnings say why one could not be)"})
    scope: str | None = field(metadata={"doc": "what that rule reaches"})


@dataclass(frozen=True, kw_only=True)
class KeepDoc(_Keep):
    """How to keep a recommendation: the commands for now, and the udev rule for every boot."""

    class_rule: str | None = field(metadata={"doc": "the same for every disk of the device's class"})
    class_scope: str | None
    warnings: list[str]
    persisted: str | None = field(default=None, metadata={"doc": "the rules file --persist wrote", "absent": True})


@dataclass(frozen=True, kw_only=True)
class AdviceDoc:
    """`iosched advise`: the device observed, the plan, its tests, the answer per goal and how to keep it (`--json`,
    `--save`; `report FILE` decides again from the saved runs)."""

    version: Annotated[int, Keywords(const=SCHEMA_VERSION)] = SCHEMA_VERSION
    kind: Literal["advice"]
    started: float = field(metadata={"doc": "wall clock (Unix seconds)"})
    finished: float | None
    kernel: str
    host: str
    device: str
    tested_on: str = field(metadata={"doc": "the device the tests ran on (--on: a spare of the same kind)"})
    goals: list[Goal]
    status: Literal["planned", "running", "final", "cancelled"] = field(
        metadata={"doc": "planned: nothing ran (--dry-run); cancelled: stopped, no advice"})
    observed: ObservedDoc
    workload: AdviceWorkloadDoc
    plan: AdvicePlanDoc
    rule: AdviceRuleDoc
    tests: list[AdviceTestDoc] = field(metadata={"item": "test"})
    advice: list[GoalAdviceDoc] = field(metadata={"item": "goal", "doc": "per goal, once every test finished"})
    tradeoff: str | None = field(metadata={"doc": "the answer over every goal in one sentence"})
    keep: list[KeepDoc] = field(metadata={
        "item": "recommendation",
        "doc": "how to keep each setting recommended (none: no goal switches: each kept, shown equal, or not decided)"})
    notes: list[str]
    conditions: ConditionsDoc | None = field(default=None, metadata={
        "doc": "what the tests were measured under: CPU, device model and firmware, fill level (absent: an older "
               "file, or none ran)", "absent": True})
    busy: list[str] = field(default_factory=list, metadata={
        "doc": "other loads the busy-machine watch named beside the tests (devices, processes, the load average)"})
    budget: AdviceBudgetDoc | None = field(default=None, metadata={
        "doc": "--budget as it was held (absent: no budget, an older file, or none ran)", "absent": True})



# --- advice on many hosts (`iosched advise --hosts`) ----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class AdviceHostDoc:
    """One host of a fleet advice: how it ended, its device before and after as the controller read it, the model it
    is pooled under, and its own advice (decided again from its runs)."""

    host: str
    device: str
    status: Literal["done", "failed", "cancelled", "running"]
    reason: str | None = field(metadata={"doc": "why it failed (null: it did not)"})
    scheduler_before: str | None = field(metadata={"doc": "null: not read"})
    scheduler_after: str | None = field(metadata={"doc": "null: not read (the host could not be reached)"})
    put_back: str = field(metadata={"doc": "what the controller found of the device afterwards, in words"})
    model: str | None = field(metadata={"doc": "the device's model as its advice recorded it (null: it names none)"})
    firmware: str | None = field(metadata={"doc": "its firmware revision as recorded (null: none)"})
    result: AdviceDoc | None = field(metadata={"doc": "the host's own advice (null: none came back)"})


@dataclass(frozen=True, kw_only=True)
class HostAnswerDoc:
    """One host's own answer on a goal, beside its model's pooled answer."""

    host: str
    outcome: Outcome
    recommended: str | None = field(metadata={"doc": "the variant it would switch to (null: keep or cannot tell)"})
    variant: str | None = field(metadata={"doc": "the candidate its figure is of: the pooled answer's (null: none)"})
    ratio: Statistic | None = field(metadata={"doc": "that candidate / the current setting on this host, on the "
                                                     "goal's figure (null: not judged there)"})
    agrees: bool = field(metadata={"doc": "its answer is the one the hosts' answers are weighed against"})


@dataclass(frozen=True, kw_only=True)
class ModelGoalDoc:
    """One goal over the hosts of one model: each host's answer, whether they agree, and the pooled answer."""

    goal: Goal
    hosts: list[HostAnswerDoc] = field(metadata={"item": "host"})
    agree: bool = field(metadata={"doc": "every host gave the same answer"})
    differ: list[str] = field(metadata={"doc": "the hosts whose answer is not the one most hosts (or the pool) give"})
    pooled: GoalAdviceDoc | None = field(metadata={
        "doc": "each candidate pooled over the hosts (a random-effects mean of their log ratios), decided by the rule "
               "(null: not pooled, see why)"})
    i2: Statistic | None = field(default=None, metadata={
        "doc": "the pooled candidate's share of spread beyond the hosts' own noise", "absent": True})
    why: str | None = field(default=None, metadata={
        "doc": "a code: one-host (its one host's answer is the model's), few-hosts, not-tested, different-tests",
        "absent": True})


@dataclass(frozen=True, kw_only=True)
class ModelKeepDoc(_Keep):
    """How to keep one model's recommendation on every disk of that model."""

    warnings: list[str]


@dataclass(frozen=True, kw_only=True)
class ModelAdviceDoc:
    """The hosts of one device model and firmware, pooled: per goal the agreement first, then the one answer."""

    model: str | None = field(metadata={"doc": "the device model as recorded (null: the devices name none)"})
    firmware: str | None
    hosts: list[str]
    goals: list[ModelGoalDoc] = field(metadata={"item": "goal"})
    keep: list[ModelKeepDoc] = field(metadata={"item": "recommendation",
                                               "doc": "each setting the pooled answers recommend (none: keep)"})


@dataclass(frozen=True, kw_only=True)
class FleetAdviceDoc:
    """`iosched advise --hosts` (`--json`, `--save`): each host's own advice, run by its own iosched at its own
    pace (or each goal's test in lockstep over the hosts, `--lockstep`), then pooled per device model (`report`
    decides every host again from its runs and pools again)."""

    version: Annotated[int, Keywords(const=SCHEMA_VERSION)] = SCHEMA_VERSION
    kind: Literal["advice_fleet"]
    started: float = field(metadata={"doc": "wall clock (Unix seconds), on the controller"})
    finished: float | None = None
    goals: str = field(metadata={"doc": "--goal as given"})
    alpha: float
    hosts: list[AdviceHostDoc] = field(metadata={"item": "host"})
    models: list[ModelAdviceDoc] = field(metadata={"item": "model", "doc": "the hosts pooled per model"})
    mode: Literal["independent", "lockstep"] = field(default="independent", metadata={
        "doc": "independent: each host's own iosched ran its whole advice; lockstep: each host planned, then each "
               "goal's test ran every variant on every host together (absent: an older file, independent)",
        "absent": True})

def published_schemas() -> dict[str, Schema]:
    """docs/schema/'s files: name -> JSON Schema."""
    return {
        "experiment.schema.json": json_schema(
            ExperimentDoc, "iosched experiment",
            "A saved experiment (`compare --save`) and `compare --json` / `report --json` output."),
        "matrix.schema.json": json_schema(
            MatrixDoc, "iosched matrix",
            "A saved matrix (`compare --jobs … --save`) and its `--json` output."),
        "recording-line.schema.json": json_schema(
            RecordingLine, "iosched recording line",
            "One line of a recording (`iosched record`): JSON Lines, the first line the header."),
        "journal.schema.json": json_schema(
            JournalFile, "iosched journal",
            "The journal of original values (journal.json under /run/iosched)."),
        "fleet.schema.json": json_schema(
            FleetDoc, "iosched fleet compare",
            "A compare on many hosts (`compare --hosts … --save`) and its `--json` output."),
        "fleet-matrix.schema.json": json_schema(
            FleetMatrixDoc, "iosched fleet matrix",
            "A group of jobs on many hosts (`compare --hosts … --jobs GROUP --save`) and its `--json` output."),
        "capture-meta.schema.json": json_schema(
            CaptureDoc, "iosched capture metadata",
            "A capture's metadata (`iosched capture DEV -o FILE` writes FILE.meta.json beside fio's iolog v3)."),
        "advice.schema.json": json_schema(
            AdviceDoc | FleetAdviceDoc, "iosched advice",
            "What `iosched advise DEV` observed, planned, tested and decided (`--save`, `--json`); with `--hosts`, "
            "each host's advice and the hosts pooled per device model."),
    }
