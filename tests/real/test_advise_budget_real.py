"""`iosched advise --budget` on loop devices the tests make: a short command planned from one timed run is accepted
under a small budget and ends within it (the elapsed time the advice records, not a wall-clock race); --observe
that cannot fit is refused before anything is captured; --dry-run --json over budget is JSON; a terminal is asked
about on stdin, so `advise … | cat` still asks, and a pipe on stdin still refuses without --yes.

Short for CI: about half a minute in all, most of it the command's runs."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

from schema_support import valid

from conftest import drawn_sleep, need_real, run_cli


def test_a_short_command_under_a_small_budget_runs_within_it(loopdev, private_journal):
    need_real("setpriv")
    r = run_cli("advise", loopdev.name, "--cmd", "sleep 0.3", "--goal", "throughput", "--candidates", "mq-deadline",
                "--settle", "0", "--budget", "40", "--yes", "--json", timeout=180)
    assert r.returncode in (0, 1), r.stderr  # 1: no answer the runs could decide (never a refusal, exit 2)
    doc = json.loads(r.stdout)
    valid("advice.schema.json", doc)
    assert any("timed at 0.3" in n for n in doc["plan"]["notes"]), doc["plan"]["notes"]
    assert doc["plan"]["smallest_s"] <= 40 and doc["plan"]["seconds"] + doc["budget"]["before_s"] <= 40
    b = doc["budget"]
    assert b["budget_s"] == 40 and b["elapsed_s"] <= b["budget_s"], b
    assert sum(len(t["result"]["runs"]) for t in doc["tests"] if t["result"]) >= 4


def test_observe_that_cannot_fit_is_refused_before_any_capture(loopdev, private_journal):
    r = run_cli("advise", loopdev.name, "--observe", "60s", "--goal", "throughput", "--budget", "30", "--yes",
                timeout=60)
    assert r.returncode == 2, r.stderr
    assert "--observe 60s: the plan needs at least" in r.stderr and "Traceback" not in r.stderr
    captures = private_journal.parent / "results" / "captures"
    assert not captures.exists() or not any(captures.iterdir())
    assert "capturing" not in r.stderr


def test_dry_run_json_over_budget_is_json(loopdev, private_journal):
    before = loopdev.current()
    r = run_cli("advise", loopdev.name, "--goal", "all", "--budget", "60", "--dry-run", "--json", timeout=60)
    assert r.returncode == 2 and "the plan needs at least" in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    valid("advice.schema.json", doc)
    assert doc["status"] == "planned" and doc["plan"]["seconds"] > doc["plan"]["budget_s"] == 60
    assert doc["plan"]["smallest_s"] > 60
    assert loopdev.current() == before


def _advise_with_stdin(loop: str, stdin: int, answer: bytes | None = None,
                       master: int | None = None) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-m", "iosched.cli", "advise", loop, "--goal", "throughput", "--budget", "3m"]
    with subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as p:
        if master is not None and answer is not None:
            os.write(master, answer)
        out, err = p.communicate(timeout=60)
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def test_a_terminal_is_asked_about_on_stdin_whatever_stdout_is(loopdev, private_journal):
    before = loopdev.current()
    master, slave = pty.openpty()
    try:
        asked = _advise_with_stdin(loopdev.name, slave, b"n\n", master)
    finally:
        os.close(slave)
        os.close(master)
    # stdout and stderr are pipes (`advise … | cat`), stdin a terminal: it asks, and "n" stops it.
    assert asked.returncode == 2 and b"run this plan" in asked.stderr, asked.stderr
    assert b"not accepted: nothing was changed" in asked.stderr
    assert asked.stdout == b"", asked.stdout  # the question's prompt too is on stderr: stdout keeps the answer alone
    piped = _advise_with_stdin(loopdev.name, subprocess.DEVNULL)
    assert piped.returncode == 2 and b"add --yes" in piped.stderr, piped.stderr
    assert b"plan for " + loopdev.name.encode() in piped.stdout  # the plan printed where a script reads it
    assert loopdev.current() == before


def test_runs_longer_than_timed_stop_at_the_budget_and_answer_in_words(loopdev, private_journal, tmp_path):
    """The command is timed at 0.3 s, then each run sleeps 2-3 s (seeded by a counter the runs share): the plan fits
    the budget, the runs do not, and at the budget advise answers with what they show: cannot tell, the runs that
    would decide and about the budget that would run them, exit 1."""
    need_real("setpriv")
    cmd = drawn_sleep(tmp_path, "0.3 if n == 0 else r.uniform(2, 3)")
    save = tmp_path / "advice.json"
    r = run_cli("advise", loopdev.name, "--cmd", cmd, "--goal", "throughput", "--candidates", "mq-deadline",
                "--settle", "0", "--budget", "25", "--yes", "--json", "--save", str(save), timeout=120)
    assert r.returncode == 1, (r.returncode, r.stderr)
    doc = json.loads(r.stdout)
    valid("advice.schema.json", doc)
    b = doc["budget"]
    assert b["stopped"] and b["elapsed_s"] <= b["budget_s"] == 25, b
    (g,) = doc["advice"]
    assert g["outcome"] == "cannot-tell" and "budget" in g["reasons"] and "too-wide" not in g["reasons"], g
    assert g["runs_needed"] is not None and g["budget_needed_s"] > 25, g
    assert doc["keep"] == [] and loopdev.current() == loopdev.initial_scheduler
    rep = run_cli("report", str(save), timeout=60)
    assert rep.returncode == 0, rep.stderr
    assert "where the budget stopped the tests" in rep.stdout and "runs a variant would decide" in rep.stdout
    assert "a budget of about " in rep.stdout and "stopped at the budget" in rep.stdout, rep.stdout
