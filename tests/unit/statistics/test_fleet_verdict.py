"""The verdict of a comparison over hosts (core/statistics/fleet_verdict.py): each host's estimate entering the pool
with the standard error its own interval gives, Holm over a fleet's variants or over every cell of a fleet matrix
(each cell pooled once), the sentences' numbers, and the pooled verdict's coverage and false-positive rate for
hosts that stop at their own boundaries, by seeded simulation."""

from __future__ import annotations

import copy
import math
import random
from dataclasses import replace

import pytest
from doc_support import run_doc
from fleet_support import compare_doc
from saved_support import saved
from schema_support import valid
from scipy import stats as sps

from iosched.core.base.encode import encode
from iosched.core.documents.document import SequentialDoc
from iosched.core.documents.saved import read_fleet, read_fleet_matrix
from iosched.core.experiment.variants import plan_order
from iosched.core.present.sentences import pooled_sentence
from iosched.core.present.worded import worded_fleet_matrix, worded_pooled
from iosched.core.statistics import fleet_verdict
from iosched.core.statistics.fleet_verdict import (
    fleet_pooled,
    hosts_pooled,
    matrix_pooled,
    pool_hosts,
    pooled_row,
    pooled_verdict,
    se_from_interval,
)
from iosched.core.statistics.pooled import HostEffect, Pooled, pool
from iosched.core.statistics.stats import RatioEstimate, log_ratio_welch
from iosched.core.statistics.verdict import RunningVerdict, sequential_plan


def holm(ps: list[float]) -> list[float]:
    """Holm's step-down adjustment, written out from its definition."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        out[i] = running
    return out


def host(rng: random.Random, labels: list[str], effects: dict[str, float], runs: int = 5, cv: float = 0.05):
    """A host's compare of ``labels``: ``runs`` per variant, each variant ``effects`` away from the baseline."""
    order = plan_order(len(labels), runs)
    return compare_doc(labels, [{"index": i, "variant": labels[a],
                                 "metrics": {"iops": 1e4 * math.exp(rng.gauss(0, cv) + effects.get(labels[a], 0.0))}}
                                for i, a in enumerate(order)])


# --- the standard error, the correction ------------------------------------------------------------------------


def test_a_hosts_standard_error_is_the_one_its_interval_was_made_with():
    rng = random.Random(3)
    base = [math.exp(rng.gauss(0, 0.1)) for _ in range(6)]
    var = [math.exp(rng.gauss(0.2, 0.1)) for _ in range(5)]
    e = log_ratio_welch(base, var)
    lb, lv = [math.log(x) for x in base], [math.log(x) for x in var]
    welch = math.sqrt(sps.tvar(lb) / len(lb) + sps.tvar(lv) / len(lv))  # Welch's own, from the runs
    assert se_from_interval(e) == pytest.approx(welch, rel=1e-9)
    # A 90% interval of the same estimate gives the same error once told its level.
    half = sps.t.ppf(0.95, e.df) * welch
    e90 = RatioEstimate(e.ratio, e.ratio * math.exp(-half), e.ratio * math.exp(half), 0.9, e.p_value, e.t, e.df,
                        e.sd_log, e.n)
    assert se_from_interval(e90, 0.9) == pytest.approx(welch, rel=1e-9)


def test_the_variants_of_a_fleet_are_holm_corrected_together():
    rng = random.Random(11)
    labels = ["none", "bfq", "kyber", "mq-deadline"]
    hosts = [(f"db{i}", host(rng, labels, {"bfq": -0.05, "kyber": 0.0, "mq-deadline": 0.04})) for i in range(3)]
    numbers = pool_hosts(hosts, 0.05, None)
    assert numbers.metric == "iops" and numbers.baseline == "none" and len(numbers.p_values) == 3
    out = hosts_pooled(hosts, 0.05, None)
    assert [row.p_adjusted for row in out.pooled] == pytest.approx(holm(numbers.p_values))
    assert [row.p_value for row in out.pooled] == pytest.approx(numbers.p_values)
    said = worded_pooled(out, dict(hosts))
    assert said.correction == "Holm-corrected over the variants" and [h.host for h in out.hosts] == ["db0", "db1",
                                                                                                       "db2"]
    # Other p-values given: those are the ones judged, with the words of their correction.
    given = pooled_verdict(numbers, 0.05, [0.5, 0.01, 0.9], "over something else")
    assert [row.p_adjusted for row in given.pooled] == [0.5, 0.01, 0.9] and given.correction == "over something else"
    assert [row.significant for row in given.pooled] == [False, True, False]


# --- moved with the pooled verdict from the command line ------------------------------------------------------------


def test_ratios_beyond_a_floats_range_are_not_pooled_and_said_so():
    with pytest.raises(ValueError, match="hosts-apart"):  # a reason code: its words, present's
        pool([HostEffect("a", 60.0, 1.0), HostEffect("b", -60.0, 1.0)])
    docs = []
    for h, f in (("a", 60.0), ("b", -60.0)):
        runs = [{"index": i, "variant": v, "metrics": {"iops": 1e30 * math.exp(f * (v == "bfq") + 0.01 * i)}}
                for i, v in enumerate(["none", "bfq", "bfq", "none"] * 2)]
        docs.append((h, compare_doc(["none", "bfq"], runs)))
    pooled = hosts_pooled(docs, 0.05, "iops")
    (row,) = pooled.pooled
    assert row.sentence == "hosts-apart" and "why" not in encode(row)  # its reason, a code until it is worded
    (said,) = worded_pooled(pooled, dict(docs)).pooled
    assert said.sentence == "bfq vs none: the hosts' ratios are too far apart to pool"


def host_until_verdict(rng: random.Random, plan: SequentialDoc, true: float, cv: float = 0.15):
    """One host's compare run until its own boundary is crossed (or its maximum), as `--independent` runs it."""
    labels = ["none", "bfq"]
    rv = RunningVerdict(labels, 0.05, "iops", "compare", plan)
    runs = []
    for i, a in enumerate(plan_order(2, plan.max_per_arm)):
        run = {"index": i, "variant": labels[a], "metrics": {"iops": 1e4 * math.exp(rng.gauss(0, cv) + a * true)}}
        runs.append(run)
        if rv.should_stop(run_doc(run)):
            break
    return compare_doc(labels, runs, encode(plan))


@pytest.mark.parametrize(("hosts", "effect", "tau"), [(3, 0.0, 0.0), (6, 0.0, 0.05), (6, -0.15, 0.0), (8, -0.15, 0.05)])
def test_hosts_that_stop_at_their_own_boundary_pool_with_their_error_rates(hosts, effect, tau):
    # Each host stops when its effect looks large, so its estimate leans away from 1: the pooled interval must
    # still cover the fleet's mean effect, and say "significant" under no effect at most alpha + 1 point.
    plan = sequential_plan(12, 0.05, 2, alternate=False)
    rng = random.Random(hosts * 100 + int(-effect * 100))
    n, covered, significant, early = 300, 0, 0, 0
    for _ in range(n):
        docs = [host_until_verdict(rng, plan, rng.gauss(effect, tau)) for _h in range(hosts)]
        early += sum(len(d.runs) < 24 for d in docs)
        (row,) = hosts_pooled([(str(i), d) for i, d in enumerate(docs)], 0.05, "iops").pooled
        covered += row.ci_low <= math.exp(effect) <= row.ci_high
        significant += row.significant
    assert covered / n >= 0.94, covered / n
    if effect == 0.0:
        assert significant / n <= 0.06, significant / n
    else:
        assert early / (n * hosts) > 0.3, early / (n * hosts)  # the case in question: many stopped early
        assert significant / n > 0.5


# --- moved with Holm across a fleet matrix from the command line ----------------------------------------------------


def test_each_cell_is_pooled_over_its_hosts_and_corrected_over_the_whole_matrix():
    doc = saved("fleet_matrix")
    doc["fleets"].append(copy.deepcopy(doc["fleets"][0]) | {"job": "4k-write"})
    doc["jobs"].append("4k-write")
    matrix = read_fleet_matrix(doc, "m.json")
    raw = [row.p_value for f in matrix.fleets for row in fleet_pooled(f, 0.05, None).pooled]
    fleets, out = matrix_pooled(matrix.fleets, 0.05, None)
    said = worded_fleet_matrix(replace(matrix, fleets=fleets, pooled=out))
    assert out.cells == 3 and said.pooled is not None and "3 pooled cells" in said.pooled.correction
    assert [v.p_adjusted for v in out.verdicts] == pytest.approx(holm(raw))
    assert [v.job for v in out.verdicts] == matrix.jobs
    for f, v in zip(fleets, out.verdicts, strict=True):  # each job's own lines say the same
        (row,) = f.pooled.pooled
        assert row.p_adjusted == v.p_adjusted and row.p_value == pytest.approx(raw[fleets.index(f)])
    for f in said.fleets:
        assert f.pooled is not None and f.pooled.correction == said.pooled.correction
    assert out.verdicts[0].p_adjusted > raw[0]  # three cells cost each its share


def test_one_job_is_judged_as_a_fleet_of_it_would_be():
    matrix = read_fleet_matrix(saved("fleet_matrix"), "m.json")
    alone = fleet_pooled(matrix.fleets[0], 0.05, None)
    _fleets, out = matrix_pooled(matrix.fleets[:1], 0.05, None)
    assert out.verdicts[0].p_adjusted == alone.pooled[0].p_adjusted


def test_each_cell_is_pooled_once(monkeypatch):
    """Holm over the matrix takes every cell's p-value from the one pool of it (no pool made again to replay them)."""
    matrix = read_fleet_matrix(saved("fleet_matrix"), "m.json")
    made: list[int] = []

    def counted(effects, level=0.95):
        made.append(len(effects))
        return pool(effects, level)

    monkeypatch.setattr(fleet_verdict, "pool", counted)
    _fleets, out = matrix_pooled(matrix.fleets, 0.05, None)
    assert made == [2, 2] and out.cells == 2


def test_a_matrix_none_of_whose_cells_could_be_pooled_says_so():
    matrix = read_fleet_matrix(saved("fleet_matrix"), "m.json")
    alone = [replace(f, hosts=f.hosts[:1]) for f in matrix.fleets]  # one host each: nothing to pool
    fleets, out = matrix_pooled(alone, 0.05, None)
    said = worded_fleet_matrix(replace(matrix, fleets=fleets, pooled=out)).pooled
    assert out.cells == 0 and out.verdicts == [] and said is not None
    assert said.correction == "no cell of the matrix could be pooled"
    assert all(f.pooled is None for f in fleets)


def test_a_judged_fleet_and_matrix_are_written_by_their_types_and_read_back_the_same():
    matrix = read_fleet_matrix(saved("fleet_matrix"), "m.json")
    fleets, pooled = matrix_pooled(matrix.fleets, 0.05, None)
    judged = replace(matrix, fleets=fleets, pooled=pooled)
    out = encode(judged)
    valid("fleet-matrix.schema.json", out)
    assert read_fleet_matrix(out, "m.json") == judged
    valid("fleet.schema.json", encode(fleets[0]))
    assert read_fleet(encode(fleets[0]), "f.json") == fleets[0]
    (row,) = out["pooled"]["verdicts"][:1]
    assert list(row) == ["job", "metric", "baseline", "variant", "ratio", "ci_low", "ci_high", "p_adjusted",
                         "significant", "sentence"]
    assert list(out["fleets"][0]["pooled"]["pooled"][0])[-1] == "sentence"


def test_a_cell_significant_alone_but_not_once_corrected_says_so():
    hosts = (HostEffect("db1", -0.4, 0.1), HostEffect("db2", -0.35, 0.1))
    p = Pooled(0.68, 0.47, 0.97, 0.04, 1, 0.0, 0.0, 0.2, hosts)
    row = pooled_row(p, "none", "bfq", "iops", 0.09, 0.05)

    def said(r):
        return pooled_sentence(r, "iops", "none", 0.05, 2)

    # Its interval (0.47-0.97) leaves out no change: the words say it is before correction, not "no difference".
    assert not row.significant and "no significant difference" not in said(row)
    assert said(row).startswith("bfq vs none over the hosts: cannot tell in IOPS: -32% (90% CI -43% to -19%) "
                                "reaches outside -9.1% to +10%; before correcting for 2 comparisons (95% CI -53% to "
                                "-3.0%), not significant after, adjusted p=0.09")
    p = Pooled(0.9, 0.7, 1.2, 0.3, 1, 0.0, 0.0, 0.2, hosts)
    assert said(pooled_row(p, "none", "bfq", "iops", 0.6, 0.05)).startswith(
        "bfq vs none over the hosts: cannot tell in IOPS: -10% (90% CI ")
