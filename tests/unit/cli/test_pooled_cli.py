"""`iosched report A B …` (cli/pooled.py): a pool counts each saved experiment once (core/documents/identity.py),
and the files are bounded together as well as each."""

from __future__ import annotations

import json

import pytest
from saved_support import SAVED, call

from iosched.cli import pooled

from conftest import one_sentence_exit_2


def _copies(tmp_path, n: int, apart: bool = False) -> list[str]:
    raw = json.loads((SAVED / "experiment.json").read_text())
    out = []
    for i in range(n):
        doc = dict(raw, started=raw["started"] + (i if apart else 0))
        path = tmp_path / f"host{i}.json"
        path.write_text(json.dumps(doc))
        out.append(str(path))
    return out


def test_copies_of_one_experiment_are_one_not_many_hosts(tmp_path):
    """One file: CI 77-109%. The same file twice was "pooled over 2 hosts", p=0.02; forty copies p<0.001. A copy,
    renamed or not, is the same experiment: refused in one sentence naming both files."""
    one = str(SAVED / "experiment.json")
    for files in ([one, one], _copies(tmp_path, 2), _copies(tmp_path, 40), [one, *_copies(tmp_path, 1)]):
        err = one_sentence_exit_2("report", *files)
        assert "hold the same experiment (host vm, loop0, started 2026-" in err, err
        assert "a pool counts each host's experiment once" in err


def test_two_experiments_of_one_host_are_two(tmp_path):
    code, out, err = call("report", *_copies(tmp_path, 2, apart=True))
    assert code == 0, err
    assert "pooled over 2 hosts" in out


def test_the_files_are_bounded_together_before_any_is_read(tmp_path):
    """200 files each within its own bound reached 3.77 GB of memory: together they hold at most 64 MiB, told from
    their sizes before one is read."""
    files = []
    for i in range(3):
        path = tmp_path / f"big{i}.json"
        with open(path, "wb") as f:
            f.truncate(30 << 20)  # sparse: each within the bound of one file, 90 MiB together
        files.append(str(path))
    err = one_sentence_exit_2("report", *files)
    assert "the 3 files hold 90 MiB together: report pools at most 64 MiB" in err
    err = one_sentence_exit_2("report", *[f"h{i}.json" for i in range(pooled.MAX_FILES + 1)])
    assert f"report pools at most {pooled.MAX_FILES}" in err


def test_a_file_that_grows_after_the_look_is_held_to_what_is_left(tmp_path, monkeypatch):
    files = _copies(tmp_path, 3, apart=True)
    size = len((tmp_path / "host0.json").read_bytes())
    monkeypatch.setattr(pooled, "MAX_TOTAL_BYTES", 3 * size - 1)
    monkeypatch.setattr(pooled, "_sizes", lambda paths: None)  # as if each file grew after its size was taken
    code, _, err = call("report", *files)
    assert code == 2 and "is larger than" in err and "0 MiB" not in err, err


@pytest.mark.parametrize("n", [2, 3])
def test_a_pool_of_distinct_experiments_still_reads(tmp_path, n):
    code, out, _ = call("report", *_copies(tmp_path, n, apart=True), "--json")
    assert code == 0 and json.loads(out)
