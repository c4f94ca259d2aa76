"""`iosched advise` on real loop devices the tests make, with real fio, sysfs writes and signals: the answer and its
margin, bfq for an interactive reader under writes with the writers' cost, nothing changed before the plan is
accepted, and everything put back after Ctrl-C, SIGTERM and a lost session.

Kept short for CI (about three minutes in all): 1-3 s runs, a budget that holds the runs per variant down, two or
three variants. The interactive test is the long one (about two minutes)."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fio_support import no_fio_left, start_cli, wait_for_fio
from schema_support import valid

from iosched.core.present.sentences import level_text

from conftest import need_real, run_cli


def journal_empty(run_dir: Path) -> bool:
    path = run_dir / "journal.json"
    return not path.exists() or json.loads(path.read_text())["entries"] == []


def set_scheduler(loop, name: str) -> None:
    (loop.sysdir / "queue/scheduler").write_text(name)
    assert loop.current() == name


def test_a_saturating_random_read_names_the_fastest_with_its_margin(tmpfs_loop, private_journal, tmp_path):
    """Reads of a never-written sparse file are CPU-bound: bfq's cost per IO shows as fewer IOPS, so from bfq the
    advice is to change, to the faster scheduler, with its margin and how to keep it."""
    need_real("fio")
    loop = tmpfs_loop
    set_scheduler(loop, "bfq")
    save = tmp_path / "advice.json"
    r = run_cli("advise", loop.name, "--goal", "throughput", "--job", "randread-q16t2", "--runtime", "1",
                "--settle", "0.3", "--candidates", "none,mq-deadline", "--budget", "100", "--yes", "--save",
                str(save), "--markdown", str(tmp_path / "advice.md"), timeout=240)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[-1] == f"iosched: saved to {save}", r.stderr  # the file --save wrote, named
    doc = json.loads(save.read_text())
    valid("advice.schema.json", doc)
    (g,) = doc["advice"]
    assert g["outcome"] == "switch" and g["recommended"] in ("none", "mq-deadline"), (g, doc["tests"][0]["noise"])
    e = g["estimate"]
    assert e["ratio"] > 1.0 and e["ci_low"] > 1.0 and e["ratio"] >= 1 + g["margin"], g
    assert g["better"] == "higher" and g["effect"] == e["ratio"] - 1 and g["effect_low"] > 0, g
    first = r.stdout.splitlines()[0]
    assert first.startswith(f"{loop.name}: switch to {g['recommended']}: +"), first
    assert f"% IOPS ({level_text(g['effect_level'])} CI " in first, first
    assert f"iosched set {loop.name} {g['recommended']}" in r.stdout and 'ATTR{queue/scheduler}="' in r.stdout
    assert "[3/5 test]" in r.stderr and "[5/5 keep]" in r.stderr
    assert (tmp_path / "advice.md").read_text().startswith(f"### iosched advise {loop.name}")
    assert loop.current() == "bfq" and journal_empty(private_journal)
    no_fio_left(loop.path)
    # `report` decides again from the saved runs: the same answer, the same first line.
    rep = run_cli("report", str(save))
    assert rep.returncode == 0 and rep.stdout.splitlines()[0] == first


def test_an_interactive_reader_under_writes_is_told_bfq_with_the_writers_cost(loopdev, private_journal):
    """The catalog's interactive-under-writes as the foreground: bfq serves the reader's bursts first (its median
    about 7.7 ms under none, 0.04 ms under bfq), and what the writers pay is stated. bfq alone beside what the
    device has, six runs a variant at most: some of bfq's runs miss the reader's raise (two groups of runs), and
    with four a busy machine's noise left bfq's interval reaching no change (bench/advise_budget.py saw the same)."""
    need_real("fio")
    r = run_cli("advise", loopdev.name, "--goal", "interactive", "--job", "interactive-under-writes", "--runtime",
                "3", "--settle", "0.5", "--candidates", "bfq", "--budget", "80", "--yes", "--json", timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    (g,) = doc["advice"]
    assert g["metric"] == "fg:clat_p50_us" and g["outcome"] == "switch" and g["recommended"] == "bfq", g
    assert g["estimate"]["ratio"] < 0.5 and g["estimate"]["ci_high"] < 1.0
    assert g["better"] == "lower" and g["effect"] < -0.5 and g["effect_high"] < 0, g  # signed as the figure moves
    (cost,) = g["costs"]
    assert cost[0] == "bg:mb_s" and cost[1]["variant"] == "bfq" and cost[1]["ratio"] is not None
    assert doc["tradeoff"].startswith("switch to bfq for interactive use: foreground p50 −") and "background MB/s" \
        in doc["tradeoff"]
    (test,) = doc["tests"]
    assert 4 <= test["runs"] <= 6 and test["result"]["judgement"]["primary_metric"] == "fg:clat_p50_us"
    assert loopdev.current() == loopdev.initial_scheduler and journal_empty(private_journal)
    no_fio_left(loopdev.path)


@pytest.mark.plumbing
def test_nothing_changes_before_the_plan_is_accepted(loopdev, private_journal):
    """Without a terminal and without --yes the plan is printed and nothing runs (exit 2); --dry-run likewise,
    exit 0; a raw device holding data is refused until its name is typed."""
    need_real("fio")
    before = loopdev.scheduler_text()
    r = run_cli("advise", loopdev.name, "--goal", "throughput", "--runtime", "1")
    assert r.returncode == 2, r.stderr
    assert r.stdout.startswith(f"{loopdev.name}: none, set by the kernel's default")
    assert f"plan for {loopdev.name} (throughput): at most about" in r.stdout
    assert r.stderr.strip().splitlines()[-1] == ("iosched: the plan was not accepted: add --yes to run it without a "
                                                 "terminal (nothing was changed)")
    dry = run_cli("advise", loopdev.name, "--dry-run", "--json", "--runtime", "1")
    assert dry.returncode == 0, dry.stderr
    planned = json.loads(dry.stdout)
    assert planned["status"] == "planned" and [t["goal"] for t in planned["tests"]] == ["throughput", "latency",
                                                                                        "interactive"]
    subprocess.run(["mkfs.ext4", "-q", "-F", loopdev.path], check=True)
    refused = run_cli("advise", loopdev.name, "--goal", "interactive", "--runtime", "1", "--yes")
    assert refused.returncode == 2 and "type its name to confirm (--destroy-data" in refused.stderr
    # On a terminal: asked to type the name; anything else stops, nothing changed.
    out = _on_a_terminal(["advise", loopdev.name, "--goal", "interactive", "--runtime", "1"], [loopdev.name[:-1]])
    assert f"type {loopdev.name} to let the tests write over it" in out and "not confirmed" in out
    out = _on_a_terminal(["advise", loopdev.name, "--goal", "throughput", "--runtime", "1"], ["n"])
    assert "run this plan (at most about" in out and f"not accepted: nothing was changed on {loopdev.name}" in out
    assert loopdev.scheduler_text() == before and journal_empty(private_journal)
    no_fio_left(loopdev.path)


def _on_a_terminal(args: list[str], answers: list[str], timeout: float = 60) -> str:
    """Run iosched on a pseudo-terminal, answering each prompt ("> ") in turn; what it wrote."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: iosched on the terminal
        os.execvpe(sys.executable, [sys.executable, "-m", "iosched.cli", *args], os.environ)
    out, pending, deadline = b"", list(answers), time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child ended: the terminal is gone
                break
            if not chunk:
                break
            out += chunk
            if pending and out.rstrip().endswith(b">"):
                os.write(fd, pending.pop(0).encode() + b"\n")
    finally:
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 2, out.decode(errors="replace")
    return out.decode(errors="replace")


@pytest.mark.plumbing
def test_signals_mid_advice_put_everything_back(loopdev, tmp_path, private_journal):
    """Ctrl-C, SIGTERM and a lost SSH session (SIGHUP) while a candidate runs: fio ends, the scheduler is put back,
    the scratch files go, the finished runs are saved and no advice is given."""
    need_real("fio")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)):
        save = tmp_path / f"advice-{sig.name}.json"
        p = start_cli("advise", loopdev.name, "--goal", "throughput", "--job", "4k-randwrite", "--dir", str(scratch),
                      "--size", "32M", "--runtime", "1", "--settle", "0", "--candidates", "bfq", "--yes", "--save",
                      str(save))
        deadline = time.monotonic() + 60
        while loopdev.current() != "bfq" and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)  # the pilot runs at the current setting; then the candidate's turn
        wait_for_fio(str(scratch), p)
        assert loopdev.current() == "bfq"
        p.send_signal(sig)
        _, err = p.communicate(timeout=30)
        assert p.returncode == code, err
        assert "Traceback" not in err
        assert loopdev.current() == loopdev.initial_scheduler
        assert list(scratch.iterdir()) == [], (sig.name, [str(f) for f in scratch.rglob("*")], err)
        no_fio_left(str(scratch))
        assert journal_empty(private_journal)
        doc = json.loads(save.read_text())
        assert doc["status"] == "cancelled" and doc["advice"] == [] and doc["tests"][0]["pilot"]["runs"]
        rep = run_cli("report", str(save))
        assert rep.returncode == 0 and rep.stdout.startswith(f"{loopdev.name}: no advice: stopped before")
