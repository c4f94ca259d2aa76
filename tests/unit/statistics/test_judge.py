"""The one judge (core/statistics/judge.py): a compare is a matrix of one workload. The same runs judged as a compare
and as a matrix of one row give the same numbers for every variant; every kind of run document reads as cells; a
matrix cell's geometric mean is the figure its ratio is of; and what the judge returns holds numbers and reason
codes, which each document keeps and core/present says."""

from __future__ import annotations

import math
import random

import pytest
from doc_support import experiment_doc, matrix_doc

from iosched.core.statistics.judge import judge, samples
from iosched.core.statistics.matrix_judge import judge_matrix
from iosched.core.statistics.stats import CannotJudge, RatioEstimate

LABELS = ["none", "mq-deadline", "bfq"]


def _runs(seed: int, per: int = 4) -> list[tuple[str, float]]:
    rnd = random.Random(seed)
    return [(lb, 100e3 * (1.0 - 0.2 * i) * rnd.lognormvariate(0.0, 0.1)) for _ in range(per)
            for i, lb in enumerate(LABELS)]


def _as_both(runs: list[tuple[str, float]]):
    compare = experiment_doc({"kind": "compare", "variants": [{"label": lb} for lb in LABELS],
                              "workload": {"job": {"name": "4k-randread"}},
                              "runs": [{"variant": lb, "metrics": {"iops": x}} for lb, x in runs]})
    matrix = matrix_doc({"variants": [{"label": lb} for lb in LABELS], "workloads": [{"name": "4k-randread"}],
                         "runs": [{"slot": i, "workload": "4k-randread", "variant": lb, "metrics": {"iops": x}}
                                  for i, (lb, x) in enumerate(runs)]})
    return compare, matrix


@pytest.mark.parametrize("seed", range(5))
def test_a_compare_and_a_matrix_of_its_one_workload_are_judged_alike(seed):
    compare, matrix = _as_both(_runs(seed))
    a, b = judge(compare), judge(matrix)
    assert a.workloads == b.workloads == ["4k-randread"] and a.metric_of == b.metric_of == {"4k-randread": "iops"}
    assert [c.variant for c in a.primary] == [c.variant for c in b.primary] == LABELS[1:]
    for x, y in zip(a.primary, b.primary, strict=True):
        assert isinstance(x.estimate, RatioEstimate) and isinstance(y.estimate, RatioEstimate)
        assert x.estimate.ratio == pytest.approx(y.estimate.ratio)
        assert x.p_adjusted == pytest.approx(y.p_adjusted) and x.significant == y.significant
        assert x.interval == pytest.approx(y.interval) and x.family == y.family == 2
    assert [c.summaries["iops"].mean for c in a.cells] == pytest.approx([c.summaries["iops"].mean for c in b.cells])


def test_every_run_document_reads_as_cells():
    compare, matrix = _as_both(_runs(1))
    alternation = experiment_doc({"kind": "alternate", "variants": [{"label": lb} for lb in LABELS[:2]],
                                  "runs": [{"variant": LABELS[i % 2], "metrics": {"iops": 1.0}} for i in range(8)]})
    (one,) = samples(compare)
    assert one[0] == "4k-randread" and not one[1].alternate and len(one[1].runs) == 12
    assert [w for w, _ in samples(matrix)] == ["4k-randread"] and samples(matrix)[0][1].finite
    assert samples(alternation)[0][1].alternate


def test_a_matrix_cells_ratio_is_its_geometric_mean_over_the_baselines():
    _, matrix = _as_both(_runs(2))
    j = judge_matrix(matrix)
    base = next(c for c in j.cells if c.is_baseline)
    for c in (c for c in j.cells if not c.is_baseline):
        assert c.geomean is not None and base.geomean is not None and c.ratio is not None
        assert c.ratio == pytest.approx(c.geomean / base.geomean, rel=1e-12)
        assert c.geomean != pytest.approx(c.mean, rel=1e-6)  # not the arithmetic mean beside it


def test_what_cannot_be_judged_is_a_reason_code_not_a_sentence():
    runs = [(lb, 0.0 if lb == "bfq" else x) for lb, x in _runs(3)]
    compare, matrix = _as_both(runs)
    for j in (judge(compare), judge(matrix)):
        bfq = next(c for c in j.primary if c.variant == "bfq")
        assert isinstance(bfq.estimate, CannotJudge) and bfq.estimate.reason == "not-positive:variant"
        assert bfq.p_adjusted is None and not bfq.significant and bfq.interval is None
    cell = next(c for c in judge_matrix(matrix).cells if c.variant == "bfq")
    assert cell.cannot_judge == "not-positive:variant" and cell.verdict == "" and cell.geomean is None
    assert math.isclose(cell.mean or 0.0, 0.0)
