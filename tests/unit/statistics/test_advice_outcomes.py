"""The advice's three outcomes (core/statistics/advice_rule.py): switch, keep shown equal, cannot tell, each reason of
the last, the margin, the equivalence test checked against scipy's t distribution (what statsmodels' ``ttost_ind``
computes), and a seeded simulation of the whole verdict: no difference switches at most alpha of the time, a 20%
better candidate is kept at most 5% of the time, runs in two groups are never kept above 5%."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats as sp

from iosched.core.statistics.advice_rule import (
    REASONS,
    Estimate,
    GoalEvidence,
    Rule,
    Split,
    decide,
    estimates_of,
    runs_to_decide,
    splits_of,
)
from iosched.core.statistics.advice_simulation import SimulatedGoal, simulate_advice
from iosched.core.statistics.stats import log_ratio_welch


def est(variant: str, ratio: float, se: float, df: float = 14.0, level: float = 0.95) -> Estimate:
    """An estimate with a symmetric log interval at ``level`` on ``df`` degrees of freedom."""
    half = sp.t.ppf(0.5 + level / 2, df) * se
    d = math.log(ratio)
    return Estimate(variant, ratio, math.exp(d - half), math.exp(d + half), 0.5, se * 2, 8, None, level, se, df)


def one(*estimates: Estimate, metric: str = "iops", **kw: object) -> GoalEvidence:
    return GoalEvidence("throughput", metric, "mq-deadline", tuple(estimates), 8, **kw)  # type: ignore[arg-type]


def test_switch_needs_the_interval_clear_and_the_estimate_at_the_margin():
    g = decide([one(est("none", 1.28, 0.03))]).goals[0]
    assert g.outcome == "switch" and g.recommended == "none" and g.reasons == ()
    small = decide([one(est("none", 1.08, 0.01))]).goals[0]  # certain, but below +10%: shown equal
    assert small.outcome == "keep-equal" and small.recommended is None
    assert decide([one(est("none", 1.08, 0.01))], Rule(margin=0.05)).goals[0].outcome == "switch"


def test_latency_is_better_lower():
    g = decide([one(est("bfq", 0.5, 0.05), metric="clat_p99_us")]).goals[0]
    assert g.outcome == "switch" and g.recommended == "bfq"
    worse = decide([one(est("bfq", 1.5, 0.05), metric="clat_p99_us")]).goals[0]
    assert worse.outcome == "keep-equal"  # shown worse: equal or worse is a keep


def test_keep_equal_is_intersection_union_each_candidate_at_alpha():
    """Every candidate's one-sided 95% bound (the 90% interval's better end) must lie below +margin; no correction:
    a keep needs every test to pass, so its error is at most the largest one's (alpha)."""
    inside = [est("a", 1.0, 0.03), est("b", 1.02, 0.03), est("c", 0.97, 0.03)]
    g = decide([one(*inside)]).goals[0]
    assert g.outcome == "keep-equal"
    for e in inside:
        _lo, hi = e.equal_interval(0.05)
        assert hi == pytest.approx(math.exp(math.log(e.ratio) + sp.t.ppf(0.95, 14.0) * 0.03))
        assert hi < 1.1
    # One candidate whose bound reaches past +10% is enough to stop the keep.
    g = decide([one(*inside, est("d", 1.05, 0.04))]).goals[0]
    assert g.outcome == "cannot-tell" and g.reasons == ("too-wide",)


def test_tost_matches_scipy():
    """The keep's test is the upper half of TOST: p = P(t > (log ratio - log(1 + margin)) / se) below alpha exactly
    when the 90% interval's upper end lies below log(1 + margin) (statsmodels ttost_ind, here with scipy's t)."""
    rng = random.Random(5)
    for _ in range(200):
        base = [math.exp(rng.gauss(0, 0.08)) for _ in range(rng.randint(3, 12))]
        var = [math.exp(rng.gauss(rng.uniform(-0.1, 0.12), 0.08)) for _ in range(rng.randint(3, 12))]
        (e,) = estimates_of({"v": log_ratio_welch(base, var)}, 0.05)
        lb, lv = [math.log(x) for x in base], [math.log(x) for x in var]
        welch = sp.ttest_ind(lv, lb, equal_var=False)
        d = sum(lv) / len(lv) - sum(lb) / len(lb)
        se = d / welch.statistic
        df = welch.df
        p_upper = sp.t.cdf((d - math.log(1.1)) / se, df)  # H0: log ratio >= log 1.1
        assert e.se_log == pytest.approx(se, rel=1e-6) and e.df == pytest.approx(df, rel=1e-6)
        _lo, hi = e.equal_interval(0.05)
        assert hi == pytest.approx(math.exp(d + sp.t.ppf(0.95, df) * se), rel=1e-9)
        if abs(p_upper - 0.05) > 1e-9:
            assert (p_upper < 0.05) == (hi < 1.1)
        g = decide([one(e)]).goals[0]
        assert (g.outcome == "keep-equal") == (hi < 1.1 and not (e.ci_low > 1.0 and e.ratio >= 1.1))


def test_too_wide_says_the_runs_that_would_decide():
    g = decide([one(est("none", 1.1, 0.12))]).goals[0]
    assert g.outcome == "cannot-tell" and g.reasons == ("too-wide",)
    noise = 0.12 * 2
    assert g.runs_needed == runs_to_decide(noise, 0.1, 0.05, 0.8)
    assert g.runs_needed is not None and g.runs_needed > 8
    assert runs_to_decide(0.1, 0.1, 0.05) < runs_to_decide(0.2, 0.1, 0.05)  # more noise, more runs
    assert runs_to_decide(0.1, 0.2, 0.05) < runs_to_decide(0.1, 0.1, 0.05)  # a larger margin, fewer
    assert runs_to_decide(None, 0.1, 0.05) is None


def test_two_groups_stop_both_switch_and_keep():
    split = Split("bfq", 5, 8, (90.0, 120.0), (2000.0, 2600.0))
    g = decide([one(est("bfq", 1.5, 0.03), splits=(split,))]).goals[0]
    assert g.outcome == "cannot-tell" and g.reasons == ("two-groups",) and g.recommended is None
    assert decide([one(est("bfq", 1.0, 0.02), splits=(split,))]).goals[0].reasons == ("two-groups",)
    values = {"bfq": [100, 110, 95, 2000, 2100, 105, 2050, 98], "none": [1000, 1010, 990, 1005]}
    (s,) = splits_of(values, "clat_p50_us")
    assert s.variant == "bfq" and (s.better, s.n) == (5, 8) and s.better_range == (95, 110)
    (s,) = splits_of(values, "iops")  # the better side of a rate is its higher group
    assert (s.better, s.n) == (3, 8)


def test_the_winners_designed_effect_in_some_runs_still_switches():
    """bfq's weight raise catches the reader in 5 of 8 runs and leaves it as it was in the other 3: a switch, with
    how often it fired; the same split with the other runs far worse than the current setting cannot tell."""
    fired = Split("bfq", 5, 8, (40.0, 60.0), (7000.0, 8000.0), 1.02)
    g = decide([one(est("bfq", 0.2, 0.3), metric="fg:clat_p50_us", splits=(fired,))]).goals[0]
    assert g.outcome == "switch" and g.recommended == "bfq" and g.splits == (fired,)
    hurt = Split("bfq", 5, 8, (40.0, 60.0), (70000.0, 80000.0), 10.0)
    g = decide([one(est("bfq", 0.2, 0.3), metric="fg:clat_p50_us", splits=(hurt,))]).goals[0]
    assert g.outcome == "cannot-tell" and g.reasons == ("two-groups",)
    values = {"none": [7500.0, 7700.0, 7600.0, 7400.0], "bfq": [50, 45, 7600, 55, 7800, 48, 7700, 52]}
    (s,) = splits_of(values, "fg:clat_p50_us")
    assert (s.better, s.n) == (5, 8) and s.worse_vs_baseline == pytest.approx(1.02, abs=0.02)


def test_busy_and_a_replay_behind_stop_a_keep_never_a_switch():
    equal = est("none", 1.0, 0.02)
    g = decide([one(equal, busy=("loop9 (pid 42, compare)",))]).goals[0]
    assert g.outcome == "cannot-tell" and g.reasons == ("busy",) and g.busy == ("loop9 (pid 42, compare)",)
    g = decide([one(equal, invalid_runs=3, behind_runs=3)]).goals[0]
    assert g.outcome == "cannot-tell" and g.reasons == ("replay-behind",)
    assert decide([one(est("none", 1.4, 0.03), busy=("load average 5.0 on 2 CPUs",))]).goals[0].outcome == "switch"


def test_too_few_runs_and_unjudged():
    few = Estimate("kyber", None, None, None, None, None, 1, "few-runs:variant")
    odd = Estimate("bfq", None, None, None, None, None, 8, "no-variance")
    g = decide([one(est("none", 1.0, 0.02), few)]).goals[0]
    assert g.outcome == "cannot-tell" and g.reasons == ("too-few-runs",)
    g = decide([one(est("none", 1.0, 0.02), odd)]).goals[0]
    assert g.outcome == "cannot-tell" and g.reasons == ("unjudged",)
    g = decide([one(est("none", 1.1, 0.12), invalid_runs=4)]).goals[0]  # invalid runs left it too wide
    assert g.reasons == ("too-wide", "too-few-runs") and g.invalid_runs == 4
    assert decide([one()]).goals[0].reasons == ("unjudged",)  # nothing to judge
    assert set(REASONS) == {"too-wide", "budget", "two-groups", "busy", "too-few-runs", "unjudged", "replay-behind"}


def test_a_test_stopped_at_the_budget_answers_with_what_its_runs_show():
    wide = decide([one(est("none", 1.05, 0.12), stopped=True)]).goals[0]
    assert wide.outcome == "cannot-tell" and wide.reasons == ("budget",) and wide.stopped
    assert wide.runs_needed is not None and wide.runs_needed > 8
    assert decide([one(est("none", 1.4, 0.03), stopped=True)]).goals[0].outcome == "switch"
    assert decide([one(est("none", 1.0, 0.01), stopped=True)]).goals[0].outcome == "keep-equal"
    busy = decide([one(est("none", 1.05, 0.12), stopped=True, busy=("fio (pid 9) 90% of a CPU",))]).goals[0]
    assert busy.reasons == ("budget", "busy")
    never = Estimate("none", None, None, None, None, None, 0, "few-runs:variant")  # the test never began
    g = decide([one(never, stopped=True, noise=0.1)]).goals[0]
    assert g.outcome == "cannot-tell" and g.reasons == ("budget",)
    assert g.runs_needed == runs_to_decide(0.1, 0.1, 0.05, 0.8)  # from the pilot's noise


def test_a_candidate_left_out_by_another_goal_does_not_stop_a_keep():
    thr = one(est("fast", 1.3, 0.05), est("same", 1.0, 0.02))
    lat = GoalEvidence("latency", "clat_p99_us", "mq-deadline", (est("fast", 1.6, 0.03), est("same", 1.0, 0.02)), 8)
    g = decide([thr, lat]).goals[0]
    assert g.outcome == "keep-equal" and [v for v, _ in g.excluded] == ["fast"]


def rates(rng: random.Random, goals: list[SimulatedGoal], noise: float, runs: int, sims: int) -> dict[str, float]:
    counts = dict.fromkeys(("switch", "keep-equal", "cannot-tell"), 0)
    for _ in range(sims):
        counts[simulate_advice(rng, goals, noise, runs, 0.05, sequential=False).advice.goals[0].outcome] += 1
    return {k: v / sims for k, v in counts.items()}


def test_the_whole_verdict_simulated():
    """Seeded: two candidates beside the current setting, 10% noise, 12 runs a variant, one look."""
    rng = random.Random(46)
    names = ["a", "b"]
    null = rates(rng, [SimulatedGoal("throughput", "iops", dict.fromkeys(names, 1.0))], 0.1, 12, 800)
    assert null["switch"] <= 0.05 + 0.02, null  # alpha, and a binomial margin for 800 draws
    better = rates(rng, [SimulatedGoal("throughput", "iops", {"a": 1.0, "b": 1.2})], 0.1, 12, 800)
    assert better["keep-equal"] <= 0.05, better
    # One candidate's runs in two groups straddling the current setting (half at x0.5, half at x2): no mean of them
    # is anyone's experience, and its worse half is far worse than what the device has.
    bimodal = rates(rng, [SimulatedGoal("throughput", "iops", {"a": 1.0, "b": 0.5}, {"b": (0.5, 4.0)})],
                    0.1, 12, 400)
    assert bimodal["cannot-tell"] >= 0.5 and bimodal["keep-equal"] <= 0.05, bimodal
