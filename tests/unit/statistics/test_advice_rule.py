"""The rule `advise` decides by: properties on random estimates (a switch's interval clears the current setting, its
estimate reaches the margin, it is within the margin on the other goals, and it is the best of those that qualify; a
keep is shown equal), the early drop, the mapping from a judge's estimates, the words, and the simulated runner's
error rate. The three outcomes and their reasons one by one: test_advice_outcomes.py."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from iosched.core.advice.decision import goal_doc
from iosched.core.present.advice_words import (
    exclusion_words,
    goal_lines,
    tradeoff_words,
    worded_goal,
)
from iosched.core.statistics.advice_looks import Looks
from iosched.core.statistics.advice_rule import (
    Cost,
    Estimate,
    GoalEvidence,
    Rule,
    decide,
    drop_at_look,
    estimates_of,
    higher_is_better,
    not_within,
    smallest_effect,
    wins_at_look,
)
from iosched.core.statistics.advice_simulation import SimulatedGoal, simulate_advice
from iosched.core.statistics.stats import log_ratio_welch, t_test_power

METRICS = {"throughput": "iops", "latency": "clat_p99_us", "interactive": "fg:clat_p50_us"}
POOL = ["bfq", "kyber", "mq-deadline", "bfq:slice_idle=0"]


def est(variant: str, ratio: float, lo: float, hi: float, sd: float = 0.05, n: int = 8) -> Estimate:
    """An estimate whose interval is a 95% one on 14 degrees of freedom (its standard error read back from it)."""
    se = (math.log(hi) - math.log(lo)) / 2 / 2.1448
    return Estimate(variant, ratio, lo, hi, 0.01, sd, n, None, 0.95, se, 14.0)


def oriented(e: Estimate, metric: str) -> tuple[float, float, float]:
    p, lo, hi = math.log(e.ratio), math.log(e.ci_low), math.log(e.ci_high)
    return (p, lo, hi) if higher_is_better(metric) else (-p, -hi, -lo)


@st.composite
def evidence(draw):
    goals = draw(st.lists(st.sampled_from(list(METRICS)), min_size=1, max_size=3, unique=True))
    out = []
    for goal in goals:
        names = draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=4, unique=True))
        ests = []
        for v in names:
            if draw(st.integers(0, 9)) == 0:
                ests.append(Estimate(v, None, None, None, None, None, 0, "fewer than 2 valid runs"))
                continue
            d = draw(st.floats(-1.0, 1.0))
            half = draw(st.floats(0.001, 0.8))
            ests.append(Estimate(v, math.exp(d), math.exp(d - half), math.exp(d + half), draw(st.floats(0, 1)),
                                 draw(st.floats(0.005, 0.5)), draw(st.integers(2, 20)), None, 0.95,
                                 half / draw(st.floats(1.7, 3.0)), 10.0))
        out.append(GoalEvidence(goal, METRICS[goal], "now", tuple(ests), draw(st.integers(2, 20))))
    return out


def qualifies(e: Estimate, ev: GoalEvidence, evidence: list[GoalEvidence], rule: Rule) -> bool:
    if not e.judged:
        return False
    point, lo, _hi = oriented(e, ev.metric)
    if not (lo > 0 and point >= math.log1p(rule.margin)):
        return False
    return all(not_within(e.variant, o, rule.margin) is None for o in evidence if o.goal != ev.goal)


@settings(max_examples=400, deadline=None)
@given(evidence(), st.floats(0.0, 0.3))
def test_a_recommendation_clears_the_current_setting_and_is_the_best_that_qualifies(evs, margin):
    rule = Rule(margin=margin)
    advice = decide(evs, rule)
    assert [g.goal for g in advice.goals] == [ev.goal for ev in evs]
    for g, ev in zip(advice.goals, evs, strict=True):
        ok = [e for e in ev.estimates if qualifies(e, ev, evs, rule)]
        assert g.keep == (not ok) == (g.outcome != "switch")
        if g.keep:
            assert g.costs == ()
            assert (g.outcome == "cannot-tell") == bool(g.reasons)  # a cannot-tell always says why
            if g.outcome == "keep-equal":  # every candidate judged, each shown at most the margin better
                left_out = {v for v, _ in g.excluded}
                assert all(e.judged for e in ev.estimates)
                for e in ev.estimates:
                    lo, hi = e.equal_interval(rule.alpha)
                    bound = math.log(hi) if higher_is_better(ev.metric) else -math.log(lo)
                    assert e.variant in left_out or bound < math.log1p(margin)
            continue
        chosen = g.estimate
        assert chosen.variant == g.recommended
        point, lo, _hi = oriented(chosen, ev.metric)
        assert lo > 0  # its interval clears what the device has now
        assert point >= math.log1p(margin) - 1e-12  # by at least the margin
        for other in evs:  # within the margin of the best on every other goal it was judged on
            e = next((x for x in other.estimates if x.variant == g.recommended and x.judged), None)
            if other.goal == ev.goal or e is None:
                continue
            best = max([0.0, *(oriented(x, other.metric)[0] for x in other.estimates if x.judged)])
            op, olo, _ = oriented(e, other.metric)
            assert op >= best or olo >= best + math.log(1 - margin) - 1e-12
        assert point == max(oriented(e, ev.metric)[0] for e in ok)
        assert {v for v, _why in g.excluded}.isdisjoint({g.recommended})


@settings(max_examples=200, deadline=None)
@given(evidence(), st.randoms(use_true_random=False))
def test_the_order_of_the_estimates_does_not_matter(evs, rnd):
    points = [oriented(e, ev.metric)[0] for ev in evs for e in ev.estimates if e.judged]
    assume(len(set(points)) == len(points))  # no ties
    shuffled = []
    for ev in evs:
        ests = list(ev.estimates)
        rnd.shuffle(ests)
        shuffled.append(GoalEvidence(ev.goal, ev.metric, ev.baseline, tuple(ests), ev.runs_per_variant))
    assert [g.recommended for g in decide(evs).goals] == [g.recommended for g in decide(shuffled).goals]


def said(g):
    """A goal's answer as its document holds it, with its words (core/present/advice_words.py)."""
    return worded_goal(goal_doc(g), g)


def test_keep_shown_equal_names_its_margin_and_the_intervals():
    ev = GoalEvidence("throughput", "iops", "none", (est("bfq", 1.03, 0.98, 1.08), est("kyber", 0.99, 0.95, 1.03)),
                      8)
    g = decide([ev]).goals[0]
    assert g.keep and g.outcome == "keep-equal" and g.reasons == () and g.estimate.variant == "bfq"
    mde = smallest_effect(0.05, 8, 0.05 / 2)
    assert g.smallest_effect == pytest.approx(math.expm1(mde))
    lines = goal_lines(said(g))
    assert lines[0].startswith("throughput: keep none — shown equal: no candidate is more than 10% better (90% "
                               "intervals within −"), lines[0]


def test_significant_but_below_the_margin_is_not_a_switch():
    ev = GoalEvidence("throughput", "iops", "none", (est("bfq", 1.04, 1.01, 1.07),), 8)
    g = decide([ev]).goals[0]
    assert g.keep and g.outcome == "keep-equal"  # its 90% interval's top, +6.5%, is below +10%
    assert decide([ev], Rule(margin=0.03)).goals[0].recommended == "bfq"
    assert decide([ev], Rule(margin=0.03, at_least_mde=True)).goals[0].outcome == "cannot-tell"  # the old gate


def test_the_trade_off_in_one_sentence():
    inter = GoalEvidence("interactive", "fg:clat_p50_us", "mq-deadline",
                         (est("bfq", 0.05, 0.03, 0.10, sd=0.3), est("kyber", 1.1, 0.9, 1.3, sd=0.3)), 8,
                         costs=(Cost("bg:mb_s", (est("bfq", 0.70, 0.60, 0.80), est("kyber", 1.0, 0.9, 1.1))),))
    thr = GoalEvidence("throughput", "iops", "mq-deadline",
                       (est("bfq", 0.97, 0.93, 1.01), est("kyber", 1.01, 0.98, 1.04)), 8)
    advice = decide([inter, thr])
    assert tradeoff_words([said(g) for g in advice.goals]) == (
        "switch to bfq for interactive use: foreground p50 −95%, background MB/s −30%; keep mq-deadline for "
        "throughput (shown equal within 10%)")
    lines = goal_lines(said(advice.goals[0]))
    assert lines[0] == "interactive use: switch to bfq: −95% foreground p50 (95% CI −97% to −90%)"
    assert lines[1] == "  its cost: background MB/s −30% (95% CI −40% to −20%)"


def test_a_winner_shown_much_worse_on_another_goal_is_left_out():
    thr = GoalEvidence("throughput", "iops", "none",
                       (est("fast", 1.30, 1.20, 1.40), est("balanced", 1.20, 1.12, 1.28)), 8)
    lat = GoalEvidence("latency", "clat_p99_us", "none",
                       (est("fast", 1.40, 1.25, 1.55), est("balanced", 1.02, 0.97, 1.07)), 8)
    g = decide([thr, lat], Rule(margin=0.10)).goals[0]
    assert g.recommended == "balanced"
    assert g.excluded[0][0] == "fast" and "not shown within 10% of the best" in exclusion_words(g.excluded[0][1])
    assert said(g).excluded[0] == ("fast", exclusion_words(g.excluded[0][1]))
    assert decide([thr]).goals[0].recommended == "fast"  # alone, throughput has no other goal to answer to


def test_cannot_judge_is_noted_and_never_recommended():
    ev = GoalEvidence("throughput", "iops", "none", (Estimate("bfq", None, None, None, None, None, 1, "one run"),), 8)
    g = decide([ev]).goals[0]
    assert g.keep and g.smallest_effect is None and g.unjudged == (("bfq", "one run"),)
    assert g.outcome == "cannot-tell" and g.reasons == ("unjudged",)
    assert said(g).notes == ["bfq: cannot judge (one run)"]


def test_smallest_effect_is_the_80_percent_power_point():
    for sd, n, level in ((0.05, 8, 0.05), (0.1, 12, 0.0167), (0.2, 4, 0.01)):
        mde = smallest_effect(sd, n, level)
        assert 0.75 <= t_test_power(n, sd, math.exp(mde), level) <= 0.85
        assert smallest_effect(sd, n * 4, level) < mde  # more runs see smaller effects
    assert smallest_effect(None, 8, 0.05) is None and smallest_effect(0.1, 1, 0.05) is None
    assert smallest_effect(0.1, 8, 0.05, design="paired") < smallest_effect(0.1, 8, 0.05)


def test_drop_only_the_clearly_worse_at_the_boundary():
    ests = [Estimate("worse", 0.7, 0.6, 0.8, 0.001, 0.1, 4), Estimate("better", 1.3, 1.2, 1.4, 0.001, 0.1, 4),
            Estimate("unsure", 0.7, 0.4, 1.2, 0.3, 0.1, 4), Estimate("near", 0.9, 0.8, 0.99, 0.02, 0.1, 4),
            Estimate("odd", None, None, None, None, None, 1, "one run")]
    assert drop_at_look(ests, "iops", 0.01) == ["worse"]  # near: significant at 0.05, not at the boundary
    assert drop_at_look(ests, "clat_p99_us", 0.01) == ["better"]  # for a latency, higher is worse


def test_a_win_at_a_look_needs_the_interval_clear_and_the_margin_reached():
    ests = [Estimate("clear", 1.3, 1.2, 1.4, 0.001, 0.1, 4), Estimate("small", 1.05, 1.02, 1.08, 0.001, 0.1, 4),
            Estimate("unsure", 1.3, 0.9, 1.8, 0.3, 0.1, 4), Estimate("worse", 0.7, 0.6, 0.8, 0.001, 0.1, 4),
            Estimate("odd", None, None, None, None, None, 1, "one run")]
    assert wins_at_look(ests, "iops", 0.1) == ["clear"]  # small: clear of no change, short of the margin
    assert wins_at_look(ests, "clat_p99_us", 0.1) == ["worse"]  # for a latency, lower is better


def _judged(rng: random.Random, effects: dict[str, float], n: int, noise: float = 0.03) -> dict:
    base = [100 * math.exp(rng.gauss(0, noise)) for _ in range(n)]
    return {v: log_ratio_welch(base, [100 * f * math.exp(rng.gauss(0, noise)) for _ in range(n)])
            for v, f in effects.items()}


def test_a_test_ends_at_the_look_where_a_candidate_wins_given_the_margin():
    rng = random.Random(7)
    effects = {"fast": 1.4, "same": 1.0}
    for margin, ends_at in ((0.1, 6), (None, 10)):  # not at 4: two groups may hide in 4 runs (WIN_RUNS)
        looks = Looks("throughput", "iops", "cur", list(effects), (4, 6, 8, 10), 0.02, margin=margin)
        while (n := looks.next_look()) is not None:
            looks.look(n, _judged(rng, effects, n))
        assert looks.done and looks.reached == ends_at and looks.won == (ends_at < 10)
        ev = looks.evidence()
        assert {e.variant for e in ev.estimates} == {"fast", "same"} and ev.runs_per_variant == ends_at
        assert decide([ev], Rule(margin=0.1)).goals[0].recommended == "fast"
    # Nothing wins: it runs to its last look, as without the margin.
    looks = Looks("throughput", "iops", "cur", ["same"], (4, 6, 8), 0.02, margin=0.1)
    while (n := looks.next_look()) is not None:
        looks.look(n, _judged(rng, {"same": 1.0}, n))
    assert looks.reached == 8 and not looks.won


def test_estimates_of_a_judge_carry_holm_and_its_intervals():
    rng = random.Random(3)
    base = [100 * math.exp(rng.gauss(0, 0.05)) for _ in range(8)]
    judged = {"same": log_ratio_welch(base, [100 * math.exp(rng.gauss(0, 0.05)) for _ in range(8)]),
              "faster": log_ratio_welch(base, [130 * math.exp(rng.gauss(0, 0.05)) for _ in range(8)]),
              "alone": log_ratio_welch(base, [100.0])}
    out = {e.variant: e for e in estimates_of(judged, 0.05)}
    assert out["alone"].cannot_judge and not out["alone"].judged
    for e in (out["same"], out["faster"]):
        assert (e.p_adjusted < 0.05) == (e.ci_low > 1 or e.ci_high < 1)
        assert e.n == 8 and e.sd_log > 0
    assert out["faster"].ci_low > 1 and out["faster"].ratio == pytest.approx(judged["faster"].ratio)


def test_simulated_runner_keeps_when_nothing_is_better_and_finds_a_clear_winner():
    rng = random.Random(40)
    equal = [SimulatedGoal("throughput", "iops", {"a": 1.0, "b": 1.0, "c": 1.0})]
    changes = sum(simulate_advice(rng, equal, 0.1, 8).advice.goals[0].outcome == "switch" for _ in range(200))
    assert changes <= 0.05 * 200
    better = [SimulatedGoal("throughput", "iops", {"a": 1.0, "b": 1.2})]
    found = [simulate_advice(rng, better, 0.05, 8) for _ in range(30)]
    assert sum(s.advice.goals[0].recommended == "b" for s in found) >= 27
    clear = [SimulatedGoal("throughput", "iops", {"a": 1.0, "b": 1.4})]
    early = simulate_advice(rng, clear, 0.05, 12)
    # It won at 6 runs a variant, not 12; "a", shown worse than "b" at 4, left there (advice_looks.py ``behind``).
    assert early.advice.goals[0].recommended == "b" and early.runs == 3 * 4 + 2 * 2
    assert early.dropped == (("throughput", "a"),)
    worse = [SimulatedGoal("latency", "clat_p99_us", {"slow": 2.0, "same": 1.0})]
    dropped = simulate_advice(rng, worse, 0.05, 12)
    assert dropped.dropped == (("latency", "slow"),) and dropped.runs < 3 * 12  # it left at the first look
