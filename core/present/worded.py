"""A document with its sentence fields written: what `--json` prints, a saved file holds, and each text page reads.

The judges return numbers and reason codes (core/statistics): a judgement fresh from them has its sentence fields
empty (``verdict``, ``notes``, ``summary``, ``method`` …) and a reason code where something cannot be judged
(``cannot_judge``: "few-runs:variant"). ``worded`` writes every one of them from those numbers, with the one writer
(sentences.py), whenever a document is encoded (``worded_json``) or shown. A judgement read back from a file keeps
the words it was written with: it is worded once (a fresh one's ``method`` is empty, a read one's never is).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, TypeVar, cast

from iosched.core.advice.decision import decide_doc
from iosched.core.base.encode import encode
from iosched.core.documents.document import (
    AdviceDoc,
    AlternationDoc,
    CellDoc,
    CompareDoc,
    ComparisonDoc,
    ExperimentDoc,
    FleetAdviceDoc,
    FleetDoc,
    FleetMatrixDoc,
    JudgementDoc,
    MatrixDoc,
    MatrixJudgementDoc,
    PooledDoc,
)
from iosched.core.present.advice_words import tradeoff_words, worded_goal
from iosched.core.present.sentences import (
    cell_sentence,
    invalid_lines,
    judgement_notes,
    matrix_method,
    matrix_planning_lines,
    method_line,
    pooled_correction,
    pooled_method,
    pooled_sentence,
    reason_words,
    sequential_method,
    skipped_words,
    variant_sentence,
    verdict_sentence,
)
from iosched.core.statistics.verdict import cmd_metrics_of

T = TypeVar("T")


def worded(doc: T) -> T:
    """``doc`` (any document iosched writes) with every sentence field written from its numbers."""
    kinds: tuple[tuple[type | tuple[type, ...], Callable[[Any], object]], ...] = (
        ((CompareDoc, AlternationDoc), worded_experiment), (MatrixDoc, worded_matrix), (FleetDoc, worded_fleet),
        (FleetMatrixDoc, worded_fleet_matrix), (AdviceDoc, worded_advice), (FleetAdviceDoc, worded_hosts_advice))
    for kind, word in kinds:
        if isinstance(doc, kind):
            return cast(T, word(doc))
    return doc


def worded_json(doc: object) -> object:
    """``doc`` as its JSON, its sentences written: what `--json` prints and a saved file holds."""
    return encode(worded(doc))


E = TypeVar("E", CompareDoc, AlternationDoc)


def worded_experiment(doc: E) -> E:
    seq = doc.sequential
    if seq is not None and not seq.method:
        doc = replace(doc, sequential=replace(seq, method=sequential_method(seq)))
    if doc.judgement is not None:
        judgement = worded_judgement(doc, doc.judgement)
        if doc.comparisons is not None and doc.comparisons == doc.judgement.comparisons:  # `--json`'s copy
            doc = replace(doc, comparisons=judgement.comparisons)
        doc = replace(doc, judgement=judgement)
    return doc


def worded_judgement(doc: ExperimentDoc, j: JudgementDoc) -> JudgementDoc:
    """A compare's judgement in words: each comparison's verdict, why one cannot be judged, the method, the notes
    and the invalid runs."""
    if j.method:  # read back with its words: as it was written
        return j
    adjusted = len(doc.variants) > 2 or doc.sequential is not None
    better = cmd_metrics_of(doc)
    comps = [worded_comparison(c, adjusted if c.primary else True, better.get(c.metric)) for c in j.comparisons]
    split = [g.variant for g in j.run_groups if g.metric == j.primary_metric]
    return replace(j, method=method_line(doc, j.alpha), comparisons=comps, invalid=invalid_lines(doc),
                   notes=judgement_notes(doc, j.primary_metric, j.planning, split, j.left_out))


def worded_comparison(c: ComparisonDoc, adjusted: bool, better: str | None) -> ComparisonDoc:
    if c.verdict:
        return c
    why = reason_words(c.cannot_judge, c.baseline, c.variant) if c.cannot_judge is not None else None
    return replace(c, verdict=verdict_sentence(c, adjusted, better), cannot_judge=why)


def worded_matrix(doc: MatrixDoc) -> MatrixDoc:
    seq = doc.sequential
    if seq is not None and not seq.method:
        doc = replace(doc, sequential=replace(seq, method=sequential_method(seq)))
    if doc.judgement is not None:
        doc = replace(doc, judgement=worded_matrix_judgement(doc, doc.judgement))
    return doc


def worded_matrix_judgement(doc: MatrixDoc, j: MatrixJudgementDoc) -> MatrixJudgementDoc:
    """A matrix's judgement in words: each cell's verdict, a sentence per variant, what undecided cells would need,
    the method and the invalid runs."""
    if j.summary or len(j.variants) < 2:  # read back with its words
        return j
    first = doc.sequential.looks[0] if doc.sequential is not None and doc.sequential.looks else None
    cells = [c if c.is_baseline or c.verdict else _worded_cell(c, first, j.alpha) for c in j.cells]
    return replace(j, cells=cells, summary=[variant_sentence(cells, v) for v in j.variants[1:]],
                   planning=matrix_planning_lines(cells, len(j.variants)), method=matrix_method(doc, j.correction),
                   invalid=invalid_lines(doc))


def _worded_cell(c: CellDoc, first: int | None, alpha: float) -> CellDoc:
    why = (reason_words(c.cannot_judge, f"{c.baseline} on {c.workload}", f"{c.variant} on {c.workload}", first)
           if c.cannot_judge is not None else None)
    return replace(c, verdict=cell_sentence(c, first, alpha), cannot_judge=why)


def worded_fleet(doc: FleetDoc, cells: int | None = None) -> FleetDoc:
    """A fleet in words: each host's compare, and the pooled verdict (``cells``: in a fleet matrix, the pooled cells
    its correction covers)."""
    hosts = [replace(h, result=worded_experiment(h.result)) if h.result is not None else h for h in doc.hosts]
    docs = {h.host: h.result for h in doc.hosts if h.result is not None}
    pooled = worded_pooled(doc.pooled, docs, cells) if doc.pooled is not None else None
    return replace(doc, hosts=hosts, pooled=pooled)


def worded_pooled(p: PooledDoc, docs: Mapping[str, CompareDoc | AlternationDoc],
                  cells: int | None = None) -> PooledDoc:
    """A pooled verdict in words: each host's own, each variant's row (its hosts left out, with why), the method and
    the correction (``docs``: each host's document, ``cells``: a fleet matrix's pooled cells)."""
    if not p.method.startswith(POOL_CODE):  # read back with its words
        return p
    hosts = [replace(h, judgement=worded_judgement(docs[h.host], h.judgement)) if h.host in docs else h
             for h in p.hosts]
    family = cells if cells is not None else sum(1 for r in p.pooled if r.ratio is not None)
    rows = [replace(r, sentence=pooled_sentence(r, p.metric, p.baseline, p.alpha, family),
                    skipped=[skipped_words(s) for s in r.skipped]) for r in p.pooled]
    return replace(p, hosts=hosts, pooled=rows, method=pooled_method(p.method.endswith("sequential")),
                   correction=pooled_correction(cells if p.correction == "matrix" else None))


POOL_CODE = "random-effects"  # a fresh pool's method code: "random-effects", "random-effects:sequential"


def worded_fleet_matrix(doc: FleetMatrixDoc) -> FleetMatrixDoc:
    pooled = doc.pooled
    cells = pooled.cells if pooled is not None else None
    fleets = [worded_fleet(f, cells) for f in doc.fleets]
    if pooled is not None and pooled.correction == "matrix":
        rows = {(f.job, r.variant): r.sentence for f in fleets if f.pooled is not None for r in f.pooled.pooled}
        pooled = replace(pooled, correction=pooled_correction(pooled.cells),
                         verdicts=[replace(v, sentence=rows.get((v.job, v.variant), v.sentence))
                                   for v in pooled.verdicts])
    return replace(doc, fleets=fleets, pooled=pooled)


def worded_advice(doc: AdviceDoc) -> AdviceDoc:
    """The advice with its words written from the rule's numbers (decided again from its runs, as `report` does):
    each goal's left-out candidates and those that could not be judged, the answer over every goal, and each test's
    compares. An advice read back with its words keeps them."""
    tests = [replace(t, pilot=worded_experiment(t.pilot) if t.pilot is not None else None,
                     result=worded_experiment(t.result) if t.result is not None else None) for t in doc.tests]
    doc = replace(doc, tests=tests)
    if doc.tradeoff or not doc.advice:
        return doc
    decided = decide_doc(doc)
    goals = [worded_goal(g, decided.goals[i] if decided is not None and i < len(decided.goals) else None)
             for i, g in enumerate(doc.advice)]
    return replace(doc, advice=goals, tradeoff=tradeoff_words(goals))


def worded_hosts_advice(doc: FleetAdviceDoc) -> FleetAdviceDoc:
    """An advice on many hosts: each host's advice and each model's pooled answers with their words."""
    hosts = [replace(h, result=worded_advice(h.result)) if h.result is not None else h for h in doc.hosts]
    models = [replace(m, goals=[replace(g, pooled=worded_goal(g.pooled, None) if g.pooled is not None else None)
                                for g in m.goals]) for m in doc.models]
    return replace(doc, hosts=hosts, models=models)
