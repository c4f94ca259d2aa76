"""The one-machine judges as a fleet calls them, on a host's compare, in one place: the fleet's verdict, its plans
and `report` call these, so a change in how one machine's compare is judged reaches a fleet's hosts alike."""

from __future__ import annotations

from iosched.core.documents.document import ExperimentDoc, JudgementDoc
from iosched.core.statistics.judge import at_last_look, default_primary, estimates
from iosched.core.statistics.stats import CannotJudge, RatioEstimate
from iosched.core.statistics.verdict import judge


def host_judgement(doc: ExperimentDoc, alpha: float, metric: str) -> JudgementDoc:
    """The host's own verdict on ``metric``, as a compare made there is judged (without its planning figure)."""
    return judge(doc, alpha, metric, planning=False)


def host_estimates(doc: ExperimentDoc, metric: str) -> dict[str, RatioEstimate | CannotJudge]:
    """Each variant's estimate against the baseline on one host, a host that ran until a verdict taken at its last
    planned look (as its own verdict is)."""
    return estimates(at_last_look(doc, metric), metric)


def host_primary(doc: ExperimentDoc) -> str:
    """The metric the host's compare is judged on unless one is named."""
    return default_primary(doc)
