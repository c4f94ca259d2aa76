"""Matrix experiments as pure functions: groups, the balanced order, saved plans, judging, and A/A simulation."""

import json
import math
import random
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matrix_support import fake_matrix, judged, plan_document

from iosched.core.base.encode import encode
from iosched.core.base.errors import BadInput
from iosched.core.documents.params import parse_variants
from iosched.core.experiment.matrix import (
    MatrixPlan,
    eta_seconds,
    job_file_runtime,
    job_spec,
    plan_from_doc,
    plan_order,
)
from iosched.core.load.fio_result import latency_bins
from iosched.core.load.jobs import CATALOG, GROUPS, resolve_jobs
from iosched.core.statistics.matrix_judge import judge_matrix


def test_groups_are_the_published_studies():
    assert set(GROUPS) >= {"4k-matrix", "1m-patterns", "size-sweep", "seq-read", "desktop",
                           "size-sweep-randread", "size-sweep-read", "size-sweep-randwrite", "size-sweep-write"}
    assert GROUPS["4k-matrix"].jobs == ("4k-read", "4k-write", "4k-randread", "4k-randwrite", "4k-rw")
    assert len(GROUPS["size-sweep"].jobs) == 24 and GROUPS["size-sweep"].sweep
    assert GROUPS["1m-patterns"].drop_caches and GROUPS["1m-patterns"].repeat == 3
    assert all(n in CATALOG for g in GROUPS.values() for n in g.jobs)
    split = [n for p in ("randread", "read", "randwrite", "write") for n in GROUPS[f"size-sweep-{p}"].jobs]
    assert sorted(split) == sorted(GROUPS["size-sweep"].jobs)


def test_resolve_jobs_groups_names_and_files(tmp_path):
    jobs, group = resolve_jobs("4k-matrix")
    assert [j.name for j in jobs] == list(GROUPS["4k-matrix"].jobs) and group is GROUPS["4k-matrix"]
    f = tmp_path / "mine.fio"
    f.write_text("[global]\nrw=randread\nbs=4k\nruntime=2\n[one]\n")
    jobs, group = resolve_jobs(f"seqread-direct,{f}")
    assert [j.name for j in jobs] == ["seqread-direct", "mine.fio"] and group is None
    assert job_file_runtime(jobs[1]) == 2.0


@pytest.mark.parametrize(("spec", "match"), [
    ("4k-matrx", "no job or group named '4k-matrx'"),
    ("", "names no job"),
    (",", "names no job"),
    ("4k-read,,4k-write", "empty item"),
    ("4k-matrix,4k-read", "names 4k-read twice"),
    ("/nonexistent/x.fio", "no job file"),
])
def test_resolve_jobs_refuses(spec, match):
    with pytest.raises(BadInput, match=match):
        resolve_jobs(spec)


@pytest.mark.parametrize(("w", "v", "r"), [(5, 2, 3), (5, 3, 2), (1, 2, 4), (24, 2, 1), (4, 4, 5)])
def test_order_covers_the_matrix_and_balances_positions(w, v, r):
    order = plan_order(w, v, r)
    assert Counter(order) == {(a, b): r for a in range(w) for b in range(v)}
    # Every round visits each workload once, in one block of its variants.
    for k in range(r):
        block = order[k * w * v:(k + 1) * w * v]
        assert sorted({a for a, _ in block}) == list(range(w))
    if r % 2 == 0:
        # Within each workload, every variant's mean position among that workload's runs is the same.
        for a in range(w):
            mine = [b for x, b in order if x == a]
            means = {b: sum(i for i, y in enumerate(mine) if y == b) for b in range(v)}
            assert len(set(means.values())) == 1
    if w >= 2 and r == 1:
        # Across the matrix, the first variant does not always go first.
        firsts = {order[i * v][1] for i in range(w)}
        assert len(firsts) == 2


def test_plan_refuses_empty_and_estimates():
    vs = parse_variants("none,bfq")
    with pytest.raises(BadInput, match="matrix is empty"):
        MatrixPlan(vs, [])
    jobs = [CATALOG[n].scaled(runtime=2) for n in GROUPS["4k-matrix"].jobs]
    plan = MatrixPlan(vs, jobs, repeat=3, settle=1.0)
    assert plan.runs == 30
    assert plan.estimate() == pytest.approx(30 * (2 + 1 + 1.0))
    # Runs that took twice their estimate double the ETA of what is left.
    assert eta_seconds(plan, [0, 1], [(4.0, 8.0)]) == pytest.approx(16.0)


def _doc_for(plan: MatrixPlan) -> dict:
    return encode(plan_document(plan))


def test_a_saved_plan_reads_back_the_same(tmp_path):
    f = tmp_path / "mine.fio"
    f.write_text("[global]\nrw=randwrite\nbs=16k\n[a]\niodepth=4\n[b]\n")
    jobs, _ = resolve_jobs(f"4k-read,{f}")
    jobs[0] = jobs[0].scaled(runtime=1.5, size=64 << 20)
    plan = MatrixPlan(parse_variants("none,mq-deadline:read_expire=100,none"), jobs, repeat=2, runtime=3.0)
    back = plan_from_doc(json.loads(json.dumps(_doc_for(plan))))
    assert [job_spec(j) for j in back.jobs] == [job_spec(j) for j in plan.jobs]
    assert [v.doc() for v in back.variants] == [v.doc() for v in plan.variants]
    assert back.order == plan.order and back.repeat == 2 and back.runtime == 3.0
    assert back.trace is False and plan_from_doc(_doc_for(replace(plan, trace=True))).trace is True


@pytest.mark.parametrize("tamper", [
    lambda d: d["jobs"].__setitem__(0, {"catalog": "4k-read", "runtime": 1.0, "size": -5}),
    lambda d: d["jobs"].__setitem__(0, {"catalog": "rm -rf", "runtime": 1.0, "size": 5}),
    lambda d: d["jobs"].__setitem__(1, {"file": "x.fio", "sections": [["a", [["exec_prerun", "touch /x"]]]]}),
    lambda d: d["order"].pop(),
    lambda d: d.pop("variants"),
    lambda d: d.__setitem__("repeat", "many"),
    lambda d: d.__setitem__("traced", "yes"),
])
def test_a_tampered_plan_is_bad_input(tmp_path, tamper):
    f = tmp_path / "mine.fio"
    f.write_text("[a]\nrw=read\n")
    jobs, _ = resolve_jobs(f"4k-read,{f}")
    doc = _doc_for(MatrixPlan(parse_variants("none,bfq"), jobs))
    tamper(doc)
    with pytest.raises(BadInput):
        plan_from_doc(doc)


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                    max_leaves=30))
def test_latency_bins_never_raise_on_random_json(obj):
    out = latency_bins(obj if isinstance(obj, dict) else {"jobs": obj})
    assert all(isinstance(k, int) and k >= 0 and v > 0 for k, v in out.items())


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.integers(0, 10**9), st.integers(1, 10**6), max_size=30),
       st.dictionaries(st.integers(0, 10**9), st.integers(1, 10**6), max_size=30))
def test_latency_bins_sum_directions_and_jobs(read, write):
    obj = {"jobs": [{"read": {"clat_ns": {"bins": {str(k): v for k, v in read.items()}}},
                     "write": {"clat_ns": {"bins": {str(k): v for k, v in write.items()}}}},
                    {"read": {"clat_ns": {}}}]}
    out = latency_bins(obj)
    assert sum(out.values()) == sum(read.values()) + sum(write.values())
    assert list(out) == sorted(out)


# --- judging ------------------------------------------------------------------------------------------------


def test_matrix_verdict_per_cell_and_sentence():
    wls = ["w1", "w2", "w3", "w4", "w5"]
    rng = random.Random(7)
    effect = {"w1": 0.63, "w2": 0.92, "w3": 0.75, "w4": 1.0, "w5": 1.0}
    vals = {}
    for w in wls:
        vals[(w, "none")] = [1000 * (1 + rng.gauss(0, 0.004)) for _ in range(4)]
        vals[(w, "bfq")] = [1000 * effect[w] * (1 + rng.gauss(0, 0.004)) for _ in range(4)]
    j = judged(fake_matrix(vals, wls, ["none", "bfq"]))
    assert len(j["cells"]) == 10 and j["comparisons"] == 5
    sig = {c["workload"] for c in j["cells"] if c.get("significant")}
    assert sig == {"w1", "w2", "w3"}
    (sentence,) = j["summary"]
    assert sentence.startswith("bfq: fewer IOPS on 3 of 5 workloads (−8% to −37%)")
    assert sentence.endswith("equal within -9.1% to +10% on 2")
    w1 = next(c for c in j["cells"] if c["workload"] == "w1" and c["variant"] == "bfq")
    assert w1["mean"] == pytest.approx(sum(vals[("w1", "bfq")]) / 4)
    assert w1["p_adjusted"] >= w1["p_value"] and w1["verdict"].startswith("w1: bfq: 37% fewer IOPS than none (95% CI")
    # Holm over the whole matrix: the adjusted p-values are Holm's of the five raw ones.
    from iosched.core.statistics.stats import holm

    bfq = [c for c in j["cells"] if c["variant"] == "bfq"]
    assert [c["p_adjusted"] for c in bfq] == pytest.approx(holm([c["p_value"] for c in bfq]))


def test_aa_matrix_is_not_significant_anywhere_in_95_percent_of_runs():
    """A/A: 5 workloads x 2 identical variants, 3 runs each, lognormal noise; Holm over the whole matrix."""
    rng = random.Random(2024)
    sims, clean = 800, 0
    for _ in range(sims):
        vals = {}
        for w in range(5):
            cv = rng.choice([0.02, 0.1, 0.3])
            for v in ("none", "none#2"):
                vals[(f"w{w}", v)] = [5e4 * math.exp(rng.gauss(0, cv)) for _ in range(3)]
        j = judged(fake_matrix(vals, [f"w{w}" for w in range(5)], ["none", "none#2"], cpu=False))
        clean += not any(c.get("significant") for c in j["cells"])
    assert clean / sims >= 0.95, clean / sims


def test_every_cell_reaches_json_and_csv():
    from iosched.core.present.matrix import CSV_FIELDS, matrix_csv

    wls = ["a", "b"]
    vals = {(w, v): [100.0 + i + (v == "bfq") * 3 for i in range(3)] for w in wls for v in ("none", "bfq")}
    j = judged(fake_matrix(vals, wls, ["none", "bfq"]))
    doc = fake_matrix(vals, wls, ["none", "bfq"])
    rows = matrix_csv(doc, judge_matrix(doc)).splitlines()
    assert rows[0].split(",")[: len(CSV_FIELDS)] == CSV_FIELDS and len(rows) == 5
    cell = json.loads(json.dumps(j))["cells"][3]
    assert {"metric", "baseline", "variant", "ratio", "ci95", "p_value", "p_adjusted", "significant",
            "primary", "verdict"} <= set(cell)


def test_single_runs_cannot_be_judged_and_say_why():
    vals = {(w, v): [100.0] for w in ("a", "b") for v in ("none", "bfq")}
    j = judged(fake_matrix(vals, ["a", "b"], ["none", "bfq"]))
    assert j["comparisons"] == 0
    assert all(c["cannot_judge"] and c["p_value"] is None for c in j["cells"] if c["variant"] == "bfq")
    (sentence,) = j["summary"]
    assert sentence.startswith("bfq: cannot judge IOPS on 2 of 2 workloads (fewer than 2 valid runs")


def test_undecided_cells_say_how_many_runs_a_ten_percent_difference_needs():
    from iosched.core.present.matrix import matrix_text
    from iosched.core.statistics.stats import log_ratio_welch, runs_needed

    # 4k: bfq 40% slower, clearly decided; 64k: within the noise, undecided at 2 runs.
    vals = {("4k", "none"): [1000.0, 1010.0], ("4k", "bfq"): [600.0, 603.0],
            ("64k", "none"): [500.0, 540.0], ("64k", "bfq"): [510.0, 470.0]}
    doc = fake_matrix(vals, ["4k", "64k"], ["none", "bfq"])
    j = judged(doc)
    assert [c["significant"] for c in j["cells"] if c["variant"] == "bfq"] == [True, False]
    first, cell = j["planning"]
    e = log_ratio_welch(vals[("64k", "none")], vals[("64k", "bfq")])
    n = runs_needed(e.sd_log, 1.10, 0.05 / 2)  # Holm's first step over the matrix's two comparisons
    assert first.startswith(f"planning: about {n} runs per variant ({2 * n} per workload) would detect a 10%")
    assert cell.startswith(f"64k, bfq: about {n} runs per variant would detect a 10% difference at its noise")
    assert not any(line.startswith("4k,") for line in j["planning"])  # a decided cell needs nothing more
    text = matrix_text(doc, judge_matrix(doc))
    assert f"  planning: about {n} runs per variant" in text and "    64k, bfq:" in text
    decided = judged(fake_matrix({k: v for k, v in vals.items() if k[0] == "4k"}, ["4k"], ["none", "bfq"]))
    assert decided["planning"] == []
