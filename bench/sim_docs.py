"""Documents of simulated experiments, for the benches that judge them through the same pure functions: only the
variants and the runs' figures are real, the rest neutral."""

from __future__ import annotations

from iosched.core.base.encode import encode
from iosched.core.documents.document import (
    AlternationDoc,
    CompareDoc,
    RunDoc,
    SequentialDoc,
    VariantDoc,
    WorkloadDoc,
)


def run(index: int, variant: str, metrics: dict[str, float | None]) -> RunDoc:
    return RunDoc(index=index, variant=variant, start=float(index), end=index + 1.0, valid=True,
                  invalid_reason=None, config={}, metrics=metrics)


def compare(labels: list[str], runs: list[RunDoc], repeat: int, sequential: SequentialDoc | None = None,
            alternate: bool = False) -> CompareDoc | AlternationDoc:
    shared = dict(started=0.0, kernel="", machine="", host="", device=None, notes=[], original={},
                  variants=[VariantDoc(label=lb, scheduler=lb.split("#")[0]) for lb in labels],
                  workload=WorkloadDoc(job=None, target=None, runtime=None, cmd=None),
                  order=[r.variant for r in runs], runs=runs, sequential=sequential)
    if alternate:
        return AlternationDoc(kind="alternate", every_s=2.0, duration_s=60.0, discard_s=1.0, **shared)
    return CompareDoc(repeat=repeat, drop_caches=False, settle_s=0.0, **shared)


def as_json(doc: CompareDoc | AlternationDoc) -> dict:
    """The document as saved (what the command line's pooling reads)."""
    return encode(doc)
