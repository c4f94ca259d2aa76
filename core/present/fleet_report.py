"""What a fleet's result shows: the hosts and how each ended, each host's verdict, the pooled verdict and how it
was reached; a fleet matrix's jobs one after another, then its verdicts, a line a cell; `report A B C`'s pooled
verdict; their runs as CSV. The answer first: a result that cannot be judged says so on its first line.

Every line is shown through ``printable``: hosts' words and a saved file's strings never reach a terminal as
escape codes.
"""

from __future__ import annotations

from dataclasses import replace

from iosched.core.base.terminal_text import printable
from iosched.core.documents.document import CellVerdictDoc, FleetDoc, FleetMatrixDoc, PooledDoc, PooledRowDoc
from iosched.core.documents.metrics import metric_label
from iosched.core.present.report import hosts_runs_csv
from iosched.core.present.sentences import comparison_sentence, pooled_sentence, reason_words
from iosched.core.present.worded import worded_fleet, worded_fleet_matrix
from iosched.core.statistics.fleet_verdict import pooled_hosts


def unjudged(doc: FleetDoc) -> str | None:
    """Why a fleet's result cannot be judged (None: it can): fewer than two hosts with runs to pool, or no variant
    that two hosts could be judged on."""
    pooled = doc.pooled
    if pooled is None:
        kept = len(pooled_hosts(doc))
        failed = sum(1 for h in doc.hosts if h.status == "failed")
        return (f"cannot judge: {kept} of {len(doc.hosts)} hosts finished runs to pool, and it takes two"
                + (f" ({failed} failed: see why below)" if failed else ""))
    if not any(row.ratio is not None for row in pooled.pooled):
        return f"cannot judge: fewer than two hosts could be judged on {metric_label(pooled.metric)}"
    return None


def matrix_unjudged(doc: FleetMatrixDoc) -> str | None:
    """Why a fleet matrix cannot be judged (None: every job it ran can)."""
    cannot = [f.job for f in doc.fleets if unjudged(f) is not None]
    if not cannot:
        return None
    return f"cannot judge {', '.join(cannot)[:400]}: each job says why below"


def fleet_lines(doc: FleetDoc, cells: int | None = None) -> list[str]:
    """A fleet's result: why it cannot be judged (if so), the hosts, each host's verdict, the pooled one (``cells``: in
    a fleet matrix, the pooled cells its correction covers)."""
    doc = worded_fleet(doc, cells)
    cannot = unjudged(doc)
    lines = [cannot] if cannot is not None else []  # the answer first: here, that there is none
    lines.append("hosts:")
    for h in doc.hosts:
        what = "done" if h.status == "done" else f"{h.status}: {h.reason}"
        lines.append(f"  {h.host} ({h.device}): {what}; {h.put_back}")
    pooled = doc.pooled
    if pooled is None:
        return [printable(line) for line in lines]
    lines.append(f"per host ({metric_label(pooled.metric)}, against {pooled.baseline}):")
    lines += _per_host(pooled)
    lines.append("pooled:")
    lines += [f"  {row_sentence(pooled, row)}" for row in pooled.pooled]
    lines.append(f"  method: {pooled.method}, {pooled.correction}, alpha {pooled.alpha:g}")
    return [printable(line) for line in lines]  # hosts' words and a saved file's strings: never escape codes


def _per_host(pooled: PooledDoc) -> list[str]:
    """Each host's own verdict on the primary metric, written from its numbers (core/present/sentences.py)."""
    out = []
    for h in pooled.hosts:
        primary = [c for c in h.judgement.comparisons if c.primary]
        adjusted = len(primary) > 1 or "sequential" in h.judgement.method
        out += [f"  {h.host}: {comparison_sentence(c, adjusted=adjusted)}" for c in primary]
    return out


def row_sentence(pooled: PooledDoc, row: PooledRowDoc) -> str:
    """A pooled variant in words, from its numbers; the correction's family, the variants pooled."""
    family = sum(1 for r in pooled.pooled if r.ratio is not None)
    return pooled_sentence(row, pooled.metric, pooled.baseline, pooled.alpha, family)


def matrix_lines(doc: FleetMatrixDoc) -> list[str]:
    """Each job's fleet as `compare --hosts` shows one, then the matrix's verdicts, a line a cell; first, the jobs
    that cannot be judged, if any."""
    doc = worded_fleet_matrix(doc)
    cannot = matrix_unjudged(doc)
    lines: list[str] = [cannot] if cannot is not None else []
    for f in doc.fleets:
        lines.append(f"{f.job}:")
        lines += [f"  {line}" for line in fleet_lines(f)]
    left = doc.jobs[len(doc.fleets):]
    if left:
        lines.append(f"not run: {', '.join(left)}")
    pooled = doc.pooled
    assert pooled is not None  # a matrix shown is a judged one
    lines.append(f"the matrix: each cell pooled over the hosts; {pooled.correction}, alpha {pooled.alpha:g}:")
    if not pooled.verdicts:
        lines.append("  no job had two hosts to pool")
    rows = {(f.job, r.variant): r for f in doc.fleets if f.pooled is not None for r in f.pooled.pooled}
    for v in pooled.verdicts:  # the pooled sentence without its heterogeneity, which the job's lines give
        lines.append(f"  {v.job}: {cell_sentence(v, pooled.alpha, pooled.cells, rows.get((v.job, v.variant)))}")
    return [printable(line) for line in lines]


def cell_sentence(v: CellVerdictDoc, alpha: float, family: int, pooled: PooledRowDoc | None = None) -> str:
    """A fleet matrix's cell in words, from its numbers (its hosts' agreement is in its job's lines); its outcome
    is its job's pooled row's (``pooled``: the same pool under the matrix's correction)."""
    if v.ratio is None or v.ci_low is None or v.ci_high is None or v.p_adjusted is None:
        return v.sentence if " " in v.sentence else f"{v.variant} vs {v.baseline}: {reason_words(v.sentence)}"
    row = PooledRowDoc(variant=v.variant, skipped=[], ratio=v.ratio, ci_low=v.ci_low, ci_high=v.ci_high,
                       p_adjusted=v.p_adjusted, sentence=v.sentence)
    if pooled is not None and pooled.ratio == v.ratio and pooled.significant == v.significant:
        row = replace(row, outcome=pooled.outcome, reasons=pooled.reasons, equal_interval=pooled.equal_interval)
    return pooled_sentence(row, v.metric, v.baseline, alpha, family)


def lost_job(doc: FleetMatrixDoc) -> str | None:
    """The job no host finished, after which a matrix that ran to its end left the jobs after it unrun."""
    if doc.fleets and len(doc.fleets) < len(doc.jobs) and not any(h.status == "done" for h in doc.fleets[-1].hosts):
        return doc.fleets[-1].job
    return None


def pooled_lines(doc: PooledDoc) -> list[str]:
    """`report A B C`: each host's verdict, each variant pooled (and the hosts it left out), how."""
    lines = [f"{len(doc.hosts)} hosts, {metric_label(doc.metric)}, each variant against {doc.baseline}:",
             "per host:", *_per_host(doc), "pooled:"]
    for row in doc.pooled:
        lines.append(f"  {row_sentence(doc, row)}")
        if row.skipped:
            lines.append(f"  (left out: {', '.join(row.skipped)})")
    lines.append(f"  method: {doc.method}, {doc.correction}, alpha {doc.alpha:g}")
    return [printable(line) for line in lines]  # host names come from the files


def fleet_csv(doc: FleetDoc) -> str:
    """Every run of every host, a host column first."""
    return hosts_runs_csv([(h.host, h.result) for h in doc.hosts if h.result is not None])


def fleet_matrix_csv(doc: FleetMatrixDoc) -> str:
    """Every run of every job's hosts, a job and a host column first."""
    hosts = [(f.job, h.host, h.result) for f in doc.fleets for h in f.hosts if h.result is not None]
    return hosts_runs_csv([(host, result) for _, host, result in hosts], jobs=[job for job, _, _ in hosts])

