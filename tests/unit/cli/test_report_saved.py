"""Every saved file (tests/data/saved/, and the ones iosched 0.1.0 wrote) reads, is judged and is reported as it
was before its documents became runtime types: `report`, `report --json` and `report --csv` give the text that
version gave, recorded in tests/expected/report/."""

from __future__ import annotations

import gzip
from pathlib import Path

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
    code, out, err = call("report", str(path), *([] if flag == "text" else [flag]))
    assert code == 0, err
    assert out == expected
