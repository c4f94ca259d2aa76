"""Experiment judging as pure functions: verdicts, intervals, sequential looks, report rendering."""

import json
import math
import re

import pytest
from doc_support import experiment_doc, run_doc
from hypothesis import given
from hypothesis import strategies as st

from iosched.core.base.encode import encode
from iosched.core.experiment.variants import plan_order
from iosched.core.present.report import runs_csv, text_report
from iosched.core.present.sentences import interim_lines, relative_text
from iosched.core.present.worded import worded_judgement
from iosched.core.statistics.verdict import RunningVerdict, judge, sequential_plan


def doc_with(iops: dict[str, list[float]], invalid: int | None = None) -> dict:
    runs, i = [], 0
    for n in range(max(len(v) for v in iops.values())):
        for label, values in iops.items():
            if n < len(values):
                runs.append({"index": i, "variant": label, "valid": i != invalid, "start": i, "end": i + 1,
                             "invalid_reason": "scheduler changed to kyber" if i == invalid else None,
                             "config": {"scheduler": label}, "fio": None,
                             "metrics": {"iops": values[n], "cpu_us_per_io": 1e6 / values[n] if values[n] else 0.0}})
                i += 1
    return {"variants": [{"label": lb} for lb in iops], "runs": runs, "order": [r["variant"] for r in runs],
            "repeat": 3, "device": {"name": "loop9"}, "kernel": "6.x", "workload": {"job": {"name": "j"}}}


def _judge(doc: dict, *args) -> dict:
    """The verdict of a document a test wrote, as its JSON."""
    d = experiment_doc(doc)
    return encode(worded_judgement(d, judge(d, *args)))  # with its words, as --json has them


def _report(doc: dict, **kwargs) -> str:
    """The details page (`--details`): every table and comparison."""
    typed = experiment_doc(doc)
    return text_report(typed, judge(typed), details=True, **kwargs)


def test_the_default_three_runs_never_warn_about_their_own_count():
    """`compare` runs 3 per variant unless told (README's own `--repeat 3`): a default says nothing against itself,
    whatever the verdict; the odd pass's drift is said once, in docs/statistics.md."""
    for bfq in ([141000, 139200, 146800], [219000, 221500, 222800]):  # a clear difference, and none
        notes = _judge(doc_with({"none": [220100, 218500, 223900], "bfq": bfq}))["notes"]
        assert not any("odd" in n or "unbalanced" in n for n in notes), notes


def test_judge_leaves_invalid_runs_out_and_says_why():
    doc = doc_with({"none": [220100, 218500, 223900], "bfq": [141000, 139200, 146800, 10]}, invalid=6)
    v = _judge(doc)
    assert v["summaries"]["bfq"]["iops"]["n"] == 3
    (pair,) = [p for p in v["comparisons"] if p["metric"] == "iops"]
    assert pair["primary"] and v["primary_metric"] == "iops" and v["status"] == "final"
    assert pair["significant"] and pair["verdict"] == "bfq: 36% fewer IOPS than none (95% CI 32–39%), p<0.001"
    assert pair["ratio"] == pytest.approx(0.6444, abs=1e-4) and pair["ci95"][1] < 1.0
    assert set(pair) >= {"metric", "baseline", "variant", "ratio", "ci95", "p_value", "p_adjusted", "significant",
                         "primary", "verdict"}
    assert v["invalid"] == ["run 7 (bfq): scheduler changed to kyber"]
    text = _report(doc)
    assert all(len(line) <= 80 for line in text.splitlines() if "±" in line or "█" in line)
    assert "invalid: run 7 (bfq)" in text
    # The secondary metric is shown although it only restates the primary effect.
    assert "bfq: 55% more CPU µs per IO than none" in text and "Secondary metrics" in text
    first = _report(doc, verdict_first=True)
    assert first.index("Verdict") < first.index("IOPS, bars")
    rows = runs_csv(experiment_doc(doc)).splitlines()
    assert rows[0] == "run,variant,scheduler,valid,start_s,end_s,iops,cpu_us_per_io" and rows[7].split(",")[3] == "0"


def test_the_table_shows_each_difference_with_the_verdicts_asymmetric_interval():
    # bfq far below none and very noisy: a linear "mean ± half-width" of the difference would reach below -100%.
    doc = doc_with({"none": [220100, 218500, 223900, 221000], "bfq": [41000, 9200, 146800, 30000]})
    v = _judge(doc)
    text = _report(doc)
    (c,) = [c for c in v["comparisons"] if c["primary"]]
    (cpu,) = [c for c in v["comparisons"] if c["metric"] == "cpu_us_per_io"]
    lines = text.splitlines()
    row = lines[lines.index(next(line for line in lines if line.startswith("bfq "))) + 1]
    assert row.split()[:2] == ["vs", "none"]
    packed = row.replace(" ", "")  # a wide cell drops the spaces around "…"
    assert relative_text(c["ratio"], *c["ci95"]).replace(" ", "") in packed
    assert relative_text(cpu["ratio"], *cpu["ci95"]).replace(" ", "") in packed
    assert c["ratio"] < 0.5 and c["ci95"][0] < c["ratio"] < c["ci95"][1]
    # The same figures as the verdict's sentence ("84% fewer IOPS than none (95% CI 0.6–97%)"), never below -100%.
    in_row = {abs(float(x)) for x in re.findall(r"[-+]\d+(?:\.\d+)?", relative_text(c["ratio"], *c["ci95"]))}
    sentence = c["verdict"].split(":")[1].rsplit(",", 1)[0]  # without the p-value
    assert in_row == {float(x) for x in re.findall(r"\d+(?:\.\d+)?", sentence)} - {95.0}
    assert all(float(x) >= -100 for x in re.findall(r"-\d+(?:\.\d+)?", row))
    assert "(n=" not in row and "±" not in row


@given(st.floats(1e-6, 1e6), st.floats(1e-3, 1.0), st.floats(1.0, 1e3))
def test_a_relative_interval_never_goes_below_minus_100_percent(ratio, low, high):
    text = relative_text(ratio, ratio * low, ratio * high)
    numbers = [float(x) for x in re.findall(r"[-+]\d+(?:\.\d+)?", text)]
    assert len(numbers) == 3 and all(x >= -100 for x in numbers)
    assert numbers[1] <= numbers[0] <= numbers[2]


def test_interim_lines_never_claim_significance_in_fixed_n_mode():
    rv = RunningVerdict(["none", "bfq"])
    for label, x in (("none", 100.0), ("bfq", 70.0), ("bfq", 71.0)):
        rv.add(run_doc({"variant": label, "metrics": {"iops": x}, "index": 0}))
    assert interim_lines(rv.standing()) == []  # not yet two runs a side
    for label, x in (("none", 101.0), ("none", 99.0), ("bfq", 70.5)):
        rv.add(run_doc({"variant": label, "metrics": {"iops": x}}))
    (line,) = interim_lines(rv.standing())
    assert line.startswith("interim, 3 runs per variant: bfq vs none IOPS -29% (95% CI -31% to -28%)")
    assert "significant" not in line and not rv.decided


def test_sequential_stops_only_at_a_planned_look():
    plan = sequential_plan(10, 0.05, 2, alternate=False)
    rv = RunningVerdict(["none", "bfq"], sequential=plan)
    order = plan_order(2, 10)
    iops = {0: [100, 101, 99, 100.5, 100.2, 99.7], 1: [70, 71, 70.5, 69.8, 70.2, 70.1]}
    stopped = None
    for i, a in enumerate(order[:12]):
        x = iops[a][sum(1 for b in order[:i] if b == a)]
        if rv.should_stop(run_doc({"variant": ["none", "bfq"][a], "metrics": {"iops": x}})):
            stopped = i + 1
            break
        assert all("significant" not in line for line in interim_lines(rv.standing()))
    assert stopped == 8 and rv.decided_at == 4  # the first look: 4 runs a side
    line, stop = interim_lines(rv.standing())
    assert line.startswith("bfq: 30% fewer IOPS than none")
    assert stop == "boundary crossed at 4 runs per variant: stopping"


def test_cannot_judge_is_a_verdict_of_its_own():
    one = doc_with({"none": [220100], "bfq": [141000]})
    (c,) = [c for c in _judge(one)["comparisons"] if c["primary"]]
    assert c["p_value"] is None and not c["significant"] and "cannot judge (fewer than 2 valid runs" in c["verdict"]
    assert "(n=1)" in _report(one)  # never "± 0.00"
    flat = doc_with({"none": [100.0, 100.0], "bfq": [90.0, 90.0]})
    (c,) = [c for c in _judge(flat)["comparisons"] if c["primary"]]
    assert c["p_value"] is None and "no run-to-run variance" in c["verdict"]
    zero = doc_with({"none": [0.0, 0.0, 0.0], "bfq": [5.0, 6.0, 7.0]})
    (c,) = [c for c in _judge(zero)["comparisons"] if c["primary"]]
    assert c["p_value"] is None and "zero or negative" in c["verdict"]
    nan = doc_with({"none": [1.0, math.nan], "bfq": [5.0, 6.0]})
    (c,) = [c for c in _judge(nan)["comparisons"] if c["primary"]]
    assert c["p_value"] is None and "not a finite number" in c["verdict"]


def test_no_difference_gives_a_planning_figure_and_the_json_contract():
    doc = doc_with({"none": [100.0, 104.0, 97.0, 101.0], "bfq": [99.0, 106.0, 95.0, 102.0]})
    doc["repeat"] = 4
    v = _judge(doc)
    (c,) = [c for c in v["comparisons"] if c["primary"]]
    assert not c["significant"] and c["verdict"].startswith("bfq vs none: no significant difference in IOPS: ")
    assert c["ci95"][0] < 1.0 < c["ci95"][1] and c["p_adjusted"] == pytest.approx(c["p_value"])
    (note,) = v["notes"]
    assert note.startswith("planning: about ") and "runs per variant would detect a 10% difference" in note
    json.dumps(v, allow_nan=False)  # scripts read it: no NaN


def test_three_variants_each_against_the_baseline_holm_adjusted():
    doc = doc_with({"none": [100.0, 102.0, 98.0], "bfq": [70.0, 72.0, 69.0], "kyber": [99.0, 101.0, 103.0]})
    v = _judge(doc)
    prim = {c["variant"]: c for c in v["comparisons"] if c["primary"]}
    assert set(prim) == {"bfq", "kyber"} and all(c["baseline"] == "none" for c in prim.values())
    assert prim["bfq"]["significant"] and not prim["kyber"]["significant"]
    assert prim["bfq"]["p_adjusted"] == pytest.approx(2 * prim["bfq"]["p_value"])  # the smaller of two
    assert "adjusted p" in prim["bfq"]["verdict"]
