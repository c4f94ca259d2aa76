"""A matrix under --until-verdict, by seeded simulation of whole matrices through the same pure functions the
run loop uses (core/statistics/matrix_sequential.py: which slots run, when cells decide) and the same judge.

Acceptance: the matrix-wide A/A false-positive rate stays at most alpha + 1 point; a 30% effect on every cell is
decided in fewer runs than the fixed --repeat that reaches the same power.
"""

import math
import random
from dataclasses import replace

import pytest
from matrix_support import judged as judge_matrix

from iosched.core.documents.document import MatrixDoc, MatrixRunDoc, MatrixSequentialDoc
from iosched.core.experiment.matrix import simulate_matrix as simulate
from iosched.core.statistics.judge import primaries
from iosched.core.statistics.matrix_sequential import State, matrix_sequential_plan, state
from iosched.core.statistics.sequential import pocock_level, quantile_level

ALPHA = 0.05
LIMIT = ALPHA + 0.01
WORKLOADS = ["w1", "w2", "w3"]
LABELS = ["none", "bfq", "kyber"]


def empty_matrix(repeat: int, seq: MatrixSequentialDoc | None) -> MatrixDoc:
    return replace(simulate(random.Random(0), seq, repeat, WORKLOADS, LABELS, 1.0, 0.1), runs=[])


def _run(slot: int, w: str, v: str, value: float) -> MatrixRunDoc:
    return MatrixRunDoc(index=slot, variant=v, start=0.0, end=0.0, valid=True, invalid_reason=None, config={},
                        metrics={"iops": value}, slot=slot, workload=w)


def run_matrix_sim(rng: random.Random, seq: MatrixSequentialDoc | None, repeat: int, effect: float,
                   cv: float) -> MatrixDoc:
    """The run loop of core/experiment/matrix.py without a device (core/experiment/matrix.py simulate_matrix)."""
    return simulate(rng, seq, repeat, WORKLOADS, LABELS, effect, cv)


def test_the_quantile_level_is_the_bisected_pocock_level():
    looks = (4, 6, 8, 10, 12)
    assert quantile_level(looks, 0.05 / 6) == pytest.approx(pocock_level(looks, 0.05 / 6, 2), rel=1e-6)


def test_the_boundary_rises_as_cells_decide():
    seq = matrix_sequential_plan(12, ALPHA, 6)
    assert seq.looks == [4, 6, 8, 10, 12] and len(seq.levels) == 6
    assert seq.levels == sorted(seq.levels) and seq.levels[-1] < ALPHA
    assert seq.levels[0] < ALPHA / 6  # the first cell faces alpha / 6 spread over five looks


def test_a_a_matrix_false_positive_rate_of_the_whole_matrix():
    seq = matrix_sequential_plan(12, ALPHA, 6)
    rng = random.Random(2026_11_24)
    sims, hits = 800, 0
    for i in range(sims):
        doc = run_matrix_sim(rng, seq, 12, 1.0, 0.2)
        decided = bool(state(doc, primaries(doc)).decided)
        hits += decided
        if i % 10 == 0 or decided:  # the verdict claims exactly the crossings (checked on a tenth of the rest)
            j = judge_matrix(doc, ALPHA, planning=False)
            assert decided == any(c.get("significant") for c in j["cells"])
            assert decided == any(c.get("decided_at") for c in j["cells"])
    assert hits / sims <= LIMIT, hits / sims


def test_peeking_at_holm_every_round_would_fail_the_same_check():
    """The check above can fail: judging the same matrices with plain Holm at each look is far above alpha."""
    rng = random.Random(5)
    sims, hits = 400, 0
    for _ in range(sims):
        doc = run_matrix_sim(rng, None, 12, 1.0, 0.2)
        per_round = len(WORKLOADS) * len(LABELS)
        hits += any(any(c.get("significant") for c in judge_matrix(
            replace(doc, runs=[r for r in doc.runs if r.slot < look * per_round]), ALPHA, planning=False)["cells"])
            for look in (4, 6, 8, 10, 12))
    assert hits / sims > 0.08, hits / sims


def test_a_30_percent_effect_is_decided_in_fewer_runs_than_the_fixed_repeat_of_the_same_power():
    cv, effect, most, sims = 0.2, 0.7, 16, 200
    seq = matrix_sequential_plan(most, ALPHA, 6)
    rng = random.Random(30)
    runs, all_decided = 0, 0
    for _ in range(sims):
        doc = run_matrix_sim(rng, seq, most, effect, cv)
        runs += len(doc.runs)
        all_decided += len(state(doc, primaries(doc)).decided) == 6
    power, mean_runs = all_decided / sims, runs / sims
    assert power >= 0.8, power
    fixed = None
    for n in range(4, 41, 2):
        hit = sum(all(c.get("significant") for c in judge_matrix(run_matrix_sim(rng, None, n, effect, cv), ALPHA,
                                                                 planning=False)["cells"]
                      if c["variant"] != LABELS[0]) for _ in range(120))
        if hit / 120 >= power:
            fixed = n
            break
    assert fixed is not None
    assert mean_runs < fixed * len(WORKLOADS) * len(LABELS), (mean_runs, fixed)


def test_a_decided_cell_takes_no_more_runs_and_a_decided_workload_stops():
    seq = matrix_sequential_plan(12, ALPHA, 6)
    rng = random.Random(8)
    doc = empty_matrix(12, seq)
    metric_of = primaries(doc)
    per_round = 9
    st = State({}, 0)
    effects = {"w1": 0.5, "w2": 1.0, "w3": 1.0}  # w1's cells decide at the first look, the others go on
    for slot, (w, v) in enumerate(doc.order):
        if st.skips(w, v, LABELS, slot // per_round):
            continue
        value = 1000.0 * math.exp(rng.gauss(0.0, 0.02)) * (effects[w] if v != "none" else 1.0)
        doc = replace(doc, runs=[*doc.runs, _run(slot, w, v, value)])
        if (slot + 1) % per_round == 0:
            st = state(doc, metric_of)
    assert {k: d.look for k, d in st.decided.items()} == {("w1", "bfq"): 4, ("w1", "kyber"): 4}
    w1 = [r for r in doc.runs if r.workload == "w1"]
    assert len(w1) == 4 * 3 and max(r.slot for r in w1) < 4 * per_round  # w1 stopped, baseline too
    assert sum(r.workload == "w2" for r in doc.runs) == 12 * 3
    j = judge_matrix(doc, ALPHA)
    assert j["correction"] == "sequential holm" and j["comparisons"] == 6
    cell = next(c for c in j["cells"] if (c["workload"], c["variant"]) == ("w1", "bfq"))
    assert cell["decided_at"] == 4 and cell["verdict"].endswith("decided at 4 runs")
    assert cell["p_adjusted"] < ALPHA
    other = next(c for c in j["cells"] if (c["workload"], c["variant"]) == ("w2", "bfq"))
    assert not other["significant"] and other["decided_at"] is None and other["p_adjusted"] >= ALPHA


def test_a_matrix_that_has_not_reached_its_first_look_cannot_judge_yet():
    seq = matrix_sequential_plan(12, ALPHA, 6)
    doc = empty_matrix(12, seq)
    doc = replace(doc, runs=[_run(slot, w, v, 1000.0 * (0.5 if v != "none" else 1.0) + slot)
                             for slot, (w, v) in enumerate(doc.order[:27])])
    j = judge_matrix(doc, ALPHA)
    off = [c for c in j["cells"] if c["variant"] != "none"]
    assert all(not c["significant"] and "first look (4 runs per cell) was not reached" in c["cannot_judge"]
               for c in off)


def test_another_metric_is_judged_as_a_fixed_matrix_and_says_so():
    seq = matrix_sequential_plan(4, ALPHA, 6)
    rng = random.Random(3)
    doc = run_matrix_sim(rng, seq, 4, 1.0, 0.1)
    doc = replace(doc, runs=[replace(r, metrics={**r.metrics, "mb_s": r.metrics["iops"] / 256}) for r in doc.runs])
    j = judge_matrix(doc, ALPHA, "mb_s")
    assert j["correction"] == "holm" and "another metric" in j["method"]


def test_the_last_look_is_the_one_where_the_last_cell_decided():
    """Once every cell has decided, the later rounds are all skipped: they are no look reached."""
    seq = matrix_sequential_plan(12, ALPHA, 6)
    doc = run_matrix_sim(random.Random(4), seq, 12, 0.5, 0.05)
    st = state(doc, primaries(doc))
    assert len(st.decided) == 6 and st.last_look == max(d.look for d in st.decided.values())
