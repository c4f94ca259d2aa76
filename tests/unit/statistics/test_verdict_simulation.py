"""The verdict's error rates, by seeded simulation of whole experiments through the same pure functions.

A/A experiments (no real difference) must come out "significant" anywhere in the reported verdict at most
alpha + 1 point of the time: two and three variants, fixed-n and sequential, and live alternation under
drift and under an artefact that alternates with the turn. The ratio's 95% CI must cover the truth 93-97%
of the time.
"""

import math
import random
from collections.abc import Callable

import numpy as np
import pytest
from doc_support import experiment_doc, run_doc
from scipy.stats import ttest_ind

from iosched.core.base.encode import encode
from iosched.core.documents.document import SequentialDoc
from iosched.core.experiment.variants import alternation_order, plan_order
from iosched.core.present.worded import worded_judgement
from iosched.core.statistics.verdict import RunningVerdict, sequential_plan
from iosched.core.statistics.verdict import judge as judge_doc

ALPHA = 0.05
LIMIT = ALPHA + 0.01


def batch_doc(rng: random.Random, arms: int, n: int, cv: float = 0.15, ratio: float = 1.0,
              drift: float = 0.0) -> dict:
    """Runs in the experiment's A B B A order; a primary metric and two secondaries, one tied to it."""
    labels = [f"v{i}" for i in range(arms)]
    runs = []
    for i, a in enumerate(plan_order(arms, n)):
        iops = 1000.0 * math.exp(rng.gauss(0.0, cv) + drift * i) * (ratio if a == 1 else 1.0)
        runs.append({"index": i, "variant": labels[a], "metrics": {
            "iops": iops, "cpu_us_per_io": 1e6 / iops * math.exp(rng.gauss(0.0, 0.05)),
            "clat_p99_us": 500.0 * math.exp(rng.gauss(0.0, 0.3))}})
    return {"variants": [{"label": lb} for lb in labels], "runs": runs, "repeat": n}


def judge(doc: dict, alpha: float, planning: bool = True) -> dict:
    """The verdict of a document written here (without what the test notes in it), as its JSON."""
    mine = {k: v for k, v in doc.items() if k != "stopped_at"}
    doc = experiment_doc(mine)
    return encode(worded_judgement(doc, judge_doc(doc, alpha, planning=planning)))  # with its words, as --json


def any_significant(verdict: dict) -> bool:
    return any(c["significant"] for c in verdict["comparisons"])


@pytest.mark.parametrize(("arms", "n"), [(2, 3), (2, 10), (3, 4)])
def test_fixed_n_a_a_false_positive_rate_of_the_whole_verdict(arms, n):
    rng = random.Random(100 + 10 * arms + n)
    sims = 1500
    hits = sum(any_significant(judge(batch_doc(rng, arms, n), ALPHA, planning=False)) for _ in range(sims))
    assert hits / sims <= LIMIT, hits / sims


def test_secondaries_are_always_reported_but_only_claimed_through_the_primary():
    rng = random.Random(7)
    v = judge(batch_doc(rng, 2, 6, cv=0.05, ratio=0.7), ALPHA)
    by = {c["metric"]: c for c in v["comparisons"]}
    assert set(by) == {"iops", "cpu_us_per_io", "clat_p99_us"} and by["iops"]["primary"]
    assert by["iops"]["significant"] and by["cpu_us_per_io"]["significant"]  # tied to IOPS: a real effect
    assert not by["clat_p99_us"]["significant"] and "no significant difference" in by["clat_p99_us"]["verdict"]
    # No primary effect: the tied secondary is still shown, with its p-value, but not claimed.
    v = judge(batch_doc(rng, 2, 6, cv=0.05), ALPHA)
    assert all(c["p_adjusted"] >= max(x["p_adjusted"] for x in v["comparisons"] if x["primary"])
               for c in v["comparisons"])


def run_sequential(rng: random.Random, arms: int, plan: SequentialDoc, make: Callable[[int, int], float]) -> dict:
    """Feed runs in A B B A order until the boundary stops it or the maximum is reached."""
    labels = [f"v{i}" for i in range(arms)]
    rv = RunningVerdict(labels, ALPHA, "iops", "compare", plan)
    doc = {"variants": [{"label": lb} for lb in labels], "runs": [], "sequential": plan}
    for i, a in enumerate(plan_order(arms, plan.max_per_arm)):
        iops = make(i, a)
        run = {"index": i, "variant": labels[a], "metrics": {
            "iops": iops, "cpu_us_per_io": 1e6 / iops * math.exp(rng.gauss(0.0, 0.05))}}
        doc["runs"].append(run)
        if rv.should_stop(run_doc(run)):
            break
    doc["stopped_at"] = rv.decided_at
    return doc


@pytest.mark.parametrize(("arms", "max_per_arm", "looks"),
                         [(2, 12, [4, 6, 8, 10, 12]), (3, 12, [4, 6, 8, 10, 12]), (2, 11, [4, 6, 8, 10, 11])])
def test_sequential_a_a_false_positive_rate_of_the_whole_verdict(arms, max_per_arm, looks):
    # An odd maximum: its last run per arm is a planned look too, so judging all the runs stays at a look.
    plan = sequential_plan(max_per_arm, ALPHA, arms, alternate=False)
    assert plan.looks == looks and plan.level < ALPHA / 2
    rng = random.Random(200 + arms + max_per_arm)
    sims = 1500
    hits = 0
    for _ in range(sims):
        doc = run_sequential(rng, arms, plan, lambda i, a: 1000.0 * math.exp(rng.gauss(0.0, 0.2)))
        verdict = judge(doc, ALPHA, planning=False)
        hits += any_significant(verdict)
        assert any_significant(verdict) == (doc["stopped_at"] is not None)  # stop <=> primary claimed
    assert hits / sims <= LIMIT, hits / sims


def test_judge_tests_a_sequential_experiment_only_at_its_looks():
    """Runs past the last look reached (one arm a run ahead, an extra run after a stop) are left out."""
    plan = sequential_plan(12, ALPHA, 2, alternate=False)
    rng = random.Random(11)
    doc = run_sequential(rng, 2, plan, lambda i, a: 1000.0 * math.exp(rng.gauss(0.0, 0.1)) * (0.7 if a else 1))
    assert doc["stopped_at"] is not None and len(doc["runs"]) == 2 * doc["stopped_at"]
    at_look = judge(doc, ALPHA, planning=False)
    # The base arm's 5th run: an extreme value that would change the test if it were counted.
    extra = {**doc, "runs": [*doc["runs"], {"index": len(doc["runs"]), "variant": "v0", "metrics": {"iops": 1.0}}]}
    v = judge(extra, ALPHA, planning=False)
    assert v["comparisons"] == at_look["comparisons"] and v["summaries"] == at_look["summaries"]
    assert "judged at the last planned look: 1 later run(s) left out" in v["notes"][0]


def test_peeking_at_a_fixed_level_would_fail_the_same_check():
    """The check above can fail: stopping at the first p < alpha over the same looks is far above alpha."""
    rng = random.Random(300)
    sims = 1500
    pairs = [([rng.gauss(0, 0.2) for _ in range(12)], [rng.gauss(0, 0.2) for _ in range(12)]) for _ in range(sims)]
    a, b = (np.array([pair[k] for pair in pairs]) for k in (0, 1))
    # The same Welch tests as one per simulation and look, done a look at a time over every simulation at once.
    claimed = np.zeros(sims, dtype=bool)
    for n in (4, 6, 8, 10, 12):
        claimed |= ttest_ind(a[:, :n], b[:, :n], axis=1, equal_var=False).pvalue < ALPHA
    assert claimed.sum() / sims > 0.09


def test_sequential_stops_early_on_a_large_effect():
    plan = sequential_plan(12, ALPHA, 2, alternate=False)
    rng = random.Random(9)
    stops = [run_sequential(rng, 2, plan, lambda i, a: 1000.0 * math.exp(rng.gauss(0.0, 0.1)) * (0.7 if a else 1))
             ["stopped_at"] for _ in range(200)]
    assert None not in stops and sum(s == 4 for s in stops) / len(stops) > 0.8  # mostly at the first look


# --- live alternation -------------------------------------------------------------------------------------------


def linear(rng: random.Random) -> Callable[[int], float]:
    return lambda t: 0.03 * t  # 3% a turn: far larger than the turn-to-turn noise


def ar1(rng: random.Random) -> Callable[[int], float]:
    state = [rng.gauss(0.0, 0.1)]

    def f(t: int) -> float:
        state[0] = 0.9 * state[0] + rng.gauss(0.0, 0.045)
        return state[0]
    return f


def alternating(rng: random.Random) -> Callable[[int], float]:
    return lambda t: 0.05 if t % 2 else -0.05  # flips with every turn, as a periodic background job would


def alternation_doc(rng: random.Random, arms: int, passes: int, drift: Callable[[int], float],
                    noise: float = 0.02, order: list[int] | None = None) -> dict:
    labels = [f"v{i}" for i in range(arms)]
    order = order if order is not None else alternation_order(arms, passes)
    runs = [{"index": t, "variant": labels[a],
             "metrics": {"iops": 1000.0 * math.exp(drift(t) + rng.gauss(0.0, noise))}} for t, a in enumerate(order)]
    return {"kind": "alternate", "variants": [{"label": lb} for lb in labels], "runs": runs, "every_s": 2.0}


@pytest.mark.parametrize("drift", [linear, ar1, alternating])
@pytest.mark.parametrize("arms", [2, 3])
def test_alternation_a_a_false_positive_rate_under_drift(drift, arms):
    rng = random.Random(400 + arms)
    sims = 1200
    docs = (alternation_doc(rng, arms, 8, drift(rng)) for _ in range(sims))
    hits = sum(any_significant(judge(doc, ALPHA, planning=False)) for doc in docs)
    assert hits / sims <= LIMIT, hits / sims


def test_the_alternating_artefact_fools_a_b_a_b_with_independent_turns():
    """Why the order and the pairing matter: the old scheme calls the same artefact significant nearly always."""
    rng = random.Random(500)
    hits = 0
    for _ in range(300):
        doc = alternation_doc(rng, 2, 8, alternating(rng), order=[t % 2 for t in range(16)])
        a = [r["metrics"]["iops"] for r in doc["runs"] if r["variant"] == "v0"]
        b = [r["metrics"]["iops"] for r in doc["runs"] if r["variant"] == "v1"]
        hits += ttest_ind(a, b, equal_var=False).pvalue < ALPHA
    assert hits / 300 > 0.9


def test_sequential_alternation_a_a_under_ar1_drift():
    plan = sequential_plan(6, ALPHA, 2, alternate=True)
    assert plan.looks == [3, 4, 5, 6]
    rng = random.Random(600)
    sims, hits = 1000, 0
    for _ in range(sims):
        drift = ar1(rng)
        rv = RunningVerdict(["v0", "v1"], ALPHA, "iops", "alternate", plan)
        doc = {"kind": "alternate", "variants": [{"label": "v0"}, {"label": "v1"}], "runs": [], "sequential": plan}
        for t, a in enumerate(alternation_order(2, 12)):
            iops = 1000.0 * math.exp(drift(t) + rng.gauss(0, 0.02))
            run = {"index": t, "variant": f"v{a}", "metrics": {"iops": iops}}
            doc["runs"].append(run)
            if rv.should_stop(run_doc(run)):
                break
        hits += any_significant(judge(doc, ALPHA, planning=False))
    assert hits / sims <= LIMIT, hits / sims


# --- coverage ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "cv"), [(3, 0.1), (8, 0.2)])
def test_ratio_ci_coverage_batch(n, cv):
    rng = random.Random(700 + n)
    sims, covered = 2000, 0
    for _ in range(sims):
        verdict = judge(batch_doc(rng, 2, n, cv=cv, ratio=0.7), ALPHA, planning=False)
        (c,) = [c for c in verdict["comparisons"] if c["primary"]]
        covered += c["ci95"][0] <= 0.7 <= c["ci95"][1]
    assert 0.93 <= covered / sims <= 0.97, covered / sims


def test_ratio_ci_coverage_alternation():
    rng = random.Random(800)
    sims, covered = 2000, 0
    for _ in range(sims):
        doc = alternation_doc(rng, 2, 8, lambda t: 0.0, noise=0.05)
        for r in doc["runs"]:
            r["metrics"]["iops"] *= 1.3 if r["variant"] == "v1" else 1.0
        (c,) = [c for c in judge(doc, ALPHA)["comparisons"] if c["primary"]]
        covered += c["ci95"][0] <= 1.3 <= c["ci95"][1]
    assert 0.93 <= covered / sims <= 0.97, covered / sims
