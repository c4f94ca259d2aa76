"""Where results are kept (core/experiment/results.py) and which saved matrix the compare screen offers to resume."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from link_support import digest, make_victim, plant, temporaries

from iosched.core.base.encode import encode
from iosched.core.base.errors import BadInput
from iosched.core.documents.params import parse_variants
from iosched.core.experiment import results
from iosched.core.experiment.matrix import MatrixPlan, find_resumable, load_matrix, new_document
from iosched.core.experiment.results import (
    ResultBusy,
    check_save_path,
    default_results_dir,
    new_result_path,
    result_lock,
    save_result,
    saved_matrices,
)
from iosched.core.load.jobs import resolve_jobs
from iosched.core.present.result_file import ResultFile

from conftest import run_cli
from fixtree import FixTree

NOON = 1795435200.0  # a fixed time for the names


def test_the_directory_is_under_root_unless_the_environment_says_otherwise(monkeypatch, tmp_path):
    monkeypatch.delenv("IOSCHED_RESULTS_DIR")
    assert default_results_dir(tmp_path) == tmp_path / "var/lib/iosched/results"
    monkeypatch.setenv("IOSCHED_RESULTS_DIR", str(tmp_path / "elsewhere"))
    assert default_results_dir("/") == tmp_path / "elsewhere"


def test_names_are_made_unique_and_the_directory_made(tmp_path):
    d = tmp_path / "a" / "results"
    first = new_result_path("sdb", "matrix", d, NOON)
    assert d.is_dir() and first.parent == d and first.name.endswith("-sdb-matrix.json") and not first.exists()
    save_result({"kind": "matrix"}, first)
    second = new_result_path("sdb", "matrix", d, NOON)
    assert second != first and second.name.endswith("-sdb-matrix-2.json")
    assert json.loads(first.read_text()) == {"kind": "matrix"} and oct(first.stat().st_mode & 0o777) == "0o644"
    assert [p.name for p in d.iterdir()] == [first.name]  # no temporary file left behind
    (tmp_path / "file").write_text("")
    with pytest.raises(OSError):
        new_result_path("sdb", "matrix", tmp_path / "file" / "results", NOON)


def test_saved_matrices_of_one_device_newest_first(tmp_path):
    names = ["20261101-100000-loop1-matrix.json", "20261102-100000-loop1-matrix.json",
             "20261102-100000-loop1-matrix-2.json", "20261103-100000-loop11-matrix.json",
             "20261104-100000-loop1-compare.json", "notes-loop1-matrix.json", "20261105-100000-loop1-matrix.txt"]
    for n in names:
        (tmp_path / n).write_text("{}")
    (tmp_path / "20261106-100000-loop1-matrix.json").mkdir()  # a directory by that name is not a result
    assert [p.name for p in saved_matrices("loop1", tmp_path)] == [
        "20261102-100000-loop1-matrix-2.json", "20261102-100000-loop1-matrix.json",
        "20261101-100000-loop1-matrix.json"]
    assert saved_matrices("loop1", tmp_path / "missing") == []


def _plan() -> MatrixPlan:
    jobs, _ = resolve_jobs("4k-read,4k-randread")
    return MatrixPlan(parse_variants("none,bfq"), [j.scaled(runtime=1.0) for j in jobs], repeat=2)


def _runs(plan: MatrixPlan, slots: range) -> list[dict]:
    """Finished runs at ``slots`` of the plan's order, shaped as run_matrix writes them."""
    out = []
    for slot in slots:
        w, v = plan.order[slot]
        out.append({"index": slot, "slot": slot, "workload": plan.jobs[w].name, "variant": plan.variants[v].label,
                    "start": float(slot), "end": slot + 1.0, "valid": True, "invalid_reason": None,
                    "config": {"scheduler": plan.variants[v].scheduler}, "metrics": {"iops": 1000.0 + slot}})
    return out


def test_the_newest_unfinished_matrix_of_this_very_device_is_offered(tmp_path):
    tree = FixTree(tmp_path / "root")
    tree.add_disk("sdb", "8:16", extra={"device/model": "DISK"})
    d = tmp_path / "results"
    plan = _plan()
    assert find_resumable("sdb", d, tree.root) is None  # no directory yet
    old = new_result_path("sdb", "matrix", d, NOON)
    doc = encode(new_document("sdb", plan, None, tree.root))
    doc["runs"] = _runs(plan, range(1))
    save_result(doc, old)
    found = find_resumable("sdb", d, tree.root)
    assert found is not None and found[0] == old and found[2].runs == plan.runs == 8
    # A newer one that is finished, or not a matrix, or saved for another disk now called sdb: passed over.
    done = new_result_path("sdb", "matrix", d, NOON + 60)
    save_result({**doc, "status": "final"}, done)
    garbage = new_result_path("sdb", "matrix", d, NOON + 120)
    garbage.write_text("{not json")
    other = new_result_path("sdb", "matrix", d, NOON + 180)
    save_result({**doc, "device": {**doc["device"], "size_bytes": 1}}, other)
    assert find_resumable("sdb", d, tree.root)[0] == old  # type: ignore[index]
    # Every planned run done (status not written, as after a crash at the very end): nothing to resume.
    doc["runs"] = _runs(plan, range(8))
    save_result(doc, old)
    assert find_resumable("sdb", d, tree.root) is None
    assert os.listdir(d)  # reading never removes anything
    assert Path(old).exists()


def test_a_save_never_replaces_what_is_not_a_regular_file(tmp_path):
    fifo, link, target = tmp_path / "fifo", tmp_path / "link", tmp_path / "precious"
    os.mkfifo(fifo)
    target.write_text("keep me")
    link.symlink_to(target)
    for p in (fifo, link, tmp_path):
        with pytest.raises(BadInput, match="not a regular file"):
            save_result({"runs": []}, p)
        with pytest.raises(BadInput):
            check_save_path(p)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink() and target.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "link", "precious"]  # no temporary file left
    with pytest.raises(BadInput, match="existing directory"):
        check_save_path(tmp_path / "missing" / "x.json")


def test_a_replaced_file_keeps_its_mode_and_owner(tmp_path):
    p = tmp_path / "mine.json"
    p.write_text("{}")
    os.chmod(p, 0o600)
    if os.geteuid() == 0:
        os.chown(p, 65534, 65534)
    save_result({"runs": [1]}, p)
    st = p.stat()
    assert json.loads(p.read_text()) == {"runs": [1]} and stat.S_IMODE(st.st_mode) == 0o600
    assert os.geteuid() != 0 or (st.st_uid, st.st_gid) == (65534, 65534)


def test_nesting_too_deep_for_the_decoder_is_bad_input_not_a_traceback(tmp_path):
    deep = tmp_path / "20261101-100000-sdb-matrix.json"
    deep.write_text("[" * 200_000)
    with pytest.raises(BadInput):
        load_matrix(deep)
    tree = FixTree(tmp_path / "root")
    tree.add_disk("sdb", "8:16")
    assert find_resumable("sdb", tmp_path, tree.root) is None
    r = run_cli("report", str(deep))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_one_iosched_at_a_time_goes_on_with_a_saved_matrix(tmp_path):
    tree = FixTree(tmp_path / "root")
    tree.add_disk("sdb", "8:16")
    saved = tmp_path / "m.json"
    save_result(encode(new_document("sdb", _plan(), None, tree.root)), saved)  # a matrix to resume, not yet begun
    with result_lock(saved):
        with pytest.raises(ResultBusy, match=f"pid {os.getpid()}"), result_lock(tmp_path / "." / "m.json"):
            pass  # the same file by another spelling: the same lock
        with result_lock(tmp_path / "other.json"):
            pass  # another file: its own lock
        # The command line checks the file, then refuses to go on with it, with one sentence (exit 1).
        r = run_cli("--root", str(tree.root), "compare", "sdb", "--resume", str(saved))
        assert r.returncode == 1 and "being written by another iosched" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    with result_lock(saved):  # released on leaving
        pass


def test_a_link_planted_between_the_check_and_the_save_is_refused(others_dir, tmp_path, monkeypatch):
    victim = make_victim(tmp_path)
    before = digest(victim)
    p = others_dir / "r.json"
    checked = results.check_save_path

    def then_plant(path):
        st = checked(path)
        if not os.path.lexists(p):
            plant(p, victim)
        return st

    monkeypatch.setattr(results, "check_save_path", then_plant)
    with pytest.raises(BadInput, match=r"r\.json is a symlink, not a regular file: nothing was written"):
        save_result({"runs": [1]}, p)
    saver = ResultFile(p, keep_empty=True)
    assert not saver.save({"runs": [1]}) and saver.refused and "is a symlink" in saver.error
    assert digest(victim) == before and temporaries(others_dir) == [] and os.readlink(p) == str(victim)
