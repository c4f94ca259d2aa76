"""A command timed once before the plan: its wall time, a failure refused (each run would be invalid), a run past
the bound ended there and refused. The command's own running is core/experiment/commands.py's (tests/real)."""

from __future__ import annotations

import pytest

from iosched.core.advice import cmd_timing
from iosched.core.base.errors import BadInput
from iosched.core.experiment.control import Cancelled


def test_a_run_gives_its_wall_time(monkeypatch):
    monkeypatch.setattr(cmd_timing, "run_cmd", lambda cmd, ctl, drift, root: ({"wall_s": 0.31}, "", None))
    assert cmd_timing.time_command("sleep 0.3", 10.0) == 0.31


def test_a_failed_run_is_refused(monkeypatch):
    monkeypatch.setattr(cmd_timing, "run_cmd",
                        lambda cmd, ctl, drift, root: ({"wall_s": 0.1}, "", "the command exited with status 3"))
    with pytest.raises(BadInput, match="failed when timed before the plan: the command exited with status 3"):
        cmd_timing.time_command("exit 3", 10.0)


def test_a_run_past_the_bound_is_ended_and_refused(monkeypatch):
    def waits(cmd, ctl, drift, root):
        assert ctl.cancelled.wait(30)  # the bound's timer ends it
        raise Cancelled("cancelled")

    monkeypatch.setattr(cmd_timing, "run_cmd", waits)
    with pytest.raises(BadInput, match="lasted longer than 0 s, the longest run the budget could hold"):
        cmd_timing.time_command("sleep 100", 0.05)
