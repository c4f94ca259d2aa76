"""A result saved (core/present/result_file.py): its sentences written before it is encoded, read back with them;
the TUI's own file written only once a run has finished and kept up to date after."""

from __future__ import annotations

import json
from dataclasses import replace

from doc_support import experiment_doc

from iosched.core.documents.saved import read_experiment
from iosched.core.present.result_file import ResultFile
from iosched.core.present.worded import worded, worded_json
from iosched.core.statistics.verdict import judge


def _compare():
    runs = [{"variant": lb, "metrics": {"iops": x}} for lb, x in (("none", 100.0), ("bfq", 60.0), ("bfq", 62.0),
                                                                 ("none", 103.0), ("none", 98.0), ("bfq", 59.0))]
    doc = experiment_doc({"kind": "compare", "variants": [{"label": "none"}, {"label": "bfq"}], "runs": runs,
                          "workload": {"job": {"name": "4k-randread"}}, "device": {"name": "loop0"}})
    return replace(doc, judgement=judge(doc))


def test_a_saved_judgement_reads_back_with_its_words(tmp_path):
    doc = _compare()
    path = tmp_path / "c.json"
    saver = ResultFile(path)
    saver.save(doc)
    saved = json.loads(path.read_text())
    assert saved["judgement"]["method"].startswith("Welch")  # the file holds the sentences
    assert saved == json.loads(json.dumps(worded_json(doc)))
    back = read_experiment(saved, path)
    assert worded(back) == back  # read back: worded once, as it was written


def test_the_tui_writes_no_file_until_a_run_has_finished(tmp_path):
    result = ResultFile.new_in(tmp_path / "results", "sdb", "matrix")
    assert result.path is not None and result.error == ""
    result.save({"kind": "matrix", "runs": []}, empty=True)  # cancelled before the first run ended: nothing to keep
    assert not result.path.exists()
    result.save({"kind": "matrix", "runs": [{"slot": 0}]})
    result.save({"kind": "matrix", "runs": []}, empty=True)  # an existing file is kept up to date, even when emptied
    assert json.loads(result.path.read_text())["runs"] == []
    (tmp_path / "file").write_text("")
    unwritable = ResultFile.new_in(tmp_path / "file" / "results", "sdb", "matrix")
    assert unwritable.path is None and unwritable.error.startswith(f"{tmp_path / 'file' / 'results'}: ")
    unwritable.save({"runs": [1]})  # says nothing more, raises nothing
