"""Matrix experiments on real loop devices: every cell from fio's own figures, Ctrl-C and --resume, refusals."""

import json
import signal
import time

import pytest
from fio_support import no_fio_left, start_cli, wait_for_fio

from conftest import need_real, run_cli


def fio_iops(run: dict) -> float:
    """IOPS as fio itself reported them for one run (all jobs, both directions)."""
    return sum(j["read"]["iops"] + j["write"]["iops"] for j in run["fio"]["jobs"])


@pytest.mark.plumbing
def test_two_variants_by_five_workloads(loopdev, private_journal, tmp_path):
    need_real("fio")
    save = tmp_path / "matrix.json"
    r = run_cli("compare", loopdev.name, "--schedulers", "none,mq-deadline", "--jobs", "4k-matrix", "--runtime", "1",
                "--size", "16M", "--repeat", "2", "--settle", "0", "--json", "--save", str(save), timeout=240)
    assert r.returncode == 0, r.stderr
    assert "20 runs; estimated about" in r.stderr
    doc = json.loads(r.stdout)
    j = doc["judgement"]
    assert len(j["cells"]) == 10
    assert {c["workload"] for c in j["cells"]} == {"4k-read", "4k-write", "4k-randread", "4k-randwrite", "4k-rw"}
    assert {c["variant"] for c in j["cells"]} == {"none", "mq-deadline"} and j["comparisons"] <= 5
    for c in j["cells"]:
        runs = [x for x in doc["runs"] if x["workload"] == c["workload"] and x["variant"] == c["variant"]]
        assert len(runs) == 2 and all(x["valid"] and x["config"]["scheduler"] == c["variant"] for x in runs)
        assert c["mean"] == pytest.approx(sum(fio_iops(x) for x in runs) / len(runs), rel=0.01)
    # fio ran with json+: the latency histogram is there for the charts.
    assert doc["runs"][0]["fio"]["jobs"][0]["read"]["clat_ns"]["bins"] or \
        doc["runs"][0]["fio"]["jobs"][0]["write"]["clat_ns"]["bins"]
    assert loopdev.current() == loopdev.initial_scheduler
    assert json.loads((private_journal / "journal.json").read_text())["entries"] == []
    no_fio_left(loopdev.path)
    # The saved file re-judges to the same table, as text, CSV, and with charts into a pipe (plain characters).
    saved = json.loads(save.read_text())
    assert saved["status"] == "final" and len(saved["runs"]) == 20
    text = run_cli("report", str(save), "--plot")
    assert text.returncode == 0, text.stderr
    assert "mq-deadline: " in text.stdout and "whiskers the 95% CI" in text.stdout and "\x1b[" not in text.stdout
    assert "completion latency CDF" in text.stdout and "CPU µs per IO" in text.stdout
    rows = run_cli("report", str(save), "--csv").stdout.splitlines()
    assert rows[0].startswith("workload,variant,baseline,metric") and len(rows) == 11
    html = tmp_path / "charts.html"
    assert run_cli("report", str(save), "--plot-file", str(html)).returncode == 0
    assert html.read_text().startswith("<!DOCTYPE html>")


# Serial: beside another test's load a Ctrl-C can land inside a switch's write, and the journal then keeps its
# entries until the writer is seen to end, which this test's journal check does not wait for.
def test_ctrl_c_then_resume_finishes_the_same_matrix(loopdev, private_journal, tmp_path):
    need_real("fio")
    save = tmp_path / "matrix.json"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    args = ("compare", loopdev.name, "--schedulers", "none,bfq", "--jobs", "4k-matrix", "--runtime", "1",
            "--size", "16M", "--repeat", "1", "--settle", "0", "--dir", str(scratch))
    p = start_cli(*args, "--save", str(save))
    wait_for_fio(str(scratch), p)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if len(json.loads(save.read_text())["runs"]) >= 3:
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert f"--resume {save}" in err
    before = json.loads(save.read_text())
    assert before["status"] == "cancelled" and 3 <= len(before["runs"]) < 10
    assert loopdev.current() == loopdev.initial_scheduler
    assert list(scratch.iterdir()) == []
    no_fio_left(str(scratch))
    assert json.loads((private_journal / "journal.json").read_text())["entries"] == []

    r = run_cli("compare", loopdev.name, "--resume", str(save), "--dir", str(scratch), "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"{len(before['runs'])} of 10 runs done" in r.stderr
    after = json.loads(r.stdout)
    assert after["status"] == "final" and sorted(x["slot"] for x in after["runs"]) == list(range(10))
    # Finished runs were kept as they were, not redone; the break is history, not an open end.
    assert after["runs"][: len(before["runs"])] == before["runs"]
    assert not any("--resume continues" in n for n in after["notes"])
    assert any(n.startswith("interrupted (") and n.endswith(", then resumed") for n in after["notes"]), after["notes"]
    cells = {(c["workload"], c["variant"]) for c in after["judgement"]["cells"] if c["n"] == 1}
    assert len(cells) == 10
    assert loopdev.current() == loopdev.initial_scheduler
    assert list(scratch.iterdir()) == []
    no_fio_left(str(scratch))
    # Resuming a finished matrix is refused.
    again = run_cli("compare", loopdev.name, "--resume", str(save))
    assert again.returncode == 2 and "finished matrix" in again.stderr


def _one_sentence(r) -> None:
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.startswith("iosched: ") and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stdout == ""


@pytest.mark.plumbing
def test_bad_matrices_change_nothing(loopdev, private_journal, tmp_path):
    need_real("fio")
    # A saved, unfinished matrix to resume from, written by the code under test (0 runs so it stays resumable).
    save = tmp_path / "m.json"
    p = start_cli("compare", loopdev.name, "--schedulers", "none,bfq", "--jobs", "4k-read,4k-write",
                  "--runtime", "30", "--size", "16M", "--repeat", "1", "--settle", "0", "--save", str(save))
    try:
        wait_for_fio(loopdev.path, p)
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=30)
    finally:
        p.kill()  # a no-op once it ended; else it would go on switching the next test's loop0
    assert save.exists() and json.loads(save.read_text())["status"] == "cancelled"
    saved = save.read_bytes()
    other_dev = tmp_path / "other.json"
    doc = json.loads(saved)
    doc["device"]["size_bytes"] += 4096
    other_dev.write_text(json.dumps(doc))
    base = ("compare", loopdev.name)
    cases = [
        (*base, "--schedulers", "none,bfq", "--jobs", "4k-matrx"),
        (*base, "--schedulers", "none,bfq", "--jobs", ","),
        (*base, "--schedulers", "none,bfq", "--jobs", "4k-matrix", "--max-time", "10"),
        (*base, "--schedulers", "none,bfq", "--jobs", "4k-matrix", "--runtime", "5", "--max-time", "60"),
        (*base, "--resume", str(other_dev)),
        (*base, "--resume", str(save), "--jobs", "4k-read,4k-randread", "--runtime", "30", "--size", "16M"),
        (*base, "--resume", str(save), "--schedulers", "none,kyber"),
        (*base, "--resume", str(tmp_path / "nope.json")),
        (*base, "--schedulers", "none,bfq", "--jobs", "4k-matrix", "--cmd", "true"),
        (*base, "--schedulers", "none,bfq", "--jobs", "4k-matrix", "--plot-file", str(tmp_path / "x.png")),
    ]
    for args in cases:
        r = run_cli(*args)
        _one_sentence(r)
        assert loopdev.current() == loopdev.initial_scheduler
        assert save.read_bytes() == saved
    assert not (tmp_path / "x.png").exists()
    assert json.loads((private_journal / "journal.json").read_text())["entries"] == []
    no_fio_left(loopdev.path)


def test_until_verdict_matrix_stops_the_cells_that_decided(loopdev, private_journal, tmp_path):
    """bfq's cost at queue depth 16 decides at an early look and the matrix stops there: fewer runs than its
    maximum, the decided cell none after its look, and the saved file re-judges to the same. (A decided cell
    beside an undecided one, its baseline going on: tests/unit/statistics/test_matrix_sequential.py.)"""
    need_real("fio")
    save = tmp_path / "seq.json"
    r = run_cli("compare", loopdev.name, "--schedulers", "none,bfq", "--jobs", "randread-q16t2",
                "--runtime", "1", "--until-verdict", "--max-runs", "8", "--settle", "0.2", "--save", str(save),
                timeout=240)
    assert r.returncode == 0, r.stderr
    assert "until a verdict: looks at 4, 6, 8 runs per cell, at most 16 runs" in r.stderr
    assert "look at 4 runs per cell:" in r.stderr
    doc = json.loads(save.read_text())
    seq = doc["sequential"]
    assert seq["looks"] == [4, 6, 8] and len(seq["levels"]) == 1 and seq["levels"][0] < 0.05
    (bfq,) = [c for c in doc["judgement"]["cells"] if c["variant"] == "bfq"]
    assert bfq["significant"] and bfq["decided_at"] in (4, 6, 8) and bfq["ratio"] < 1, bfq
    per_round = 2
    assert all(x["slot"] // per_round < bfq["decided_at"] for x in doc["runs"])  # nothing ran after the look
    assert len(doc["runs"]) == 2 * bfq["decided_at"] and doc["status"] == "final"
    assert f"look at {bfq['decided_at']} runs per cell: 1 of 1 cells decided (now: randread-q16t2 · bfq); " \
           "stopping" in r.stderr
    assert doc["judgement"]["correction"] == "sequential holm"
    assert f"decided at {bfq['decided_at']} runs" in bfq["verdict"] and "decided (runs per cell):" in r.stdout
    assert loopdev.current() == loopdev.initial_scheduler
    again = run_cli("report", str(save), "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["judgement"]["cells"] == doc["judgement"]["cells"]
    refused = run_cli("compare", loopdev.name, "--resume", str(save))
    assert refused.returncode == 2 and "finished matrix" in refused.stderr


@pytest.mark.plumbing
def test_a_study_runs_a_fio_job_and_a_command_as_one_matrix(loopdev, private_journal, tmp_path):
    need_real("fio")
    study = tmp_path / "study.toml"
    study.write_text('schedulers = "none,bfq"\nrepeat = 2\n\n'
                     '[[workload]]\njob = "4k-randread"\n\n'
                     '[[workload]]\nname = "urandom"\n'
                     'cmd = "echo value $(od -An -N2 -tu2 /dev/urandom)"\n'
                     'cmd_metric = ["value=value +([0-9]+):higher"]\n')
    save = tmp_path / "study.json"
    r = run_cli("compare", loopdev.name, "--study", str(study), "--runtime", "0.5", "--size", "16M",
                "--settle", "0", "--save", str(save), timeout=180)
    assert r.returncode == 0, r.stderr
    assert "matrix of 2 workload(s) x 2 variants x 2 repeat(s) = 8 runs" in r.stderr
    doc = json.loads(save.read_text())
    assert [w["name"] for w in doc["workloads"]] == ["4k-randread", "urandom"]
    cmd_runs = [x for x in doc["runs"] if x["workload"] == "urandom"]
    assert len(cmd_runs) == 4 and all(x["valid"] and 0 <= x["metrics"]["value"] < 65536 for x in cmd_runs)
    assert all("wall_s" in x["metrics"] for x in cmd_runs)
    by = {c["workload"]: c["metric"] for c in doc["judgement"]["cells"]}
    assert by == {"4k-randread": "iops", "urandom": "value"}
    assert "urandom [value]" in r.stdout and "4k-randread [iops]" in r.stdout
    assert loopdev.current() == loopdev.initial_scheduler
    assert run_cli("report", str(save)).returncode == 0
    # Bad study files: one sentence, exit 2, nothing run.
    study.write_text('[[workload]]\nname = "x"\ncmd = "touch ' + str(tmp_path / "ran") + '"\nenv = "A=1"\n')
    bad = run_cli("compare", loopdev.name, "--study", str(study), "--schedulers", "none,bfq")
    assert bad.returncode == 2 and "does not take: 'env'" in bad.stderr and not (tmp_path / "ran").exists()
