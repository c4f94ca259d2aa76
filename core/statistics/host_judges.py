"""The one-machine judges as a fleet calls them: on a host's compare as its declared type, in one place.

The judges (verdict.py, matrix_judge.py) read an experiment's document in its JSON form; a host's compare in a
fleet, and a saved compare `report A B C` pools, is its declared type (core/documents/document.py). Each function
here hands a judge the JSON form (core/base/encode.py) and returns what the judge says, a judgement as its
declared type. When the judges take the declared types, these become direct calls and their callers (the fleet's
verdict, the fleet's plans, `report`) stay as they are.
"""

from __future__ import annotations

from dataclasses import replace

from iosched.core.base.decode import decode
from iosched.core.base.encode import encode
from iosched.core.documents.document import ExperimentDoc, JudgementDoc
from iosched.core.documents.schema_version import Doc
from iosched.core.statistics.matrix_judge import as_matrix, judge_matrix
from iosched.core.statistics.stats import CannotJudge, RatioEstimate
from iosched.core.statistics.verdict import at_last_look, default_primary, estimates, judge


def _judged_form(doc: ExperimentDoc) -> Doc:
    """What the verdict's judges read of a compare: all of it but fio's own output of each run, which they never
    read and which is most of a host's document (the charts read it: ``host_matrix`` hands them all)."""
    plain: Doc = encode(replace(doc, runs=[replace(r, fio=None) for r in doc.runs]))
    return plain


def host_judgement(doc: ExperimentDoc, alpha: float, metric: str) -> JudgementDoc:
    """The host's own verdict on ``metric``, as a compare made there is judged (without its planning figure)."""
    judged: JudgementDoc = decode(JudgementDoc, judge(_judged_form(doc), alpha, metric, planning=False))
    return judged


def host_estimates(doc: ExperimentDoc, metric: str) -> dict[str, RatioEstimate | CannotJudge]:
    """Each variant's estimate against the baseline on one host, a host that ran until a verdict taken at its last
    planned look (as its own verdict is)."""
    return estimates(at_last_look(_judged_form(doc), metric), metric)


def host_primary(doc: ExperimentDoc) -> str:
    """The metric the host's compare is judged on unless one is named."""
    return default_primary(_judged_form(doc))


def host_matrix(doc: ExperimentDoc, alpha: float, metric: str | None) -> tuple[Doc, Doc]:
    """The host's compare as a one-workload matrix and its matrix judgement: what the result charts draw."""
    view = as_matrix(encode(doc))
    return view, judge_matrix(view, alpha, metric)
