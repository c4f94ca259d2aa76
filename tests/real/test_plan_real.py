"""`compare --plan`: a real pilot on a loop device, the plan printed, the device put back, nothing saved."""

from __future__ import annotations

import json

import pytest

from conftest import Loop, need_real, one_sentence_exit_2, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def test_the_pilot_runs_twice_per_variant_and_plans_from_its_noise(loopdev: Loop, private_journal):
    need_real("fio")
    r = run_cli("compare", loopdev.name, "--schedulers", "none,mq-deadline", "--job", "randread-q16t2", "--runtime",
                "1", "--settle", "0", "--plan", "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    p = json.loads(r.stdout)
    assert p["metric"] == "iops" and p["variants"] == 2 and p["df"] == 2 and p["noise_sd_log"] > 0
    assert [row["difference"] for row in p["rows"]] == [0.1, 0.2, 0.3]
    assert 1 < p["seconds_per_run"] < 10
    assert "pilot: 2 runs per variant of randread-q16t2" in r.stderr
    assert loopdev.current() == loopdev.initial_scheduler  # (the words of the plan: tests/unit/…/test_planning.py)
    err = one_sentence_exit_2("compare", loopdev.name, "--schedulers", "none,bfq", "--job", "randread-q16t2",
                              "--plan", "--repeat", "5")
    assert "--plan runs its own short pilot of a compare: --repeat does not apply" in err
