"""`iosched advise`'s three outcomes on real loop devices the tests make: a command that takes the same time under
every scheduler is kept, shown equal, with its margin (exit 0); one whose time is random cannot tell, names the runs
that would decide, and exits 1. A machine the busy watch finds loaded (other helpers, CI neighbours) never gives a
keep: there the answer is cannot tell, naming what it saw, and that is checked instead.

Short for CI (each well under a minute): `sleep`-like commands, two variants, one look."""

from __future__ import annotations

import json
import re

from conftest import drawn_sleep, need_real, run_cli


def test_a_command_no_scheduler_changes_is_kept_shown_equal(loopdev, private_journal, tmp_path):
    need_real("fio")
    save = tmp_path / "advice.json"
    r = run_cli("advise", loopdev.name, "--goal", "throughput", "--cmd", "sleep 0.3", "--candidates",
                "mq-deadline", "--settle", "0.2", "--budget", "180", "--yes", "--save", str(save), timeout=240)
    doc = json.loads(save.read_text())
    (g,) = doc["advice"]
    first = r.stdout.splitlines()[0]
    assert re.search(r"run \d+/\d+ .*  wall \d", r.stderr) and "p99" not in r.stderr, r.stderr  # no fio figure
    assert g["margin"] == 0.1 and g["better"] == "lower" and g["effect_level"] == 0.9, g
    if g["busy"]:  # another load beside the tests: never a keep
        assert r.returncode == 1 and g["outcome"] == "cannot-tell" and "busy" in g["reasons"], r.stdout
        assert first.startswith(f"{loopdev.name}: cannot tell: ") and g["busy"][0] in r.stdout, r.stdout
        return
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert g["outcome"] == "keep-equal" and g["recommended"] is None and g["reasons"] == [], g
    assert -0.1 < g["effect_low"] < g["effect"] < g["effect_high"] < 0.1, g
    assert first.startswith(f"{loopdev.name}: keep none — shown equal: no candidate is more than 10% better (90% "
                            "intervals within "), first
    assert "nothing to change" in r.stdout and doc["keep"] == []
    assert loopdev.current() == loopdev.initial_scheduler


def test_a_command_whose_time_is_random_cannot_tell_and_names_the_runs_needed(loopdev, private_journal, tmp_path):
    """Each run sleeps 0.1-0.9 s, seeded by a counter the runs share: a spread no small budget can settle."""
    need_real("fio")
    cmd = drawn_sleep(tmp_path, "r.uniform(0.1, 0.9)")
    rules = tmp_path / "60-iosched.rules"
    r = run_cli("advise", loopdev.name, "--goal", "throughput", "--cmd", cmd, "--candidates", "mq-deadline",
                "--settle", "0.2", "--budget", "180", "--yes", "--json", "--persist", "--rules-file", str(rules),
                timeout=240)
    assert r.returncode == 1, (r.stdout, r.stderr)
    # --persist has nothing to write, and does not call that keeping what the device has.
    assert "--persist: nothing to persist: the tests could not decide" in r.stderr, r.stderr
    assert "keep what you have" not in r.stderr and not rules.exists()
    doc = json.loads(r.stdout)
    (g,) = doc["advice"]
    assert g["outcome"] == "cannot-tell" and g["recommended"] is None and "too-wide" in g["reasons"], g
    assert g["runs_needed"] is not None and g["runs_needed"] > g["runs_per_variant"], g
    assert g["effect_low"] < -0.1 or g["effect_high"] > 0.1, g  # its 90% interval reaches past the margin
    assert doc["keep"] == [] and loopdev.current() == loopdev.initial_scheduler
    saved = tmp_path / "advice.json"
    saved.write_text(r.stdout)
    rep = run_cli("report", str(saved))  # decided again from the saved runs: the same outcome, in words
    assert rep.returncode == 0, rep.stderr
    first = rep.stdout.splitlines()[0]
    assert first.startswith(f"{loopdev.name}: cannot tell: ") and "runs a variant would decide" in rep.stdout, first
