"""A candidate shown worse than the test's leader leaves at a look (core/statistics/advice_looks.py ``behind``): the
comparison against the leader matches scipy's Welch test, the leader must be a margin ahead, the one left behind is
never the switch and stays in Holm's count, and, simulated, the false-switch rate stays at alpha while runs are
saved."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats as sp

from iosched.core.statistics.advice_looks import Looks, behind_leader, leader
from iosched.core.statistics.advice_rule import Estimate, GoalEvidence, Rule, decide, estimates_of
from iosched.core.statistics.advice_simulation import SimulatedGoal, simulate_advice
from iosched.core.statistics.stats import log_ratio_welch


def _runs(rng: random.Random, mean: float, n: int, noise: float = 0.05) -> list[float]:
    return [mean * math.exp(rng.gauss(0.0, noise)) for _ in range(n)]


def test_behind_the_leader_is_welch_on_the_logs_bonferroni_over_those_compared():
    rng = random.Random(5)
    values = {"lead": _runs(rng, 150, 4), "near": _runs(rng, 145, 4), "far": _runs(rng, 100, 4),
              "odd": [120.0]}
    p = {v: sp.ttest_ind([math.log(x) for x in values["lead"]], [math.log(x) for x in values[v]],
                         equal_var=False).pvalue for v in ("near", "far")}
    level = 0.02
    got = behind_leader(values, "lead", ["lead", "near", "far", "odd"], "iops", level)
    assert got == [v for v in ("near", "far") if p[v] < level / 3]  # three compared with the leader
    assert got == ["far"]
    # For a latency the leader is the lowest: the same runs read the other way leave no one behind it.
    assert behind_leader(values, "lead", ["near", "far"], "clat_p99_us", level) == []


def test_the_leader_is_the_best_estimate_and_only_a_margin_ahead():
    ests = [Estimate("a", 1.05, 0.9, 1.2, 0.5, 0.05, 4), Estimate("b", 1.3, 1.1, 1.5, 0.01, 0.05, 4),
            Estimate("c", None, None, None, None, None, 1, "one run")]
    assert leader(ests, "iops", 0.1) == "b"
    assert leader(ests, "iops", 0.4) is None  # no one 40% ahead: a keep may still need every candidate's runs
    assert leader(ests, "clat_p99_us", 0.1) is None  # lower is better: "a" leads, by less than the margin


def test_holm_keeps_counting_the_ones_left_behind():
    rng = random.Random(9)
    base = _runs(rng, 100, 6)
    judged = {"x": log_ratio_welch(base, _runs(rng, 112, 6))}
    alone, counted = estimates_of(judged, 0.05)[0], estimates_of(judged, 0.05, family=3)[0]
    assert alone.p_adjusted == pytest.approx(judged["x"].p_value)  # type: ignore[union-attr]
    assert counted.p_adjusted == pytest.approx(min(1.0, 3 * judged["x"].p_value))  # type: ignore[union-attr]
    assert counted.ci_low < alone.ci_low and counted.ci_high > alone.ci_high  # type: ignore[operator]


def _look(looks: Looks, values: dict[str, list[float]]) -> list[str]:
    n = looks.next_look()
    assert n is not None
    cut = {v: xs[:n] for v, xs in values.items()}
    return looks.look(n, {v: log_ratio_welch(cut["now"], cut[v]) for v in looks.active}, cut)


def test_a_candidate_behind_the_leader_leaves_and_is_never_the_switch():
    rng = random.Random(11)
    values = {"now": _runs(rng, 100, 8), "lead": _runs(rng, 170, 8), "slow": _runs(rng, 125, 8),
              "same": _runs(rng, 100, 8)}
    looks = Looks("throughput", "iops", "now", ["lead", "slow", "same"], (4, 6, 8), 0.02, margin=0.1)
    assert set(_look(looks, values)) == {"slow", "same"}  # both clearly below the leader's 70%
    assert looks.behind == ["slow", "same"] and looks.active == ["lead"]
    assert _look(looks, values) == [] and looks.won and looks.reached == 6
    ev = looks.evidence()
    assert ev.behind == ("slow", "same")
    slow = next(e for e in ev.estimates if e.variant == "slow")
    assert slow.ci_low is not None and slow.ratio is not None
    assert slow.ci_low > 1.0 and slow.ratio >= 1.1  # it would pass a switch's test on its own runs ...
    assert decide([ev], Rule()).goals[0].recommended == "lead"
    alone = GoalEvidence(ev.goal, ev.metric, ev.baseline, (slow,), ev.runs_per_variant, behind=("slow",))
    assert decide([alone], Rule()).goals[0].recommended is None  # ... but it was shown worse than the leader
    # Without the runs (a paired design, a caller with none) or the margin, no one leaves behind a leader.
    for margin, given in ((0.1, False), (None, True)):
        again = Looks("throughput", "iops", "now", ["lead", "slow", "same"], (4, 6, 8), 0.02, margin=margin)
        n = again.next_look()
        cut = {v: xs[:4] for v, xs in values.items()}
        judged = {v: log_ratio_welch(cut["now"], cut[v]) for v in again.active}
        assert again.look(n, judged, cut if given else None) == [] and not again.behind  # type: ignore[arg-type]


def test_simulated_the_leader_drop_keeps_the_false_switch_rate_and_saves_runs():
    """Candidates no better than the current setting beside one worse: any switch is false. Noise 20% puts an
    equal candidate's estimate a margin ahead at the first look often enough for the leader drop to act."""
    rng = random.Random(46)
    goals = [SimulatedGoal("throughput", "iops", {"c1": 1.0, "c2": 1.0, "c3": 1.0, "worse": 0.8})]
    sims = 400
    runs = [simulate_advice(rng, goals, 0.2, 8) for _ in range(sims)]
    false = sum(s.advice.goals[0].outcome == "switch" for s in runs)
    assert false <= 0.05 * sims + 2 * math.sqrt(0.05 * 0.95 * sims)  # alpha, with two standard errors of slack
    # A clear leader: the others leave at the first look, and the leader is found.
    clear = [SimulatedGoal("throughput", "iops", {"fast": 1.6, "mid": 1.2, "a": 1.0, "b": 1.0, "c": 1.0})]
    found = [simulate_advice(rng, clear, 0.05, 8) for _ in range(50)]
    assert sum(s.advice.goals[0].recommended == "fast" for s in found) == 50
    assert max(s.runs for s in found) <= 6 * 4 + 2 * 2  # everyone to 4, the current setting and the leader to 6
