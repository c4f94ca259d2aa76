"""Pooling one comparison over hosts: the random-effects formulas against a worked example (scipy's t), their
false-positive rate and coverage by seeded simulation, and `report A B C` on saved files (the pooled verdict of
hosts that stop at their own boundaries: test_fleet_verdict.py)."""

from __future__ import annotations

import copy
import json
import math
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from iosched.core.statistics.pooled import HostEffect, agreement, pool
from iosched.core.statistics.stats import log_ratio_welch

from conftest import one_sentence_exit_2, run_cli

SAVED = Path(__file__).parents[2] / "data" / "saved"  # tests/data/saved


def test_two_hosts_worked_by_hand():
    # w = 100 each, fixed mean 0.1, Q = 2, C = 100: tau² = 0.01; w* = 50 each, q = 1, se = 0.1, t(0.975, 1).
    p = pool([HostEffect("a", 0.0, 0.1), HostEffect("b", 0.2, 0.1)])
    assert p.tau2 == pytest.approx(0.01) and p.q == pytest.approx(2.0) and p.i2 == pytest.approx(0.5)
    half = sps.t.ppf(0.975, 1) * 0.1
    assert math.log(p.ratio) == pytest.approx(0.1)
    assert math.log(p.ci_low) == pytest.approx(0.1 - half) and math.log(p.ci_high) == pytest.approx(0.1 + half)
    assert p.p_value == pytest.approx(2 * sps.t.sf(1.0, 1))
    assert p.spread == pytest.approx(math.exp(0.1))


def test_agreeing_hosts_have_no_heterogeneity_and_the_hosts_own_noise():
    effects = [HostEffect(h, -0.1, se) for h, se in (("a", 0.05), ("b", 0.04), ("c", 0.08))]
    p = pool(effects)
    sw = sum(1 / e.se ** 2 for e in effects)
    assert p.tau2 == 0.0 and p.i2 == 0.0 and p.q == pytest.approx(0.0, abs=1e-12)
    # q = 0 here: max(1, q) keeps the interval at the hosts' own noise, not at zero width.
    assert math.log(p.ci_high) - math.log(p.ratio) == pytest.approx(sps.t.ppf(0.975, 2) / math.sqrt(sw))
    assert agreement(p) == (3, [])


def test_a_host_that_differs_is_named():
    p = pool([HostEffect("a", -0.10, 0.02), HostEffect("b", -0.11, 0.02), HostEffect("c", -0.09, 0.02),
              HostEffect("db3", 0.04, 0.02)])
    agree, differ = agreement(p)
    assert agree == 3 and [h.host for h in differ] == ["db3"] and p.i2 > 0.8 and p.ratio < 1


@pytest.mark.parametrize("bad", [[HostEffect("a", 0.1, 0.1)], [HostEffect("a", 0.1, 0.0), HostEffect("b", 0, 1)],
                                 [HostEffect("a", float("nan"), 0.1), HostEffect("b", 0, 1)]])
def test_too_few_or_broken_estimates_are_refused(bad):
    with pytest.raises(ValueError):
        pool(bad)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(), st.floats()), min_size=2, max_size=6))
def test_any_host_estimates_pool_or_are_refused_never_raised_otherwise(pairs):
    """A weight 1/se² of a tiny se, or a sum of them, left a double (ZeroDivisionError, an overflowing fsum)."""
    try:
        p = pool([HostEffect(f"h{i}", y, se) for i, (y, se) in enumerate(pairs)])
    except ValueError:
        return
    assert 0 < p.ci_low <= p.ratio <= p.ci_high < math.inf and 0 <= p.p_value <= 1


def simulate(rng: random.Random, hosts: int, effect: float, tau: float, runs: int = 5, sd: float = 0.1) -> bool:
    """One fleet: each host's true log ratio drawn around ``effect``, its runs noisy; significant at 0.05?"""
    effects = []
    for h in range(hosts):
        true = rng.gauss(effect, tau)
        base = [math.exp(rng.gauss(0.0, sd)) for _ in range(runs)]
        var = [math.exp(rng.gauss(true, sd)) for _ in range(runs)]
        e = log_ratio_welch(base, var)
        half = math.log(e.ci_high) - math.log(e.ratio)
        effects.append(HostEffect(str(h), math.log(e.ratio), half / sps.t.ppf(0.975, e.df)))
    return pool(effects).p_value < 0.05


@pytest.mark.parametrize("hosts", [3, 6])
def test_the_pooled_verdict_holds_its_false_positive_rate_across_heterogeneous_hosts(hosts):
    rng = random.Random(20261125 + hosts)
    n = 1500
    fp = sum(simulate(rng, hosts, 0.0, tau=0.05) for _ in range(n))
    assert fp / n <= 0.06, fp / n
    # It can fail: a fixed-effect pool (tau² forced to 0, normal interval) ignores the spread between hosts.
    rng = random.Random(7)
    naive = 0
    for _ in range(600):
        ys, ses = [], []
        for _h in range(hosts):
            true = rng.gauss(0.0, 0.05)
            ys.append(rng.gauss(true, 0.1 * math.sqrt(2 / 5)))
            ses.append(0.1 * math.sqrt(2 / 5))
        w = [1 / s ** 2 for s in ses]
        mu = sum(a * b for a, b in zip(w, ys, strict=True)) / sum(w)
        naive += abs(mu) / math.sqrt(1 / sum(w)) > 1.96
    assert naive / 600 > 0.08


def test_the_pooled_verdict_finds_a_real_fleet_wide_effect():
    rng = random.Random(99)
    power = sum(simulate(rng, 5, -0.15, tau=0.03) for _ in range(400)) / 400
    assert power > 0.8, power


# --- `report A B C` ---------------------------------------------------------------------------------------------


def saved_host(tmp_path, host: str, factor: float, seed: int, variants: tuple[str, str] = ("none", "mq-deadline")):
    doc = json.loads((SAVED / "experiment.json").read_text())
    doc = copy.deepcopy(doc)
    doc["host"] = host
    rng = random.Random(seed)
    for r in doc["runs"]:
        r["metrics"]["iops"] = 10000.0 * (factor if r["variant"] == variants[1] else 1.0) * math.exp(rng.gauss(0, .02))
        r["valid"] = True
    out = tmp_path / f"{host}.json"
    out.write_text(json.dumps(doc))
    return out


def test_report_pools_saved_compares_of_several_hosts(tmp_path):
    files = [saved_host(tmp_path, h, f, s) for h, f, s in (("db1", 0.8, 1), ("db2", 0.82, 2), ("db3", 0.79, 3))]
    out = run_cli("report", *map(str, files))
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "per host:" in text and "db1:" in text and "db3:" in text
    assert "mq-deadline: " in text and "fewer IOPS than none" in text and "pooled over 3 hosts" in text
    assert "3 of 3 go the same way" in text and "random effects" in text
    js = json.loads(run_cli("report", *map(str, files), "--json").stdout)
    (row,) = js["pooled"]
    assert row["significant"] and 0.75 < row["ratio"] < 0.85 and len(js["hosts"]) == 3


def test_report_refuses_files_that_compare_different_things(tmp_path):
    a = saved_host(tmp_path, "a", 0.9, 1)
    doc = json.loads(a.read_text())
    doc["variants"][1].update(label="bfq", scheduler="bfq")
    for r in doc["runs"]:
        r["variant"] = "bfq" if r["variant"] == "mq-deadline" else r["variant"]
    doc["order"] = ["bfq" if v == "mq-deadline" else v for v in doc["order"]]
    doc["started"] += 1  # another experiment (a copy of a's would be refused as the same one)
    b = tmp_path / "b.json"
    b.write_text(json.dumps(doc))
    err = one_sentence_exit_2("report", str(a), str(b))
    assert "different variants" in err
    err = one_sentence_exit_2("report", str(a), str(a), "--plot")
    assert "one file" in err
