"""Every saved file (tests/data/saved/, and the ones iosched 0.1.0 wrote) reads, is judged and is reported as it
was before its documents became runtime types: `report --details`, `report --json` and `report --csv` give the text
that version gave, recorded in tests/expected/report/. Since then the judgement gained fields (each comparison's
interval as its words show it, the rank cross-check, the runs that disagree, the smallest detectable difference, a
primary comparison's outcome):
`--json` gives what it gave and those beside it; and `report` alone gives the summary."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from saved_support import SAVED, call

EXPECTED = Path(__file__).parents[2] / "expected" / "report"
FILES = sorted(SAVED.glob("*.json")) + sorted((SAVED / "0.1.0").glob("*.json"))


def _name(path: Path) -> str:
    return path.stem if path.parent == SAVED else f"0.1.0-{path.stem}"


@pytest.mark.parametrize("path", FILES, ids=_name)
@pytest.mark.parametrize("flag", ["--json", "text", "--csv"])
def test_a_saved_file_reports_as_before(path: Path, flag: str) -> None:
    if flag == "--json":
        expected = gzip.decompress((EXPECTED / f"{_name(path)}.json.gz").read_bytes()).decode()
    else:
        expected = (EXPECTED / f"{_name(path)}.{'txt' if flag == 'text' else 'csv'}").read_bytes().decode()
    code, out, err = call("report", str(path), *(["--details"] if flag == "text" else [flag]))
    assert code == 0, err
    if flag == "--json":
        out = json.dumps(without_added(json.loads(out)), indent=1) + "\n"
    assert out == expected


# The fields a judgement gained after these files were recorded: a comparison's and a matrix cell's, a judgement's.
ADDED_TO_COMPARISON = ("interval", "interval_level", "family", "rank", "planning", "geomean", "outcome", "reasons",
                       "equal_interval")
ADDED_TO_JUDGEMENT = ("run_groups", "detectable", "planning", "left_out", "margin")


def without_added(x: Any) -> Any:
    """``x`` without the judgement fields added since it was recorded (each must hold a value where it appears)."""
    if isinstance(x, list):
        return [without_added(v) for v in x]
    if not isinstance(x, dict):
        return x
    added: tuple[str, ...] = ()
    if "metric" in x and "primary" in x:  # a comparison, a matrix cell
        added = ADDED_TO_COMPARISON
    elif "summaries" in x and "method" in x:  # an experiment's judgement
        added = ADDED_TO_JUDGEMENT
    elif "skipped" in x and "sentence" in x:  # a fleet's pooled row
        added = ("outcome", "reasons", "equal_interval")
    return {k: without_added(v) for k, v in x.items() if k not in added}


@pytest.mark.parametrize("path", [p for p in FILES if json.loads(p.read_text())["kind"] in ("compare", "alternate")],
                         ids=_name)
def test_the_summary_of_a_saved_compare_says_its_verdict_first_in_a_few_lines(path: Path) -> None:
    code, out, err = call("report", str(path))
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) <= 30, out
    verdict = (" than ", "equal within -9.1% to +10%", "cannot tell in", "cannot judge")
    assert any(w in line for line in lines[1:5] for w in verdict), out
    assert "Secondary metrics" not in out and "bars to the mean" not in out  # those are --details
    assert lines[-1].startswith("--details: every metric")


def test_report_names_runs_that_fall_in_two_groups_and_says_nothing_of_them_otherwise(tmp_path: Path) -> None:
    """A saved compare whose mq-deadline runs are made two groups (two near 75k IOPS, two near 7k, as bfq's
    interactive raise catches a reader in some runs and not others): `report` names them with their counts and
    makes no promise that more runs would settle it; the file as saved (runs that agree) says nothing of groups."""
    doc = json.loads((SAVED / "sequential.json").read_text())
    code, out, err = call("report", str(SAVED / "sequential.json"))
    assert code == 0, err
    assert "group" not in out and "stands apart" not in out and "not reliable" not in out, out
    iops = iter([75316.0, 7100.0, 68417.0, 6900.0])
    for run in doc["runs"]:
        if run["variant"] == "mq-deadline":
            run["metrics"]["iops"] = next(iops)
    split = tmp_path / "split.json"
    split.write_text(json.dumps(doc))
    code, out, err = call("report", str(split))
    assert code == 0, err
    lines = out.splitlines()
    said = [ln for ln in lines[:6] if "runs fall in two groups" in ln]
    assert said == ["  mq-deadline: runs fall in two groups in IOPS — 2 of 4 at 6.9k–7.1k, 2 at 68.4k–75.3k; "
                    "the difference from none is not reliable"], out
    assert "planning: about" not in out and "the smallest difference these runs could have shown" not in out
    # The runs strip shows the two groups: two runs at the low end of the IOPS axis, two far from them.
    row = next(ln for ln in lines if ln.startswith("  mq-deadline ") and "•" in ln)
    dots = row.split()[1]
    assert dots.startswith("2" + "·" * 20) and dots.count("•") == 2, row
    code, details, err = call("report", str(split), "--details")
    assert code == 0 and "runs fall in two groups" in details, err
