"""Every saved file (tests/data/saved/, and the ones iosched 0.1.0 wrote) reads, is judged and is reported as it
was before its documents became runtime types: `report --details`, `report --json` and `report --csv` give the text
that version gave, recorded in tests/expected/report/. Since then the judgement gained fields (each comparison's
interval as its words show it, the rank cross-check, the runs that disagree, the smallest detectable difference):
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
ADDED_TO_COMPARISON = ("interval", "interval_level", "family", "rank")
ADDED_TO_JUDGEMENT = ("run_groups", "detectable")


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
    return {k: without_added(v) for k, v in x.items() if k not in added}


@pytest.mark.parametrize("path", [p for p in FILES if json.loads(p.read_text())["kind"] in ("compare", "alternate")],
                         ids=_name)
def test_the_summary_of_a_saved_compare_says_its_verdict_first_in_a_few_lines(path: Path) -> None:
    code, out, err = call("report", str(path))
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) <= 30, out
    verdict = (" than ", "no difference we could see", "cannot judge")
    assert any(w in line for line in lines[1:5] for w in verdict), out
    assert "Secondary metrics" not in out and "bars to the mean" not in out  # those are --details
    assert lines[-1].startswith("--details: every metric")
