"""What a result was measured under, saved and read back: an experiment's and a matrix's conditions (fill level,
steady-state wait, CPU, device model and firmware) and each run's wait, reported in every form; a hostile one is one
sentence; a resumed matrix waits as its first runs did; an older file without them reads as before."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from saved_support import HOSTILE, assert_one_sentence, call, saved

from iosched.core.base.encode import encode
from iosched.core.documents.saved import read_experiment
from iosched.core.experiment.matrix import decode_matrix, plan_of
from iosched.core.load.steady import SteadyWait

CONDITIONS = {
    "cpu_model": "Intel(R) Xeon(R) Processor", "device": "loop3", "device_model": None, "firmware": None,
    "fill": {"asked": 50, "level": 50.0, "how": "written", "of": "loop3 (256.0M)", "trimmed": True,
             "bytes_written": 134217728, "seconds": 1.2},
    "steady": {"criterion": "iops_slope:1%", "window_s": 10, "ramp_s": 0, "timeout_s": 60},
}
REACHED = {"reached": True, "criterion": "iops_slope:1%", "waited_s": 12.0, "value": -0.4, "mean": 50000.0}
MISSED = {"reached": False, "criterion": "iops_slope:1%", "waited_s": 60.0, "value": -4.2, "mean": 900.0}


def with_conditions(kind: str) -> dict:
    doc = saved(kind)
    doc["conditions"] = copy.deepcopy(CONDITIONS)
    for n, run in enumerate(doc["runs"]):
        run["steady"] = dict(MISSED if n == 1 else REACHED)
    return doc


def write(tmp: Path, doc: object) -> Path:
    path = tmp / "saved.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("kind", ["experiment", "matrix"])
def test_saved_conditions_read_back_and_are_reported(tmp_path: Path, kind: str) -> None:
    doc = with_conditions(kind)
    path = write(tmp_path, doc)
    code, out, err = call("report", str(path))
    assert code == 0, err
    assert "filled to 50.0% (trimmed first" in out
    assert "reached before" in out and "steady state not reached in 60 s: IOPS slope -4.2%/s (bound 1%)" in out
    code, out, err = call("report", str(path), "--json")
    assert code == 0 and json.loads(out)["conditions"] == CONDITIONS, err
    if kind == "experiment":
        assert encode(read_experiment(doc, path)) == doc  # the writer's inverse, the new fields included
        code, out, _ = call("report", str(path), "--details")
        assert "measured on: loop3 on Intel(R) Xeon(R) Processor, kernel" in out


def test_a_resumed_matrix_waits_as_its_first_runs_did(tmp_path: Path) -> None:
    doc = with_conditions("matrix")
    plan = plan_of(decode_matrix(doc, "m.json"))
    assert plan.steady == SteadyWait(criterion="iops_slope:1%", window_s=10, ramp_s=0, timeout_s=60)
    assert plan_of(decode_matrix(saved("matrix"), "m.json")).steady is None  # an older file: runs wait for nothing


LEAVES = [("conditions", "fill", "asked"), ("conditions", "fill", "level"), ("conditions", "fill", "how"),
          ("conditions", "steady", "criterion"), ("conditions", "steady", "window_s"),
          ("conditions", "steady", "timeout_s"), ("conditions", "steady"), ("conditions", "cpu_model"),
          ("conditions",), ("runs", 0, "steady", "waited_s"), ("runs", 0, "steady", "value"),
          ("runs", 0, "steady")]
FIO_WORDS = ["iops_slope:0%", "iops_slope:1", "lat:1%", "iops_slope:1.0%", 101, 3601, 2]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["experiment", "matrix"]), st.sampled_from(LEAVES),
       st.sampled_from([*HOSTILE, *FIO_WORDS]))
def test_a_hostile_condition_is_a_result_or_one_sentence(tmp_path_factory, kind, leaf, value) -> None:
    doc = with_conditions(kind)
    node = doc
    for key in leaf[:-1]:
        node = node[key]
    node[leaf[-1]] = copy.deepcopy(value)
    path = write(tmp_path_factory.mktemp("cond"), doc)
    code, _out, err = call("report", str(path))
    assert code in (0, 2), err
    if code == 2:
        assert_one_sentence(err, path, "matrix" if kind == "matrix" else "experiment")
