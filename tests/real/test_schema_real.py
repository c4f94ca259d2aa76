"""Real output validates against the committed JSON Schema: compare --json and --save, a command, live
alternation (in test_experiment_real), a saved matrix, every line of a recording, the journal; fleets and fleet
matrices, their --json, saved files and reports, in test_fleet_real."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from schema_support import problems, valid

from conftest import attach_loop, detach_loop, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


@pytest.mark.real
def test_compare_json_and_its_save_validate(loopdev, tmp_path: Path) -> None:
    save = tmp_path / "exp.json"
    r = run_cli("compare", loopdev.name, "--schedulers", "none,mq-deadline:read_expire=100", "--job",
                "randread-q16t2", "--runtime", "0.5", "--repeat", "2", "--settle", "0", "--size", "16M",
                "--json", "--save", str(save), timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["comparisons"] and out["judgement"]["summaries"] and out["runs"][0]["fio"]
    valid("experiment.schema.json", out)
    valid("experiment.schema.json", json.loads(save.read_text()))
    rep = run_cli("report", str(save), "--json")
    assert rep.returncode == 0, rep.stderr
    valid("experiment.schema.json", json.loads(rep.stdout))


@pytest.mark.real
def test_compare_of_a_command_validates(loopdev) -> None:
    r = run_cli("compare", loopdev.name, "--schedulers", "none,mq-deadline", "--cmd", "true", "--repeat", "2",
                "--settle", "0", "--json", timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["workload"]["cmd"] == "true" and out["workload"]["job"] is None
    valid("experiment.schema.json", out)


@pytest.mark.real
def test_saved_matrix_and_its_json_validate(loopdev, tmp_path: Path) -> None:
    save = tmp_path / "matrix.json"
    r = run_cli("compare", loopdev.name, "--schedulers", "none,mq-deadline", "--jobs", "4k-read,4k-randread",
                "--runtime", "0.5", "--repeat", "2", "--settle", "0", "--size", "16M", "--json", "--save", str(save),
                timeout=180)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["kind"] == "matrix" and len(out["runs"]) == 8 and out["judgement"]["cells"]
    valid("matrix.schema.json", out)
    valid("matrix.schema.json", json.loads(save.read_text()))
    rep = run_cli("report", str(save), "--json")
    assert rep.returncode == 0, rep.stderr
    valid("matrix.schema.json", json.loads(rep.stdout))


@pytest.mark.real
def test_recording_lines_validate(loopdev, tmp_path: Path) -> None:
    """Every kind of line: the header, samples, a setting changed while recording, a device attached."""
    rec = tmp_path / "rec.jsonl"
    child = subprocess.Popen([sys.executable, "-m", "iosched.cli", "record", str(rec), "-i", "0.2",
                              "--duration", "5"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    attached = None
    try:
        for _ in range(100):  # the header is written before the first sample
            if rec.exists() and rec.stat().st_size:
                break
            time.sleep(0.05)
        assert run_cli("set", loopdev.name, "mq-deadline").returncode == 0
        (tmp_path / "second").mkdir()
        attached = attach_loop(tmp_path / "second", "64M")
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if attached is not None:
            detach_loop(attached)
    assert child.returncode == 0, err
    lines = [json.loads(line) for line in rec.read_text().splitlines()]
    assert {line["t"] for line in lines} == {"header", "s", "e", "dev"}
    for n, line in enumerate(lines, 1):
        assert not problems("recording-line.schema.json", line), (n, problems("recording-line.schema.json", line))
    assert run_cli("restore").returncode == 0


@pytest.mark.real
def test_journal_validates(loopdev, private_journal: Path) -> None:
    assert run_cli("set", loopdev.name, "mq-deadline").returncode == 0
    r = run_cli("tune", loopdev.name, "read_expire=100")
    assert r.returncode == 0, r.stderr
    journal = json.loads((private_journal / "journal.json").read_text())
    assert {"queue/scheduler", "queue/iosched/read_expire"} <= {e["attr"] for e in journal["entries"]}
    valid("journal.schema.json", journal)
    assert run_cli("restore").returncode == 0
