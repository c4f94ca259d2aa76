"""`compare --hosts … --jobs GROUP`: a matrix on a fleet. A saved one is read whole and checked against the command
line before any host is reached, and goes on in the job it stopped in (its verdicts, Holm-corrected over every
pooled cell: tests/unit/statistics/test_fleet_verdict.py; its lines: tests/unit/present/test_fleet_report.py)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from saved_support import assert_one_sentence, call, mutate, saved
from test_fleet_resume import HOSTS, resume, setup  # a saved fleet's file, hosts and refusing ssh

# --- going on with a saved one -----------------------------------------------------------------------------


def stopped_in_the_second_job(kind: str = "fleet_matrix") -> dict:
    """The sample matrix (or 0.1.0's: ``kind`` "0.1.0/fleet_matrix"), stopped after the first of the second job's
    slots."""
    doc = saved(kind)
    for h in doc["fleets"][1]["hosts"]:
        if h["result"] is not None:
            h["status"], h["result"]["status"] = "cancelled", "cancelled"
            h["result"]["runs"] = h["result"]["runs"][:1]
    return doc


def ended(doc: dict) -> None:
    doc["fleets"][1] = saved("fleet_matrix")["fleets"][1]  # every slot run (one host lost: it stays lost)


@pytest.mark.parametrize(("change", "extra", "why"), [
    (ended, (), "has ended (every job it planned)"),
    (lambda d: None, ("--jobs", "4k-randread"), "--jobs 4k-randread differs from the saved fleet's 4k-randread,"),
    (lambda d: None, ("--repeat", "5"), "--repeat 5 differs"),
    (lambda d: None, ("--metric", "mb_s"), "--metric mb_s differs from the saved fleet's each job's own"),
    (lambda d: d.update(metric="no-such-figure"), (), "metric: "),
    (lambda d: None, ("--independent",), "--resume goes on with a fleet in lockstep"),
    (lambda d: [x.update(mode="independent") for x in (d, *d["fleets"])], (), "ran each host alone"),
    (lambda d: d["fleets"][1]["hosts"][0].update(host="db9"), (), "the fleet of 4k-read and the first differ"),
    (lambda d: d["fleets"][1].update(repeat=3), (), "the fleet of 4k-read ran another plan"),
    (lambda d: d["jobs"].pop(), (), "holds more fleets than jobs"),
    (lambda d: d["jobs"].append("4k-randread"), (), "its jobs are none, or one twice"),
    (lambda d: d.update(jobs=["4k-randread", "my-own"], jobs_spec="x"), (), "catalog jobs"),
])
def test_what_cannot_go_on_is_one_sentence_and_reaches_no_host(tmp_path, change, extra, why):
    doc = stopped_in_the_second_job()
    change(doc)
    for f, job in zip(doc["fleets"], doc["jobs"], strict=False):
        f["job"] = job if why == "catalog jobs" else f["job"]
    matrix, hosts, ssh = setup(tmp_path, doc)
    before = matrix.read_bytes()
    code, err = resume(tmp_path, matrix, hosts, ssh, *extra)
    assert code == 2 and why in err, err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "ssh-called").exists() and matrix.read_bytes() == before


@pytest.mark.parametrize("kind", ["fleet_matrix", "0.1.0/fleet_matrix"])
def test_it_goes_on_in_the_job_it_stopped_in_and_keeps_every_saved_run(tmp_path, kind):
    doc = stopped_in_the_second_job(kind)
    matrix, hosts, ssh = setup(tmp_path, doc)
    code, err = resume(tmp_path, matrix, hosts, ssh)
    assert code == 1 and "job 2/2: 4k-read" in err and "job 1/2" not in err, err
    after = json.loads(matrix.read_text())
    assert after["fleets"][0] == doc["fleets"][0] | {"pooled": after["fleets"][0]["pooled"]}
    assert [h["status"] for h in after["fleets"][1]["hosts"]] == ["failed"] * 3  # this ssh reaches none
    assert [len(h["result"]["runs"]) if h["result"] else 0 for h in after["fleets"][1]["hosts"]] == [1, 1, 0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutate(stopped_in_the_second_job()))
def test_a_hostile_saved_matrix_is_refused_before_any_host(tmp_path_factory, doc):
    tmp = tmp_path_factory.mktemp("resume")
    matrix, hosts, ssh = setup(tmp, doc)
    before = matrix.read_bytes()
    code, err = resume(tmp, matrix, hosts, ssh)
    if code == 2 and "is not a saved iosched fleet matrix" in err:
        assert_one_sentence(err, matrix, "fleet matrix")
    if code == 2:
        assert not (tmp / "ssh-called").exists() and matrix.read_bytes() == before
        assert len(err.strip().splitlines()) == 1
    else:  # it read as a matrix that can go on: its hosts were tried (each refused by this ssh), no run lost
        assert code == 1 and (tmp / "ssh-called").exists()
        after = json.loads(matrix.read_text())
        runs = [len(h["result"]["runs"]) for f in after["fleets"] for h in f["hosts"] if h["result"]]
        assert sum(runs) >= sum(len(h["result"]["runs"]) for f in doc["fleets"] for h in f["hosts"]
                                if h["result"])


def test_hosts_named_in_another_order_are_kept_in_the_saved_one(tmp_path):
    doc = stopped_in_the_second_job()
    matrix, hosts, ssh = setup(tmp_path, doc)
    hosts.write_text("".join(reversed(HOSTS.splitlines(keepends=True))))
    code, err = resume(tmp_path, matrix, hosts, ssh)
    assert code == 1, err
    after = json.loads(matrix.read_text())
    assert [h["host"] for h in after["fleets"][1]["hosts"]] == ["db1", "db2", "db3"]
    code, _out, err = call("report", str(matrix))  # the file still reads
    assert code == 0, err


def test_a_job_no_host_finished_ends_the_matrix_and_resume_goes_on_with_it(tmp_path):
    _matrix, hosts, ssh = setup(tmp_path, {})
    saved_to = tmp_path / "new.json"
    code, _out, err = call("compare", "--hosts", str(hosts), "sdb", "--schedulers", "none,bfq", "--jobs",
                           "4k-randread,4k-read", "--ssh", str(ssh), "--save", str(saved_to))
    assert code == 1 and "no host finished 4k-randread, so the jobs after it were not run" in err, err
    doc = json.loads(saved_to.read_text())
    assert [f["job"] for f in doc["fleets"]] == ["4k-randread"]
    assert [h["status"] for h in doc["fleets"][0]["hosts"]] == ["failed"] * 3
    code, err = resume(tmp_path, saved_to, hosts, ssh)
    assert code == 1 and "job 1/2: 4k-randread" in err, err
    code, err = resume(tmp_path, saved_to, hosts, ssh, "--job", "4k-read")
    assert code == 2 and "goes on with its own jobs: leave out --job" in err, err


def test_a_saved_fleet_given_to_a_one_machine_resume_names_hosts(tmp_path):
    matrix, _hosts, _ssh = setup(tmp_path, stopped_in_the_second_job())
    code, _out, err = call("compare", "sdb", "--resume", str(matrix))
    assert code == 2 and "is a saved fleet compare: go on with it with --hosts" in err, err
