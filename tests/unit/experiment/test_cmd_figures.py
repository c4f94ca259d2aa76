"""Figures from outside, any text at all: a command's figure is a value in a figure's range or the reason its run
is invalid; a run's figures (fio's, the sampler's) are held to the same rule; and whatever was saved reads back
and reports, in every form (`echo v=1e308`, `v=5e-13` and `v=3e19` with --save were each a traceback or a
refusal of iosched's own file)."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iosched.cli.main import main
from iosched.core.base.encode import encode
from iosched.core.base.figures import figure_fault
from iosched.core.documents.document import RunDoc
from iosched.core.documents.saved import read_experiment
from iosched.core.experiment.cmd_metrics import CmdMetric, read_figures
from iosched.core.experiment.results import save_result
from iosched.core.experiment.runner import hold_to_range
from iosched.core.statistics.verdict import judge

SAVED = Path(__file__).parents[2] / "data" / "saved"  # tests/data/saved
V = CmdMetric("v", r"^v=(\S*)$", "higher")

# Any float or integer text, and the texts around them: exponents past a double's, 5,000 digits, signs, NaN.
FIGURE_TEXTS = st.one_of(
    st.floats().map(repr),
    st.floats().map(lambda x: f"{x:.30f}"),
    st.floats().map(lambda x: f"{x:e}"),
    st.integers().map(str),
    st.from_regex(r"\A[+-]?[0-9]{1,5000}\Z"),
    st.from_regex(r"\A[+-]?[0-9]{0,20}\.?[0-9]{0,20}([eE][+-]?[0-9]{1,6})?\Z"),
    st.sampled_from(["1e308", "1e-320", "5e-13", "3e19", "1e15", "1e-12", "0", "-0", "nan", "-inf", "Infinity",
                     "1_000", "0x10", "", "١٢", "1e+999999"]),
)


def _is_sentence(why: str) -> bool:
    return bool(why) and "\n" not in why and len(why) < 300


@settings(max_examples=1000, deadline=None)
@given(FIGURE_TEXTS)
def test_any_figure_text_is_a_figure_or_the_reason_its_run_is_invalid(text):
    got = V.figure(text)
    if isinstance(got, float):
        assert figure_fault(got) is None
    else:
        assert got.startswith("the command's v ") and _is_sentence(got)


@settings(max_examples=40, deadline=None)
@given(FIGURE_TEXTS)
def test_the_child_reads_the_same_from_a_commands_output(text):
    values, why = read_figures([V], f"progress\nv={text}\ndone\n")
    assert values == ({"v": V.figure(text)} if why is None else {})
    assert why is None or _is_sentence(why)


def test_the_issues_figures():
    assert read_figures([V], "v=1e308\n")[1] == ("the command's v is 1e+308, outside a figure's range (0, or "
                                                 "between 1e-12 and 1e15 in size)")
    for text in ("1e-320", "5e-13", "3e19"):
        assert "outside a figure's range" in str(read_figures([V], f"v={text}\n")[1])
    assert read_figures([V], "v=12.5\n") == ({"v": 12.5}, None)


def _held(**fields) -> dict:
    return encode(hold_to_range(RunDoc(index=0, variant="none", start=0.0, end=1.0, config={}, **fields)))


def test_a_run_is_held_to_the_range_whatever_measured_it():
    run = _held(valid=True, invalid_reason=None,
                metrics={"iops": 3e19, "clat_p99_us": 5e-13, "mb_s": 100.0, "clat_mean_us": None})
    assert run["metrics"] == {"mb_s": 100.0, "clat_mean_us": None}
    assert not run["valid"] and run["invalid_reason"] == ("its iops is 3e+19, outside a figure's range (0, or "
                                                          "between 1e-12 and 1e15 in size)")
    run = _held(valid=False, invalid_reason="fio was killed", metrics={"iops": math.inf})
    assert run["invalid_reason"] == "fio was killed" and run["metrics"] == {}


def _call(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, err.getvalue()


def _runs_from(texts: list[str], template: dict) -> list[dict]:
    """Runs as the runner makes them: the command's figure read, then every figure held to the range."""
    runs = []
    for i, text in enumerate(texts):
        got = V.figure(text)
        run = copy.deepcopy(template)
        variant = ("none", "mq-deadline")[(i + i // 2) % 2]  # A B B A
        run.update(index=i, variant=variant, config={**run["config"], "scheduler": variant},
                   valid=isinstance(got, float), invalid_reason=None if isinstance(got, float) else got)
        if isinstance(got, float):
            run["metrics"]["v"] = got
        runs.append(encode(hold_to_range(RunDoc(**run))))
    return runs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(FIGURE_TEXTS | st.sampled_from(["1", "2", "1e15", "1e-12", "0", "-3"]), min_size=2, max_size=8),
       st.dictionaries(st.sampled_from(["wall_s", "cpu_usr", "dev_r_await", "cmd_usr_s"]),
                       st.floats() | st.integers(-(10**20), 10**20), max_size=3))
def test_whatever_was_saved_reads_back_and_reports(tmp_path_factory, texts, measured):
    doc = json.loads((SAVED / "command.json").read_text())
    template = doc["runs"][0]
    template["metrics"].update(measured)  # the sampler's figures too, as odd as they come
    doc["runs"] = _runs_from(texts, template)
    doc["order"] = [r["variant"] for r in doc["runs"]]
    doc["workload"].update(cmd_metrics=[encode(V.doc())])
    doc["primary_metric"] = "v"
    doc["judgement"] = encode(judge(read_experiment(doc, "f.json"), 0.05, "v"))
    path = tmp_path_factory.mktemp("rt") / "f.json"
    save_result(doc, path)
    read_experiment(json.loads(path.read_text()), path)
    for flags in ([], ["--json"], ["--csv"], ["--plot"], ["--metric", "wall_s"]):
        code, err = _call("report", str(path), *flags)
        assert code == 0, err
