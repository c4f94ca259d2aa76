"""`--cmd-metric NAME=REGEX[:higher|lower]`: parsing, reading a figure from a command's output, how verdicts and
reports name it, and saved files that carry it (the real command runs: tests/real/test_cmd_metric_real.py)."""

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosched.core.base.encode import encode
from iosched.core.base.errors import BadInput
from iosched.core.documents.saved import read_experiment
from iosched.core.experiment.cmd_metrics import CmdMetric, parse_cmd_metric, parse_cmd_metrics, read_figures
from iosched.core.present.report import runs_csv, text_report
from iosched.core.present.worded import worded_judgement
from iosched.core.statistics.verdict import judge

from conftest import one_sentence_exit_2


def test_the_forms_the_issue_names_parse():
    m = parse_cmd_metric("tps=tps = ([0-9.]+):higher")
    assert (m.name, m.pattern, m.better) == ("tps", "tps = ([0-9.]+)", "higher")
    m = parse_cmd_metric("latency=latency average = ([0-9.]+) ms:lower")
    assert (m.name, m.pattern, m.better) == ("latency", "latency average = ([0-9.]+) ms", "lower")
    # No direction: the regex keeps its own colons.
    m = parse_cmd_metric("lat=^lat: ([0-9]+)")
    assert (m.pattern, m.better) == ("^lat: ([0-9]+)", None)


@pytest.mark.parametrize(("text", "says"), [
    ("tps", "give NAME=REGEX"),
    ("tps=", "give NAME=REGEX"),
    ("=x", "cannot name it"),
    ("TPS=x", "cannot name it"),
    ("iops=x", "iosched measures a figure of that name itself"),
    ("dev_util=x", "iosched measures a figure of that name itself"),
    ("fg:iops=x", "cannot name it"),
    ("tps=(", "is not a regular expression"),
    ("tps=(a)(b)", "has 2 groups"),
    ("tps=:higher", "the regular expression is empty"),
    ("tps=" + "a" * 501, "longer than 500"),
])
def test_what_cannot_read_a_figure_is_one_sentence(text, says):
    with pytest.raises(BadInput, match=None) as e:
        parse_cmd_metric(text)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_a_name_given_twice_is_refused():
    with pytest.raises(BadInput, match="tps is named twice"):
        parse_cmd_metrics(["tps=a([0-9]+)", "tps=b([0-9]+)"])


def test_the_last_match_is_read_its_group_or_the_whole_match():
    tps = CmdMetric("tps", r"tps = ([0-9.]+)")
    out = "progress: tps = 10.0\nprogress: tps = 20.5\ntps = 1234.5 (without initial connection time)\n"
    assert tps.read(out) == 1234.5
    assert CmdMetric("n", r"[0-9]+(?= rows)").read("got 42 rows") == 42.0
    assert tps.read("nothing here") == "the command's output has no tps (no match for 'tps = ([0-9.]+)')"
    assert "is not a number" in str(CmdMetric("x", r"x=(\S+)").read("x=fast"))
    assert "not a finite number" in str(CmdMetric("x", r"x=(\S+)").read("x=inf"))
    values, why = read_figures([tps, CmdMetric("lat", r"lat ([0-9]+)")], "tps = 5")
    assert values == {"tps": 5.0} and why is not None and "no lat" in why


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_any_flag_text_is_a_metric_or_one_sentence(text):
    try:
        m = parse_cmd_metric(text)
    except BadInput as e:
        assert "\n" not in str(e)
    else:
        assert text.startswith(m.name + "=")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_output_gives_a_number_or_a_reason(output):
    got = CmdMetric("tps", r"tps = (\S*)").read(output)
    assert isinstance(got, (float, str))


SAVED = Path(__file__).parents[2] / "data" / "saved"  # tests/data/saved


def _doc(better: str | None = "higher") -> dict:
    """The saved command experiment, its command made to print a figure: 3 runs each, bfq 20% below none."""
    doc = json.loads((SAVED / "command.json").read_text())
    first, second = (v["label"] for v in doc["variants"])
    doc["variants"][1] = {"label": "bfq", "scheduler": "bfq", "settings": {}}
    template = doc["runs"][0]
    doc["runs"] = []
    for i, (variant, tps) in enumerate([("none", 100), ("bfq", 80), ("bfq", 81), ("none", 101),
                                        ("none", 99), ("bfq", 79)]):
        run = copy.deepcopy(template)
        run.update(index=i, variant=variant, config={**run["config"], "scheduler": variant})
        run["metrics"].update(tps=float(tps), wall_s=1.0 + i / 100)
        doc["runs"].append(run)
    doc["order"] = [r["variant"] for r in doc["runs"]]
    doc["repeat"] = 3
    doc.pop("judgement", None)
    doc["workload"].update(cmd="pgbench", cmd_metrics=[{"name": "tps", "pattern": "tps = ([0-9.]+)",
                                                        "better": better}])
    doc["primary_metric"] = "tps"
    assert (first, second) == ("none", "mq-deadline")
    return doc


def _judged(doc: dict, alpha: float, metric: str | None) -> dict:
    read = read_experiment(doc, "x.json")
    return encode(worded_judgement(read, judge(read, alpha, metric)))  # with its words, as --json has them


def test_the_verdict_says_better_or_worse_when_told_which_way_is_better():
    v = _judged(_doc("higher"), 0.05, "tps")
    (prim,) = [c for c in v["comparisons"] if c["primary"]]
    assert prim["metric"] == "tps" and prim["significant"]
    assert prim["verdict"].startswith("bfq: 20% lower tps than none") and prim["verdict"].endswith(": worse")
    assert _judged(_doc("lower"), 0.05, "tps")["comparisons"][0]["verdict"].endswith(": better")
    assert not _judged(_doc(None), 0.05, "tps")["comparisons"][0]["verdict"].endswith(("better", "worse"))
    # Judged as the primary by default when the file says so, and wall time stays a secondary metric.
    assert {c["metric"] for c in _judged(_doc(), 0.05, None)["comparisons"]} >= {"tps", "wall_s"}


def test_the_report_and_csv_show_the_commands_figure_first():
    doc = read_experiment(_doc(), "x.json")
    text = text_report(doc, judge(doc, 0.05, "tps"), details=True)
    assert "tps read from its output (tps = ([0-9.]+), higher is better)" in text
    assert text.index("tps, bars to the mean") < text.index("wall time (s), bars to the mean")
    head = next(line for line in text.splitlines() if "tps" in line and "wall" in line)
    assert head.index("tps") < head.index("wall")
    assert ",end_s,tps,wall_s," in runs_csv(doc).splitlines()[0]


def test_a_saved_file_with_command_metrics_reads_back_and_a_stranger_is_refused():
    read_experiment(_doc(), "x.json")
    bad = copy.deepcopy(_doc())
    bad["primary_metric"] = "qps"
    with pytest.raises(BadInput, match="primary_metric: 'qps' is no metric; one of: iops"):
        read_experiment(bad, "x.json")
    bad = copy.deepcopy(_doc())
    bad["workload"]["cmd_metrics"][0]["name"] = bad["primary_metric"] = "iops"
    with pytest.raises(BadInput, match="is not what --cmd-metric takes"):
        read_experiment(bad, "x.json")
    bad = copy.deepcopy(_doc())
    bad["workload"]["cmd_metrics"][0]["pattern"] = "("
    with pytest.raises(BadInput, match="is not what --cmd-metric takes"):
        read_experiment(bad, "x.json")
    bad = copy.deepcopy(_doc())
    bad["workload"]["cmd"] = None
    with pytest.raises(BadInput, match="command metrics without a command"):
        read_experiment(bad, "x.json")


def test_report_takes_the_files_own_figure_as_metric(tmp_path):
    f = tmp_path / "r.json"
    f.write_text(json.dumps(_doc()))
    err = one_sentence_exit_2("report", str(f), "--metric", "qps")
    assert "unknown --metric 'qps'" in err and "or a --cmd-metric: tps" in err


def test_the_flags_are_checked_before_anything_runs(tree):
    tree.add_disk("sda", "8:0")
    base = ("--root", str(tree.root), "compare", "sda", "--schedulers", "none,bfq")
    err = one_sentence_exit_2(*base, "--job", "4k-randread", "--cmd-metric", "tps=tps ([0-9]+)")
    assert "give --cmd too" in err
    err = one_sentence_exit_2(*base, "--cmd", "true", "--cmd-metric", "tps=tps ([0-9]+)", "--metric", "qps")
    assert "unknown --metric 'qps'" in err and "or a --cmd-metric: tps" in err
    err = one_sentence_exit_2(*base, "--cmd", "true", "--cmd-metric", "tps=(")
    assert "is not a regular expression" in err
