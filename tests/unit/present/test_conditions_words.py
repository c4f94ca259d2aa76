"""What a result was measured under, in words (core/present/conditions.py), and where its CPU per IO went in the
matrix's CPU chart (core/present/charts.py) and the report's columns (core/present/report.py)."""

from __future__ import annotations

import math

from doc_support import experiment_doc

from iosched.core.documents.document import MatrixRunDoc, RunDoc
from iosched.core.documents.metrics import metric_label
from iosched.core.load.conditions import ConditionsDoc
from iosched.core.load.fill import FillDoc
from iosched.core.load.steady import SteadyRun, SteadyWait
from iosched.core.present.charts import cpu_split
from iosched.core.present.conditions import condition_lines, steady_mark, summary_condition_lines
from iosched.core.present.report import text_report
from iosched.core.statistics.verdict import judge

WAIT = SteadyWait(criterion="iops_slope:1%", window_s=10, ramp_s=0, timeout_s=60)
FILL = FillDoc(asked=50, level=50.0, how="written", of="nvme0n1 (1.0T)", trimmed=True, bytes_written=1 << 39,
               seconds=512.0)
COND = ConditionsDoc(cpu_model="AMD EPYC 7B13", device="nvme0n1", device_model="Samsung SSD 980", firmware="2B2QEXM7",
                     fill=FILL, steady=WAIT)


def run(i: int, reached: bool | None, variant: str = "bfq") -> RunDoc:
    steady = None if reached is None else SteadyRun(reached=reached, criterion="iops_slope:1%",
                                                    waited_s=12.0 if reached else 60.0, value=-4.2, mean=1e5)
    return RunDoc(index=i, variant=variant, start=0.0, end=1.0, valid=True, invalid_reason=None, config={},
                  metrics={}, steady=steady)


def test_the_machine_the_fill_and_the_waits_misses() -> None:
    runs = [run(0, True, "none"), run(1, False), run(2, True, "none"), run(3, True)]
    assert condition_lines(COND, "6.18.4", runs) == [
        "measured on: nvme0n1 (Samsung SSD 980, firmware 2B2QEXM7) on AMD EPYC 7B13, kernel 6.18.4; nvme0n1 (1.0T) "
        "filled to 50.0% (trimmed first; 512.0G of incompressible data in 512.0 s)",
        "steady state: each run waited for IOPS slope within 1%/s of the mean over 10 s (at most 60 s): reached "
        "before 3 of 4 runs; the others are kept, marked:",
        "  run 2 (bfq): steady state not reached in 60 s: IOPS slope -4.2%/s (bound 1%)"]
    assert summary_condition_lines(COND, runs)[0].startswith("fill: nvme0n1 (1.0T) filled to 50.0%")
    assert steady_mark(runs[1]) == "  NOT STEADY: steady state not reached in 60 s: IOPS slope -4.2%/s (bound 1%)"
    assert steady_mark(runs[0]) == "" and steady_mark(run(9, None)) == ""


def test_many_misses_are_counted_and_a_matrix_run_names_its_cell() -> None:
    runs = [MatrixRunDoc(**{**vars(run(i, False)), "steady": run(i, False).steady}, slot=i, workload="4k-randread")
            for i in range(5)]
    lines = condition_lines(COND, "6.18", runs)
    assert lines[2].startswith("  run 1 (4k-randread · bfq): steady state not reached")
    assert lines[-1] == "  and 2 more runs (--json: each run's steady)"


def test_an_older_result_says_nothing_of_them() -> None:
    assert condition_lines(None, "6.1", [run(0, None)]) == []
    bare = ConditionsDoc(cpu_model=None, device="loop3", device_model=None, firmware=None, fill=None, steady=None)
    assert condition_lines(bare, "6.1", [run(0, None)]) == ["measured on: loop3 on an unnamed CPU, kernel 6.1"]
    assert summary_condition_lines(bare, [run(0, None)]) == []


def test_the_cpu_per_io_split_for_the_chart() -> None:
    assert cpu_split([[10.0, 20.0], [3.0, 4.0], [1.0, 9.0]]) == {"task": [3.0, 4.0], "all kworkers": [1.0, 9.0],
                                                                 "other": [6.0, 7.0]}
    assert cpu_split([[2.0], [3.0], [1.0]])["other"] == [0.0]  # never below zero: the total is another clock
    assert cpu_split([[10.0], [math.nan], [1.0]]) == {}  # runs from before the split: the total alone


def test_the_workers_figure_is_named_the_machines_not_the_devices() -> None:
    """kblockd serves every disk: its workers' time is every block worker's on the machine during the run, and each
    place that shows it says so (the column, its note, the metric's name)."""
    runs = [{"index": i, "variant": v, "metrics": {"iops": 1e5 + i, "cpu_us_per_io": 9.0 + i % 3,
                                                    "cpu_us_per_io_task": 3.0, "cpu_us_per_io_workers": 1.0 + i % 2}}
            for i, v in enumerate(["none", "bfq"] * 3)]
    doc = experiment_doc({"variants": [{"label": "none"}, {"label": "bfq"}], "runs": runs, "kind": "compare",
                          "device": {"name": "loop0"}, "kernel": "6.18", "workload": {"job": {"name": "randread"}}})
    text = text_report(doc, judge(doc), details=True)
    assert "all kworkers µs/IO" in text
    assert "all kworkers: every kernel block worker on this machine during the run (kblockd's, whatever" in text
    assert metric_label("cpu_us_per_io_workers").startswith("all block kworkers'")
