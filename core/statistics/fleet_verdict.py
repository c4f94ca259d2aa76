"""The verdict of one comparison made on many hosts: each host's own, then each variant pooled over the hosts
(core/statistics/pooled.py), Holm-corrected over the variants, or over every cell of a fleet matrix.

Each host's compare is judged as one made there (host_judges.py). Its estimate of each variant enters the pool as
its log ratio with the standard error rebuilt from its own interval; the pooled p-values are corrected over the
family they belong to: a fleet's variants (``fleet_pooled``), or every job and variant of a fleet matrix
(``matrix_pooled``), each pool made once and the correction taken over all of them together. The sentence each
pooled row carries is written from its numbers by core/present (sentences.py ``pooled_sentence``), as each
host's verdict is; here are the numbers and, where a variant could not be pooled, its reason code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from iosched.core.documents.document import (
    CellVerdictDoc,
    ExperimentDoc,
    FleetDoc,
    FleetMatrixPooledDoc,
    HostRatioDoc,
    PooledDoc,
    PooledHostDoc,
    PooledRowDoc,
)
from iosched.core.statistics.host_judges import host_estimates, host_judgement, host_primary
from iosched.core.statistics.outcome import MARGIN, decide, interval_at
from iosched.core.statistics.pooled import HostEffect, NotPooled, Pooled, agreement, pool
from iosched.core.statistics.stats import CannotJudge, RatioEstimate, holm, t_ppf

# Codes a pool's method and correction hold until core/present words them (worded.py).
METHOD = "random-effects"
VARIANTS_CORRECTION = "variants"
MATRIX_CORRECTION = "matrix"


def se_from_interval(e: RatioEstimate, level: float = 0.95) -> float:
    """The standard error of a host's log ratio, from its interval at ``level`` and its degrees of freedom."""
    return (math.log(e.ci_high) - math.log(e.ci_low)) / (2.0 * t_ppf(0.5 + level / 2.0, e.df))


def host_effects(doc: ExperimentDoc, metric: str) -> dict[str, RatioEstimate | CannotJudge]:
    """Each variant's estimate on one host, as the pool takes it: a host that ran until a verdict is taken at its
    last planned look, as its own verdict is.

    Its plain interval, not its repeated one: a host that stopped early leans away from 1, but the pool's
    Hartung-Knapp interval (t with hosts - 1 df, never narrower than the hosts' own noise) keeps its coverage
    all the same (97.7-99.8% in bench/pooled_verdict.py), and the repeated intervals would cost it power (a 20%
    effect on 3 hosts found in 48% of fleets, not 74%). tests/unit/statistics/test_fleet_verdict.py holds the
    pool's coverage and false-positive rate to seeded simulation of hosts that stop at their own boundaries."""
    return host_estimates(doc, metric)


@dataclass(frozen=True)
class VariantPool:
    """One variant over the hosts, before any correction: the pool, or why there is none."""

    variant: str
    skipped: tuple[str, ...]  # hosts left out, each with why: "db2 (few-runs:variant)"
    pooled: Pooled | None
    why: str  # why it was not pooled: a reason code


@dataclass(frozen=True)
class HostPool:
    """A comparison's numbers over the hosts, before any correction: each host's own verdict and each variant's
    pool. ``p_values`` are the pooled ones, in variant order, that a correction adjusts."""

    metric: str
    baseline: str
    hosts: tuple[PooledHostDoc, ...]
    variants: tuple[VariantPool, ...]
    sequential: bool  # a host ran until a verdict

    @property
    def p_values(self) -> list[float]:
        return [v.pooled.p_value for v in self.variants if v.pooled is not None]


def pool_hosts(hosts: Sequence[tuple[str, ExperimentDoc]], alpha: float, metric: str | None) -> HostPool:
    """Each host judged on its own and each variant pooled over the hosts (two or more, the same variants, the
    baseline first); ``metric`` None: the first host's primary metric."""
    docs = [d for _, d in hosts]
    metric = metric or host_primary(docs[0])
    labels = [v.label for v in docs[0].variants]
    own = tuple(PooledHostDoc(host=h, judgement=host_judgement(d, alpha, metric)) for h, d in hosts)
    each = [(h, host_effects(d, metric)) for h, d in hosts]
    variants = []
    for v in labels[1:]:
        effects, skipped = [], []
        for h, est in each:
            e = est.get(v)
            if isinstance(e, RatioEstimate):
                effects.append(HostEffect(h, math.log(e.ratio), se_from_interval(e)))
            else:
                skipped.append(h + " (" + (e.reason if isinstance(e, CannotJudge) else "no-estimate") + ")")
        p, why = None, "few-hosts"
        if len(effects) >= 2:
            try:
                p = pool(effects)
            except NotPooled as e:  # only a hostile or broken file gets here: its reason, not a traceback
                why = e.reason
        variants.append(VariantPool(v, tuple(skipped), p, why))
    return HostPool(metric, labels[0], own, tuple(variants), any(d.sequential is not None for d in docs))


def pooled_verdict(numbers: HostPool, alpha: float, adjusted: Sequence[float] | None = None,
                   correction: str = VARIANTS_CORRECTION) -> PooledDoc:
    """The pooled verdict: ``adjusted`` are the p-values judged, one per pooled variant in order (None: Holm over
    the variants); ``correction`` says which correction they carry."""
    judged = iter(holm(numbers.p_values) if adjusted is None else adjusted)
    rows = []
    for v in numbers.variants:
        if v.pooled is None:
            rows.append(PooledRowDoc(variant=v.variant, skipped=list(v.skipped), sentence=v.why))
        else:
            rows.append(pooled_row(v.pooled, numbers.baseline, v.variant, numbers.metric, next(judged), alpha,
                                   v.skipped))
    method = METHOD + (":sequential" if numbers.sequential else "")
    return PooledDoc(metric=numbers.metric, baseline=numbers.baseline, alpha=alpha, method=method,
                     correction=correction, hosts=list(numbers.hosts), pooled=rows)


def pooled_row(p: Pooled, base: str, variant: str, metric: str, p_adj: float, alpha: float,
               skipped: Sequence[str] = ()) -> PooledRowDoc:
    """One pooled variant with its adjusted p-value ``p_adj``, its numbers and its sentence."""
    significant = p_adj < alpha
    agree, differ = agreement(p)
    interval = interval_at(p.ratio, p.ci_low, p.ci_high, 0.95, p.df, alpha) if p.df > 0 else None
    outcome, reasons = decide(significant, True, interval, MARGIN, [])
    return PooledRowDoc(outcome=outcome, reasons=reasons, equal_interval=interval,
        variant=variant, skipped=list(skipped), ratio=p.ratio, ci_low=p.ci_low, ci_high=p.ci_high,
        p_value=p.p_value, p_adjusted=p_adj, significant=significant, i2=p.i2, tau2=p.tau2, q=p.q, df=p.df,
        hosts_agree=agree, hosts_differ=[h.host for h in differ],
        per_host=[HostRatioDoc(host=h.host, ratio=h.ratio, se_log=h.se) for h in p.hosts], sentence="")


def hosts_pooled(hosts: Sequence[tuple[str, ExperimentDoc]], alpha: float, metric: str | None) -> PooledDoc:
    """The pooled verdict of two or more hosts' compares (`report A B C`), Holm over the variants."""
    return pooled_verdict(pool_hosts(hosts, alpha, metric), alpha)


# --- a fleet, a fleet matrix ----------------------------------------------------------------------------------------


def pooled_hosts(fleet: FleetDoc) -> list[tuple[str, ExperimentDoc]]:
    """The hosts of a fleet with runs to judge (a stopped or unfinished fleet's too: the runs that finished)."""
    return [(h.host, h.result) for h in fleet.hosts if h.status != "failed" and h.result is not None
            and h.result.runs]


def fleet_numbers(fleet: FleetDoc, alpha: float, metric: str | None) -> HostPool | None:
    """The fleet's numbers before any correction; None under two hosts with runs to judge."""
    hosts = pooled_hosts(fleet)
    return pool_hosts(hosts, alpha, metric) if len(hosts) >= 2 else None


def fleet_pooled(fleet: FleetDoc, alpha: float, metric: str | None) -> PooledDoc | None:
    """A fleet's pooled verdict, Holm over its variants; None under two hosts with runs to judge."""
    numbers = fleet_numbers(fleet, alpha, metric)
    return pooled_verdict(numbers, alpha) if numbers is not None else None


def matrix_pooled(fleets: Sequence[FleetDoc], alpha: float,
                  metric: str | None) -> tuple[list[FleetDoc], FleetMatrixPooledDoc]:
    """Each job's variants pooled over its hosts, the p-values Holm-corrected over every cell of the matrix: the
    fleets, each with its part of that as its ``pooled`` (what its lines show), and the matrix's verdicts."""
    numbers = [fleet_numbers(f, alpha, metric) for f in fleets]
    raw = [n.p_values if n is not None else [] for n in numbers]
    adjusted = iter(holm([p for ps in raw for p in ps]))
    cells = sum(len(ps) for ps in raw)
    words = MATRIX_CORRECTION
    judged, verdicts = [], []
    for f, n, ps in zip(fleets, numbers, raw, strict=True):
        mine = [next(adjusted) for _ in ps]
        pooled = pooled_verdict(n, alpha, mine, words) if n is not None else None
        judged.append(replace(f, pooled=pooled))
        if pooled is None:
            continue
        for row in pooled.pooled:
            verdicts.append(CellVerdictDoc(
                job=f.job, metric=pooled.metric, baseline=pooled.baseline, variant=row.variant, ratio=row.ratio,
                ci_low=row.ci_low, ci_high=row.ci_high, p_adjusted=row.p_adjusted,
                significant=row.significant if row.ratio is not None else None, sentence=row.sentence))
    return judged, FleetMatrixPooledDoc(alpha=alpha, cells=cells, correction=words, verdicts=verdicts)
