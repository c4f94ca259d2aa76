"""Experiment planning and judging as pure functions: variants, interleaving, verdicts, report rendering."""

import pytest

from iosched.core.errors import BadInput
from iosched.core.experiment import RunningVerdict, judge, parse_variants, plan_order
from iosched.report import runs_csv, text_report


def test_variants_with_settings_and_a_a_labels():
    vs = parse_variants("none, mq-deadline:read_expire=100:fifo_batch=8,none")
    assert [v.label for v in vs] == ["none", "mq-deadline:read_expire=100:fifo_batch=8", "none#2"]
    assert vs[1].scheduler == "mq-deadline" and vs[1].settings == (("read_expire", "100"), ("fifo_batch", "8"))
    for bad in ("none", "none,,bfq", "none,bfq:read_expire"):
        with pytest.raises(BadInput):
            parse_variants(bad)


def test_interleaved_order():
    assert plan_order(2, 3) == [0, 1, 1, 0, 0, 1]
    assert plan_order(3, 2) == [0, 1, 2, 2, 1, 0]


def doc_with(iops: dict[str, list[float]], invalid: int | None = None) -> dict:
    runs, i = [], 0
    for n in range(max(len(v) for v in iops.values())):
        for label, values in iops.items():
            if n < len(values):
                runs.append({"index": i, "variant": label, "valid": i != invalid, "start": i, "end": i + 1,
                             "invalid_reason": "scheduler changed to kyber" if i == invalid else None,
                             "config": {"scheduler": label}, "fio": None,
                             "metrics": {"iops": values[n], "cpu_us_per_io": 1e6 / values[n]}})
                i += 1
    return {"variants": [{"label": lb} for lb in iops], "runs": runs, "order": [r["variant"] for r in runs],
            "repeat": 3, "device": {"name": "loop9"}, "kernel": "6.x", "workload": {"job": {"name": "j"}}}


def test_judge_leaves_invalid_runs_out_and_says_why():
    doc = doc_with({"none": [220100, 218500, 223900], "bfq": [141000, 139200, 146800, 10]}, invalid=6)
    v = judge(doc)
    assert v["summaries"]["bfq"]["iops"]["n"] == 3
    (pair,) = [p for p in v["pairs"] if p["metric"] == "iops"]
    assert pair["significant"] and pair["verdict"].startswith("bfq: 36% fewer IOPS than none")
    assert v["invalid"] == ["run 7 (bfq): scheduler changed to kyber"]
    text = text_report(doc, v)
    assert all(len(line) <= 80 for line in text.splitlines() if "±" in line or "█" in line)
    assert "invalid: run 7 (bfq)" in text
    first = text_report(doc, v, verdict_first=True)
    assert first.index("Verdict") < first.index("IOPS, bars")
    rows = runs_csv(doc).splitlines()
    assert rows[0] == "run,variant,scheduler,valid,start_s,end_s,iops,cpu_us_per_io" and rows[7].split(",")[3] == "0"


def test_running_verdict():
    rv = RunningVerdict(["none", "bfq"])
    for label, x in (("none", 100.0), ("bfq", 70.0), ("bfq", 71.0)):
        rv.add({"variant": label, "metrics": {"iops": x}})
    assert rv.lines() == []  # not yet two runs a side
    rv.add({"variant": "none", "metrics": {"iops": 101.0}})
    (line,) = rv.lines()
    assert line.startswith("bfq: 30% fewer IOPS than none")
