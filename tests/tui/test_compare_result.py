"""tui/compare_result.py: a result's text on the compare screen, a resumed file's words shown escaped."""

from __future__ import annotations

import json
from dataclasses import replace

from saved_support import SAVED

from iosched.core.documents.saved import read_experiment
from iosched.core.experiment.matrix import decode_matrix
from iosched.core.statistics.matrix_judge import judge_matrix
from iosched.core.statistics.verdict import judge
from iosched.tui.compare_result import result_text

EVIL = "\x1b]0;owned\x07\r\x1b[2J"


def _hostile(kind: str) -> dict:
    raw = json.loads((SAVED / f"{kind}.json").read_text())
    raw["host"] += EVIL
    raw["device"]["name"] += EVIL
    raw["notes"].append(f"note {EVIL}")
    return raw


def test_a_resumed_files_escape_sequences_are_shown_not_acted_on():
    doc = read_experiment(_hostile("experiment"), "x.json")
    doc = replace(doc, judgement=judge(doc))
    matrix = decode_matrix(_hostile("matrix"), "m.json")
    matrix = replace(matrix, judgement=judge_matrix(matrix))
    for text in (result_text(doc, None), result_text(doc, None, details=True), result_text(matrix, None)):
        assert not any(c in text for c in "\x1b\x07\r"), text
    assert "\\x1b]0;owned" in result_text(doc, None)


def test_the_screen_names_its_own_key_and_fields_where_the_command_line_names_flags(tree):
    """A summary on the screen says ctrl+d where the command line says --details, and the repeats field where it
    says --max-runs: no flag a screen's user has no way to give."""
    from service_support import compare, run

    from iosched.core.experiment.simulated import Simulation

    raw = json.loads((SAVED / "experiment.json").read_text())
    raw["notes"] += [f"busy machine: another iosched loads loop{k} (pid {k}, matrix) during run 1" for k in (1, 2)]
    doc = read_experiment(raw, "x.json")
    shown = result_text(replace(doc, judgement=judge(doc)), None)
    assert "more such notes (ctrl+d)" in shown and "--details" not in shown, shown
    outcome, _ = run(compare(tree, Simulation({"bfq": {"iops": 1.0}}, noise=0.1, seed=3), until_verdict=4))
    shown = result_text(outcome.doc, None)
    assert "until a verdict: none within 4 repeats, at the noise seen; about 30 repeats would decide" in shown, shown
    assert "--" not in shown.replace("ctrl+d", ""), shown
