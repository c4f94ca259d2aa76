"""Study files (`compare --study FILE`): what they may say, hostile ones refused in one sentence, and a study's
commands read back from a saved matrix only to be compared, never to be run from it."""

import json
from dataclasses import dataclass, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matrix_support import plan_document

from iosched.core.base.encode import encode
from iosched.core.base.errors import BadInput
from iosched.core.documents.params import parse_variants
from iosched.core.experiment.matrix import MatrixPlan, check_resumable, job_spec, plan_from_doc
from iosched.core.experiment.study import CmdJob, parse_study, read_study
from iosched.core.load.jobs import Job

from conftest import one_sentence_exit_2

GOOD = """
schedulers = "mq-deadline,bfq"
repeat = 4

[[workload]]
job = "seq-read"

[[workload]]
name = "gzip"
cmd = "gzip -c /tmp/x > /dev/null"

[[workload]]
name = "pgbench"
cmd = "pgbench -T 5 bench"
cmd_metric = ["tps=^tps = ([0-9.]+):higher", "latency=latency average = ([0-9.]+) ms:lower"]
"""


def test_a_study_lists_jobs_and_commands():
    s = parse_study(GOOD)
    assert s.schedulers == "mq-deadline,bfq" and s.repeat == 4
    names = [w.name for w in s.workloads]
    assert names[-2:] == ["gzip", "pgbench"] and all(isinstance(w, Job) for w in s.workloads[:-2])
    gzip, pg = s.workloads[-2:]
    assert isinstance(gzip, CmdJob) and gzip.primary == "wall_s" and not gzip.writes
    assert isinstance(pg, CmdJob) and pg.primary == "tps" and [m.better for m in pg.cmd_metrics] == ["higher", "lower"]


@pytest.mark.parametrize(("text", "words"), [
    ("", "lists no workload"),
    ("[[workload]]\ncmd = 'x'\n", "needs a name"),
    ("[[workload]]\njob = 'seq-read'\ncmd = 'x'\n", "exactly one of job"),
    ("[[workload]]\nname = 'a'\n", "exactly one of job"),
    ("[[workload]]\njob = 'no-such-job'\n", "no job or group named"),
    ("[[workload]]\njob = 'seq-read'\nname = 'x'\n", "takes no name"),
    ("[[workload]]\nname = 'a b'\ncmd = 'true'\n", "is not a name"),
    ("[[workload]]\nname = 'a'\ncmd = 'true'\ncmd_metric = ['iops=([0-9]+)']\n", "iosched measures"),
    ("[[workload]]\nname = 'a'\ncmd = 'true'\n[[workload]]\nname = 'a'\ncmd = 'false'\n", "twice"),
    ("repeat = 0\n[[workload]]\nname = 'a'\ncmd = 'true'\n", "repeat"),
    ("repeat = true\n[[workload]]\nname = 'a'\ncmd = 'true'\n", "whole number"),
    ("include = '/etc/passwd'\n[[workload]]\nname = 'a'\ncmd = 'true'\n", "does not take: 'include'"),
    ("[[workload]]\nname = 'a'\ncmd = 'true'\nenv = 'X=1'\n", "does not take: 'env'"),
    ("workload = 3\n", "lists no workload"),
    ("[[workload]\n", "is not a study file"),
])
def test_bad_studies_are_one_sentence(text, words):
    with pytest.raises(BadInput) as e:
        parse_study(text, "s.toml")
    assert words in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("deep", [
    "repeat = " + "[" * 20_000 + "]" * 20_000,  # 40 kB of arrays 20,000 deep
    "repeat = " + "{a = " * 8_000 + "1" + "}" * 8_000,  # inline tables
    "[[workload]]\nname = 'a'\ncmd = 'true'\ncmd_metric = " + "[" * 9 + "]" * 9,
])
def test_a_study_nested_deeper_than_a_study_needs_is_one_sentence(deep):
    with pytest.raises(BadInput) as e:
        parse_study(deep, "s.toml")
    assert str(e.value) == "s.toml is not a study file: its arrays or tables nest more than 8 deep"


def test_the_deepest_study_a_user_writes_reads():
    text = "workload = [{name = 'a', cmd = 'true', cmd_metric = ['x=x=([0-9]+)']}]\n"
    assert [w.name for w in parse_study(text).workloads] == ["a"]


def test_compare_refuses_a_deep_study_before_anything(tree, tmp_path):
    d = tree.add_disk("sda", "8:0")
    study = tmp_path / "deep.toml"
    study.write_text("repeat = " + "[" * 20_000 + "]" * 20_000)
    err = one_sentence_exit_2("--root", str(tree.root), "compare", "sda", "--study", str(study))
    assert "its arrays or tables nest more than 8 deep" in err
    assert (d / "queue/scheduler").read_text() == "[none] mq-deadline kyber bfq\n"


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_random_text_is_a_study_or_one_sentence(text):
    try:
        parse_study(text, "s.toml")
    except BadInput as e:
        assert str(e) and "Traceback" not in str(e)


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_in_a_file(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("study") / "s.toml"
    path.write_bytes(data)
    try:
        read_study(path)
    except BadInput as e:
        assert str(e)


def test_a_study_file_that_is_no_regular_file_is_refused(tmp_path):
    with pytest.raises(BadInput):
        read_study("/dev/zero")
    with pytest.raises(BadInput):
        read_study(tmp_path / "missing.toml")


def study_plan() -> MatrixPlan:
    s = parse_study(GOOD)
    return MatrixPlan(parse_variants("mq-deadline,bfq"), list(s.workloads), 2)


def test_a_saved_study_reads_back_its_commands_checked_again():
    plan = study_plan()
    doc = json.loads(json.dumps(encode(plan_document(plan))))
    again = plan_from_doc(doc)
    assert [job_spec(j) for j in again.jobs] == [job_spec(j) for j in plan.jobs]
    assert again.fio_jobs == [j for j in again.jobs if isinstance(j, Job)]
    assert doc["primary_metrics"]["pgbench"] == "tps" and doc["primary_metrics"]["gzip"] == "wall_s"
    # A command altered in the file to something the study parser refuses: the file is not a matrix.
    doc["jobs"][-1]["cmd_metrics"][0]["name"] = "iops"
    with pytest.raises(BadInput, match="not a saved iosched matrix"):
        plan_from_doc(doc)


def test_a_study_is_resumed_only_with_its_file_given_again(monkeypatch):
    plan = study_plan()
    doc = replace(plan_document(plan, "loop9"), status="cancelled")
    from iosched.core.experiment import matrix as m

    @dataclass
    class Dev:
        name: str = "loop9"

    monkeypatch.setattr(m, "read_device", lambda name, root: Dev())
    with pytest.raises(BadInput, match="resume it with --study"):
        check_resumable(doc, "loop9", None, None, None)
    assert check_resumable(doc, "loop9", None, list(plan.jobs), None).jobs[-1].cmd == "pgbench -T 5 bench"
