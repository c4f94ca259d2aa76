"""A user's regular expression runs against a deadline, in a child that is killed at it: a pattern that
backtracks without end makes its run invalid with the reason (or is refused at parse time), never a hung
experiment (the real command on a loop device: tests/real/test_cmd_metric_real.py)."""

from __future__ import annotations

import os
import threading
import time

import psutil
import pytest

from iosched.core.base.errors import BadInput
from iosched.core.experiment import pattern_search
from iosched.core.experiment.cmd_metrics import CmdMetric, parse_cmd_metrics, read_figures
from iosched.core.experiment.control import Cancelled
from iosched.core.experiment.pattern_search import probes, search, slow_pattern

from conftest import one_sentence_exit_2

SLOW = "x=a*a*a*b"  # sound on the short probe lines, about n**4 steps on the output: hours over 3,000 'a's
OUTPUT = "x=" + "a" * 3000


def _children() -> set[int]:
    return {c.pid for c in psutil.Process(os.getpid()).children(recursive=True)}


def test_the_child_finds_each_patterns_last_match_in_each_text():
    got = search([r"tps = ([0-9.]+)", r"[0-9]+(?= rows)", "nothing"], ["tps = 1\ntps = 2.5\n", "got 42 rows"], 10)
    assert got.found == [["2.5", None], [None, "42"], [None, None]] and got.slow is None and got.failed is None


def test_a_pattern_past_the_deadline_is_named_and_its_child_killed():
    before = _children()
    t0 = time.monotonic()
    got = search(["x=(a)", SLOW, "never reached"], [OUTPUT], 1.0)
    assert time.monotonic() - t0 < 4
    assert got.found == [["a"]] and got.slow == 1
    assert _children() <= before


def test_a_run_whose_pattern_is_too_slow_is_invalid_with_the_reason(monkeypatch):
    monkeypatch.setattr(pattern_search, "RUN_DEADLINE_S", 1.0)
    t0 = time.monotonic()
    values, why = read_figures([CmdMetric("n", r"n=(\d+)"), CmdMetric("x", SLOW)], "n=7\n" + OUTPUT)
    assert time.monotonic() - t0 < 4
    assert values == {"n": 7.0}
    assert why == "the pattern of x ('x=a*a*a*b') took longer than 1 s on the command's output, so its figure " \
                  "was not read"


def test_a_cancel_ends_the_search_at_once():
    cancelled = threading.Event()
    threading.Timer(0.3, cancelled.set).start()
    before = _children()
    t0 = time.monotonic()
    with pytest.raises(Cancelled):
        search([SLOW], [OUTPUT], 30, cancelled)
    assert time.monotonic() - t0 < 2 and _children() <= before


def test_the_output_is_read_whatever_it_holds():
    text = "tps = 1\udcff\x00\u2028tps = 3\n" + "é" * 1000
    assert search([r"tps = (\d)"], [text], 10).found == [["3"]]
    long = "v=" + "1" * 5000  # a figure is never 5000 characters: cut, then refused as too long
    assert CmdMetric("v", r"v=(\d+)").read(long).startswith("the command's v is not a number: '1111")


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"^(\w+\s?)*$", r"(\d+\.?)+x", r"(a|aa)+$", r"(x+x+)+y",
                                     r"(?:\S+)+\s*=", r"(a*)*b"])
def test_patterns_that_backtrack_without_bound_are_refused_when_parsed(pattern):
    t0 = time.monotonic()
    with pytest.raises(BadInput) as e:
        parse_cmd_metrics(["tps=tps = ([0-9.]+)", f"x={pattern}"])
    assert time.monotonic() - t0 < pattern_search.PROBE_DEADLINE_S + 2
    said = str(e.value)
    assert said.startswith("--cmd-metric x=") and "takes longer than 2 s" in said and "\n" not in said


@pytest.mark.parametrize("pattern", [r"^tps = ([0-9.]+)$", r"tps = ([0-9.]+)", r".*tps.*= ([0-9.]+)",
                                     r"(?:\d+,)*\d+", r"((?:\d+\.)+\d+)", r"latency average = ([0-9.]+) ms",
                                     SLOW[2:], r"(\d+) rows", r"^\s*(\S+)\s+\S+$"])
def test_sound_patterns_pass_the_probe_quickly(pattern):
    t0 = time.monotonic()
    assert slow_pattern([pattern]) is None
    assert time.monotonic() - t0 < 1.5


def test_the_probes_are_short_lines_of_the_patterns_own_characters():
    lines = probes(["tps=([0-9.]+)"])
    assert all(len(line) == pattern_search.PROBE_LENGTH + 1 for line in lines)
    assert {line[0] for line in lines} >= set("tps=([0-9.]+)aZ ")


def test_the_tui_form_parses_without_a_child():
    before = _children()
    assert parse_cmd_metrics(["x=(a+)+$"], probe=False)[0].pattern == "(a+)+$"
    assert _children() <= before


def test_the_flag_refuses_it_before_anything_changes(tree):
    d = tree.add_disk("sda", "8:0")
    err = one_sentence_exit_2("--root", str(tree.root), "compare", "sda", "--schedulers", "none,bfq", "--cmd",
                              "true", "--cmd-metric", "x=(a+)+$")
    assert "--cmd-metric x='(a+)+$': the regular expression takes longer than 2 s" in err
    assert (d / "queue/scheduler").read_text() == "[none] mq-deadline kyber bfq\n"
