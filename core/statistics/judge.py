"""The one judge: every experiment on one machine (a compare, a live alternation, a matrix) judged the same way.

A compare is a matrix of one workload. Its runs fall in cells (a workload under a variant); each cell off the
baseline is compared with its workload's baseline cell on the workload's primary metric, a ratio estimated on the
log scale (Welch's t on log values; a live alternation's turns paired within their blocks), and the whole family
of those comparisons corrected together (Holm; under ``--until-verdict`` the boundary's level, or a matrix's
group-sequential Holm over its cells). Every other metric of a cell is compared too, behind the serial gatekeeper
(once every primary comparison is significant, Holm over them all). ``judge`` returns the numbers (``Judgement``):
each document keeps the part its readers know (verdict.py ``judgement_doc``, matrix_judge.py ``matrix_judgement``),
and the charts, the text and the fleet read the same numbers (``judged``).

Values that admit no honest p-value (fewer than 2 runs, NaN, zero or negative, no variance) are "cannot judge"
with the reason, and take no part in any correction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from iosched.core.documents.document import (
    AlternationDoc,
    CompareDoc,
    ExperimentDoc,
    MatrixDoc,
    MatrixSequentialDoc,
    RankDoc,
    RunDoc,
    RunGroupDoc,
    RunSplitDoc,
    SequentialDoc,
    SummaryDoc,
)
from iosched.core.documents.metrics import ordered_metrics
from iosched.core.statistics.holm_intervals import HolmInterval, LogComparison, holm_intervals
from iosched.core.statistics.matrix_sequential import cell_estimate, state
from iosched.core.statistics.rank_test import RankShift, disagreement, rank_shift
from iosched.core.statistics.run_groups import Outlier, TwoGroups, split_runs
from iosched.core.statistics.stats import (
    CannotJudge,
    RatioEstimate,
    Summary,
    geometric_mean,
    holm,
    log_ratio_paired,
    log_ratio_welch,
    summarize,
    t_ppf,
)

RunsDoc = CompareDoc | AlternationDoc | MatrixDoc
Estimate = RatioEstimate | CannotJudge
Correction = Literal["holm", "sequential", "sequential holm"]


# --- the runs, as cells ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """The runs a workload's comparisons are judged on: the variants' labels (the baseline first), the runs in their
    order, whether they are a live alternation's turns (judged in pairs) and the boundary they were run under."""

    labels: list[str]
    runs: Sequence[RunDoc]
    alternate: bool = False
    sequential: SequentialDoc | None = None
    finite: bool = False  # only finite values count (a matrix's): else one that is not says why it cannot be judged


def workload_name(doc: ExperimentDoc) -> str:
    """A compare's one workload, by the name a matrix would give it."""
    return doc.workload.name


def default_primary(doc: RunsDoc) -> str:
    """The metric the verdict is about: as chosen at the start, else wall time for a command, else IOPS."""
    if doc.primary_metric:
        return doc.primary_metric
    if isinstance(doc, MatrixDoc):
        return "iops"
    return "wall_s" if doc.workload.cmd else "iops"


def primaries(doc: MatrixDoc, metric: str | None = None) -> dict[str, str]:
    """Workload -> the metric its cells are judged on: ``metric`` when named, else the workload's own (a contention
    job names its own: ``primary_metrics``), else the matrix's."""
    default: str = metric or doc.primary_metric or "iops"
    own: dict[str, str] = {} if metric else (doc.primary_metrics or {})
    return {w.name: own.get(w.name) or default for w in doc.workloads}


def samples(doc: RunsDoc) -> list[tuple[str, Sample]]:
    """Each workload's runs: a compare's one, a matrix's each (its runs name their workload)."""
    labels = [v.label for v in doc.variants]
    if isinstance(doc, MatrixDoc):
        return [(w.name, Sample(labels, [r for r in doc.runs if r.workload == w.name], finite=True))
                for w in doc.workloads]
    return [(workload_name(doc), Sample(labels, doc.runs, isinstance(doc, AlternationDoc), doc.sequential))]


def sample_of(doc: ExperimentDoc) -> Sample:
    return samples(doc)[0][1]


def valid_values(sample: Sample) -> dict[str, dict[str, list[float]]]:
    """Per variant, per metric: the values of the valid runs, in run order."""
    values: dict[str, dict[str, list[float]]] = {lb: {} for lb in sample.labels}
    for r in sample.runs:
        if not r.valid or r.variant not in values:
            continue
        for key, x in r.metrics.items():
            if x is not None and (math.isfinite(x) or not sample.finite):
                values[r.variant].setdefault(key, []).append(float(x))
    return values


def block_log_ratios(sample: Sample, metric: str) -> dict[str, list[float]]:
    """Live alternation: per variant, the mean of log(variant) - log(baseline) over each block of two passes.

    A pass is one turn of each variant; the turns go A B | B A | B A | A B ... (core/experiment/variants.py
    `alternation_order`), so within a block every variant's mean position is the same: a linear drift
    cancels, and so does anything that flips with every turn. The blocks are the independent units of the
    paired test. A pass with an invalid or non-positive turn is left out, with its block.
    """
    passes, blocks = _passes_and_blocks(sample, metric)
    base = sample.labels[0]

    def diff(p: int, v: str) -> float:
        return math.log(passes[p][v]) - math.log(passes[p][base])

    return {v: [(diff(2 * b, v) + diff(2 * b + 1, v)) / 2.0 for b in blocks] for v in sample.labels[1:]}


def _passes_and_blocks(sample: Sample, metric: str) -> tuple[dict[int, dict[str, float]], list[int]]:
    """Live alternation: each pass's values by variant, and the blocks whose two passes are both whole."""
    k = len(sample.labels)
    passes: dict[int, dict[str, float]] = {}
    bad: set[int] = set()
    for r in sample.runs:
        p = r.index // k
        x = r.metrics.get(metric)
        if not r.valid or x is None or not (x > 0 and math.isfinite(x)):
            bad.add(p)
            continue
        passes.setdefault(p, {})[r.variant] = float(x)
    whole = {p for p in passes if p not in bad and len(passes[p]) == k}
    return passes, [b for b in sorted({p // 2 for p in whole}) if 2 * b in whole and 2 * b + 1 in whole]


def cut_at_last_look(sample: Sample, metric: str) -> Sample:
    """A sequential compare's runs cut to its last planned look reached: its boundary holds only at the looks, so
    runs past the last look (an unbalanced tail, a run after the stop) are left out of the test. Unchanged when it
    is not sequential, ends at a look, or has not reached the first look."""
    looks = sample.sequential.looks if sample.sequential is not None else None
    if not looks:
        return sample
    labels = sample.labels
    if sample.alternate:
        _passes, blocks = _passes_and_blocks(sample, metric)
        reached = [n for n in looks if n <= len(blocks)]
        if not reached or reached[-1] == len(blocks):
            return sample
        last_pass = 2 * blocks[reached[-1] - 1] + 1
        return replace(sample, runs=[r for r in sample.runs if r.index // len(labels) <= last_pass])

    def counted(r: RunDoc) -> bool:
        return r.valid and r.metrics.get(metric) is not None

    counts = {lb: 0 for lb in labels}
    for r in sample.runs:
        if r.variant in counts and counted(r):
            counts[r.variant] += 1
    n = min(counts.values(), default=0)
    reached = [x for x in looks if x <= n]
    if not reached or all(c == reached[-1] for c in counts.values()):
        return sample
    keep, seen = reached[-1], {lb: 0 for lb in labels}
    runs = []
    for r in sample.runs:
        if r.variant in seen and counted(r):
            seen[r.variant] += 1
            if seen[r.variant] > keep:
                continue
        runs.append(r)
    return replace(sample, runs=runs)


def at_last_look(doc: ExperimentDoc, metric: str) -> ExperimentDoc:
    """A sequential compare cut to its last planned look reached (see ``cut_at_last_look``): what is judged."""
    cut = cut_at_last_look(sample_of(doc), metric)
    return doc if len(cut.runs) == len(doc.runs) else replace(doc, runs=list(cut.runs))


def estimates_of(sample: Sample, metric: str, level: float = 0.95) -> dict[str, Estimate]:
    """Each variant against the baseline on one metric (batch: Welch on logs; alternation: paired)."""
    base = sample.labels[0]
    out: dict[str, Estimate] = {}
    if sample.alternate:
        for v, diffs in block_log_ratios(sample, metric).items():
            out[v] = log_ratio_paired(diffs, level)
        return out
    values = valid_values(sample)
    for v in sample.labels[1:]:
        out[v] = log_ratio_welch(values[base].get(metric, []), values[v].get(metric, []), level)
    return out


def run_values(doc: ExperimentDoc, metric: str) -> dict[str, list[float]] | None:
    """A batch compare's valid runs on one metric, per variant in run order (None for a live alternation's turns,
    judged paired)."""
    sample = sample_of(doc)
    if sample.alternate:
        return None
    return {v: by.get(metric, []) for v, by in valid_values(sample).items()}


def estimates(doc: ExperimentDoc, metric: str, level: float = 0.95) -> dict[str, Estimate]:
    """A compare's variants against its baseline on one metric (batch: Welch on logs; alternation: paired)."""
    return estimates_of(sample_of(doc), metric, level)


def adjusted_family(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm over the judgeable members of a family (None: cannot judge, left out)."""
    judged = [(i, p) for i, p in enumerate(p_values) if p is not None]
    adj = holm([p for _, p in judged])
    out: list[float | None] = [None] * len(p_values)
    for (i, _), a in zip(judged, adj, strict=True):
        out[i] = a
    return out


def agreeing_interval(h: HolmInterval, significant: bool) -> tuple[float, float]:
    """A Holm interval as ratios, its ends on no change's side as the verdict's p-value says: the two p-values of one
    comparison (its own, and the one read back from its interval) may differ in their last digits at the boundary."""
    if h.excludes_no_change() == significant:
        return h.ci_low, h.ci_high
    d = h.log_ratio
    half = abs(d) * (1.0 - 1e-12) if significant else abs(d)
    return math.exp(d - half), math.exp(d + half)


def at_level(e: RatioEstimate, level: float) -> tuple[float, float]:
    """An estimate's interval at another confidence (its own when the same)."""
    if abs(level - e.level) < 1e-12:
        return e.ci_low, e.ci_high
    c = LogComparison.of(e)
    half = t_ppf(0.5 + level / 2.0, c.df) * c.se
    # At a stricter level than the estimate's own (a small --alpha, few runs far apart) an end may pass a double's
    # range: infinite, as holm_intervals.py makes one, never an OverflowError after the runs.
    return math.exp(c.log_ratio - half), (math.exp(c.log_ratio + half) if c.log_ratio + half < 709.0 else math.inf)


def summary_doc(s: Summary) -> SummaryDoc:
    return SummaryDoc(n=s.n, mean=s.mean, stdev=s.stdev, ci95=(s.ci_low, s.ci_high))


# --- the judgement --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Compared:
    """One metric of one cell against its workload's baseline: the estimate, and what the family's correction made
    of it (a secondary metric: behind the gatekeeper)."""

    workload: str
    variant: str
    baseline: str
    metric: str
    primary: bool
    estimate: Estimate
    p_adjusted: float | None = None  # compares with alpha (None: cannot judge)
    significant: bool = False
    interval: tuple[float, float] | None = None  # the interval that goes with p_adjusted (a secondary's: at 1-alpha)
    interval_level: float | None = None
    family: int | None = None  # the comparisons its correction covers
    rank: RankDoc | None = None  # the rank cross-check (a batch compare's primary)
    decided_at: int | None = None  # a sequential matrix's: runs per cell at the look where it crossed


@dataclass(frozen=True)
class Cell:
    """One workload under one variant: its valid runs' summaries, each metric."""

    workload: str
    variant: str
    metric: str  # the workload's primary metric
    summaries: dict[str, SummaryDoc]
    geomean: float | None = None  # its primary metric's geometric mean over its valid runs (None: one not positive)


@dataclass(frozen=True)
class Judgement:
    """Every cell and every comparison of one experiment, as numbers: what each document keeps of it, the text, the
    charts and a fleet's pool read."""

    alpha: float
    baseline: str
    workloads: list[str]
    variants: list[str]
    metric_of: dict[str, str]  # workload -> its primary metric
    named: str | None  # the metric the judge was asked for (None: each workload's own)
    cells: list[Cell]
    primary: list[Compared]  # per workload, each variant off the baseline, in order
    secondary: list[Compared]  # per workload, each other metric, each variant off the baseline
    correction: Correction
    sequential: SequentialDoc | MatrixSequentialDoc | None  # the boundary it was judged at (None: fixed)
    alternate: bool = False
    left_out: int = 0  # runs past a sequential compare's last planned look, left out of the statistics
    run_groups: list[RunSplitDoc] = field(default_factory=list)  # a compare's runs that disagree
    boundary_for_another: bool = False  # a matrix's boundary was for another metric: judged at a fixed level

    def metric(self, default: str | None = None) -> str:
        """The metric the experiment is judged on (a matrix whose workloads each have their own: the one named,
        else ``default``, else IOPS)."""
        judged = set(self.metric_of.values())
        return judged.pop() if len(judged) == 1 else (self.named or default or "iops")

    @property
    def comparisons(self) -> int:
        """How many comparisons the primary correction covers."""
        if self.correction == "sequential holm":
            return len(self.cells) - len(self.workloads)
        return sum(1 for c in self.primary if not isinstance(c.estimate, CannotJudge))

    def cell(self, workload: str, variant: str) -> Cell:
        return next(c for c in self.cells if c.workload == workload and c.variant == variant)

    def compared(self, workload: str, variant: str) -> Compared | None:
        return next((c for c in self.primary if c.workload == workload and c.variant == variant), None)


def judge(doc: RunsDoc, alpha: float = 0.05, metric: str | None = None, secondary: bool = True) -> Judgement:
    """The experiment's cells and comparisons, from its valid runs (re-judgeable); ``metric``: the primary metric
    (None: each workload's own, else the document's, else IOPS or a command's wall time); ``secondary`` False leaves
    out the other metrics' comparisons (simulations need only the verdict)."""
    labels = [v.label for v in doc.variants]
    base = labels[0]
    each = samples(doc)
    matrix = isinstance(doc, MatrixDoc)
    metric_of = primaries(doc, metric) if isinstance(doc, MatrixDoc) else {each[0][0]: metric or default_primary(doc)}
    seq: SequentialDoc | MatrixSequentialDoc | None = doc.sequential
    another = False
    if isinstance(doc, MatrixDoc) and seq is not None and metric_of != primaries(doc):
        seq, another = None, True  # another metric than the boundary's: judged as a fixed matrix
    cut = [(w, cut_at_last_look(s, metric_of[w]) if not matrix else s) for w, s in each]
    left_out = sum(len(s.runs) for _, s in each) - sum(len(s.runs) for _, s in cut)

    cells: list[Cell] = []
    for w, s in cut:
        values = valid_values(s)
        cells += [Cell(w, v, metric_of[w], {k: summary_doc(summarize(x)) for k, x in values[v].items()},
                       geometric_mean(values[v].get(metric_of[w], []))) for v in labels]
    correction: Correction
    if not matrix:  # one workload: its variants, Holm over them (at the boundary's level, when sequential)
        (w, s), = cut
        primary = compared_primary(s, metric_of[w], alpha, w)
        correction = "sequential" if isinstance(seq, SequentialDoc) else "holm"
    else:  # each workload's variants, the whole matrix one family
        primary = [Compared(w, v, base, metric_of[w], True, e) for w, s in cut
                   for v, e in estimates_of(s, metric_of[w], 0.95).items()]
        if isinstance(seq, MatrixSequentialDoc) and isinstance(doc, MatrixDoc):
            primary = _sequential_cells(doc, primary, metric_of, seq)
            correction = "sequential holm"
        else:
            primary = _corrected(primary, alpha, alpha, scaled=False)
            correction = "holm"
    others = _secondary(doc, cut, metric_of, primary, alpha) if secondary else []
    return Judgement(alpha=alpha, baseline=base, workloads=[w for w, _ in each], variants=labels, metric_of=metric_of,
                     named=metric, cells=cells, primary=primary, secondary=others, correction=correction,
                     sequential=seq, alternate=each[0][1].alternate, left_out=left_out,
                     run_groups=run_groups(cut[0][1]) if not matrix else [], boundary_for_another=another)


def compared_primary(sample: Sample, metric: str, alpha: float, workload: str = "") -> list[Compared]:
    """A compare's primary metric, each variant against the baseline, Holm-corrected (at the boundary's level when
    the runs are sequential), each with its rank cross-check (repeated runs only)."""
    seq = sample.sequential
    ci = seq.ci_level if seq is not None else 0.95
    base = sample.labels[0]
    found = [Compared(workload, v, base, metric, True, e) for v, e in estimates_of(sample, metric, ci).items()]
    primary = _corrected(found, alpha, seq.level if seq is not None else alpha, scaled=True)
    if sample.alternate:
        return primary
    values = valid_values(sample)
    return [replace(c, rank=_rank(values[base].get(metric, []), values[c.variant].get(metric, []), c.estimate,
                                  alpha)) if isinstance(c.estimate, RatioEstimate) else c for c in primary]


def _corrected(primary: list[Compared], alpha: float, level: float, scaled: bool) -> list[Compared]:
    """Holm over every judgeable primary comparison at ``level`` (the boundary's per-look level when sequential: the
    adjusted p-values reported are then scaled by alpha / level, so they still compare with alpha; ``scaled`` False:
    a fixed matrix's, which compare with alpha as they are), each interval at the level Holm tested it at, so a
    comparison is significant exactly when its interval leaves out 1."""
    holm_p = adjusted_family([None if isinstance(c.estimate, CannotJudge) else c.estimate.p_value for c in primary])
    judged = [i for i, c in enumerate(primary) if isinstance(c.estimate, RatioEstimate)]
    intervals = dict(zip(judged, holm_intervals([LogComparison.of(_judged(primary[i].estimate)) for i in judged],
                                                level), strict=True))
    out = []
    for i, (c, hp) in enumerate(zip(primary, holm_p, strict=True)):
        p_adj = None if hp is None else min(1.0, hp * alpha / level) if scaled else hp
        sig = hp is not None and hp < level
        c = replace(c, p_adjusted=p_adj, significant=sig)
        if (h := intervals.get(i)) is not None:
            c = replace(c, interval=agreeing_interval(h, sig), interval_level=h.level, family=len(judged))
        out.append(c)
    return out


def _sequential_cells(doc: MatrixDoc, primary: list[Compared], metric_of: dict[str, str],
                      seq: MatrixSequentialDoc) -> list[Compared]:
    """The cells of a sequential matrix judged by its boundary: each on the runs up to the look where it decided
    (undecided: the last look reached), significant exactly when it crossed. The adjusted p-value is scaled by
    alpha / the level it faced, so it still compares with alpha."""
    st = state(doc, metric_of)
    out = []
    for c in primary:
        w, v = c.workload, c.variant
        d = st.decided.get((w, v))
        if d is None and st.last_look == 0:
            out.append(replace(c, estimate=CannotJudge("first-look")))
            continue
        e = cell_estimate(doc, w, v, metric_of[w], d.look if d else st.last_look, seq.ci_level)
        if isinstance(e, CannotJudge):
            out.append(replace(c, estimate=e))
            continue
        level = d.level if d else seq.levels[min(len(st.decided), len(seq.levels) - 1)]
        # Its interval at the level it faced, so that it leaves out 1 exactly when the cell crossed.
        h = holm_intervals([LogComparison.of(e)], level)[0]
        out.append(replace(c, estimate=e, p_adjusted=min(1.0, e.p_value * seq.alpha / level),
                           significant=d is not None, decided_at=d.look if d else None,
                           interval=agreeing_interval(h, d is not None), interval_level=h.level))
    return out


def _secondary(doc: RunsDoc, cut: list[tuple[str, Sample]], metric_of: dict[str, str], primary: list[Compared],
               alpha: float) -> list[Compared]:
    """Every other metric, each variant against its workload's baseline, behind the serial gatekeeper: Holm across
    them all, each adjusted p-value at least the largest primary one, so the whole verdict's false-positive rate
    stays at alpha; each interval before correction, at 1 - alpha."""
    gate = max((1.0 if c.p_adjusted is None else c.p_adjusted for c in primary), default=1.0)
    own = [m.name for m in doc.workload.cmd_metrics or []] if not isinstance(doc, MatrixDoc) else []
    found: list[Compared] = []
    for w, s in cut:
        values = valid_values(s)
        seen = (k for lb in s.labels for k in values[lb])  # a compare's: the metric table's; a matrix's: every figure
        keys = dict.fromkeys(seen) if isinstance(doc, MatrixDoc) else ordered_metrics(seen, own)
        present = [k for k in keys if k != metric_of[w]]
        found += [Compared(w, v, s.labels[0], k, False, e) for k in present
                  for v, e in estimates_of(s, k, 0.95).items()]
    sec_p = adjusted_family([None if isinstance(c.estimate, CannotJudge) else c.estimate.p_value for c in found])
    family = sum(1 for p in sec_p if p is not None)
    out = []
    for c, hp in zip(found, sec_p, strict=True):
        p_adj = None if hp is None else max(gate, hp)
        c = replace(c, p_adjusted=p_adj, significant=p_adj is not None and p_adj < alpha)
        if isinstance(c.estimate, RatioEstimate):  # before correction, at the level the p-value is compared with
            c = replace(c, interval=at_level(c.estimate, 1.0 - alpha), interval_level=1.0 - alpha, family=family)
        out.append(c)
    return out


def _judged(e: Estimate) -> RatioEstimate:
    assert isinstance(e, RatioEstimate)  # a comparison with a p-value has an estimate
    return e


def _rank(baseline: Sequence[float], variant: Sequence[float], e: Estimate, alpha: float) -> RankDoc | None:
    """The rank cross-check of a t-test on log values; None when ranks cannot order the runs."""
    assert isinstance(e, RatioEstimate)
    r = rank_shift(baseline, variant)
    if not isinstance(r, RankShift):
        return None
    d = disagreement(e, r, alpha)
    ci = (r.ci_low, r.ci_high) if r.ci_low is not None and r.ci_high is not None else None
    return RankDoc(u=r.u, p_value=r.p_value, ratio=r.ratio, ci95=ci, disagrees=list(d.how) if d else [])


def run_groups(sample: Sample) -> list[RunSplitDoc]:
    """Every variant's metric whose valid runs disagree (two groups, or one run apart), by run_groups.py's rule."""
    runs: dict[str, dict[str, list[tuple[int, float]]]] = {lb: {} for lb in sample.labels}
    for r in sample.runs:
        if not r.valid or r.variant not in runs:
            continue
        for key, x in r.metrics.items():
            if x is not None:
                runs[r.variant].setdefault(key, []).append((r.index, float(x)))
    out = []
    for lb in sample.labels:
        for key in ordered_metrics(runs[lb]):
            pairs = runs[lb][key]
            split = split_runs([x for _, x in pairs])
            if not isinstance(split, Outlier | TwoGroups):
                continue
            groups = tuple(RunGroupDoc(runs=[pairs[i][0] for i in g.indices], low=g.low, high=g.high)
                           for g in split.groups)
            assert len(groups) == 2
            out.append(RunSplitDoc(variant=lb, metric=key, kind="outlier" if isinstance(split, Outlier) else
                                   "two groups", n=split.n, groups=(groups[0], groups[1]), apart=split.apart))
    return out
