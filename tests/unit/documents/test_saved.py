"""Hostile saved experiments and matrices: `report` and `compare --resume` check the whole file first.

The documents start as real ones (tests/data/saved/: written by `compare --save` on a loop device, fio's
own JSON cut to its latency bins) and are mutated anywhere: wrong types, null, 10**400, NaN and Infinity,
empty lists, negative numbers, deep nesting, unknown names. Every outcome is a result (exit 0) or one
sentence naming the file (exit 2), never a traceback; `--resume` refuses before the device is locked, runs
nothing and changes no file.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from saved_support import PYTHON_WORDS, assert_one_sentence, call, mutate, saved  # shared with the fleets' tests

from iosched.core.base.errors import BadInput
from iosched.core.documents.params import BadValue, parse_seconds, parse_settle
from iosched.core.kernel.devices import read_device
from iosched.core.settings.device_lock import load_lock

from conftest import need_real, run_cli

KINDS = ["experiment", "alternation", "sequential", "command", "matrix", "study", "fleet", "fleet_matrix"]


def write(tmp: Path, doc: object) -> tuple[Path, bytes]:
    path = tmp / "saved.json"
    data = json.dumps(doc).encode()  # NaN and Infinity as JSON's readers take them; 10**400 written whole
    path.write_bytes(data)
    return path, data


FLAGS = [[], ["--json"], ["--csv"], ["--plot"], ["--metric", "mb_s"], ["--alpha", "0.01", "--plot", "--csv"]]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                      HealthCheck.too_slow])
@given(st.sampled_from(KINDS).flatmap(lambda k: mutate(saved(k))), st.sampled_from(FLAGS))
def test_report_on_a_hostile_file_is_a_result_or_one_sentence(tmp_path_factory, doc, flags):
    path, data = write(tmp_path_factory.mktemp("rep"), doc)
    code, out, err = call("report", str(path), *flags)
    said = doc.get("kind") if isinstance(doc, dict) and isinstance(doc.get("kind"), str) else None
    kind = {"matrix": "matrix", "fleet": "fleet compare", "fleet_matrix": "fleet matrix"}.get(said, "experiment")
    # A fleet whose hosts cannot be pooled (none left, say) is read, and says so first: exit 1 (docs/fleet.md).
    # In --json the pool is null; --csv holds the runs alone (no pooled rows).
    cannot = code == 1 and said in ("fleet", "fleet_matrix") and (
        out.startswith("cannot judge") or ("--json" in flags and json.loads(out).get("pooled", 0) is None)
        or ("--csv" in flags and not err.strip()))
    assert code in (0, 2) or cannot, err
    if code == 2:
        assert_one_sentence(err, path, kind)
    assert path.read_bytes() == data


@pytest.mark.parametrize("kind", KINDS)
def test_the_saved_files_as_written_report_in_every_form(tmp_path, kind):
    path, _ = write(tmp_path, saved(kind))
    for flags in FLAGS:
        code, out, err = call("report", str(path), *flags)
        assert code == 0 and out and not err.strip(), err


EXTREMES = [1e-12, 2e-12, 1e-9, 0.0, -1.0, 1.0, 3.0, 1e15, -1e15]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["experiment", "alternation", "matrix", "command"]), st.data())
def test_measured_values_far_apart_are_judged_or_cannot_be(tmp_path_factory, kind, data):
    # The widest values a file may hold: judged, or "cannot judge", never an OverflowError.
    doc = saved(kind)
    metric = "wall_s" if kind == "command" else "iops"
    for r in doc["runs"]:
        r["metrics"][metric] = data.draw(st.sampled_from(EXTREMES))
    path, _ = write(tmp_path_factory.mktemp("far"), doc)
    for flags in ([], ["--json"], ["--plot"]):
        code, _out, err = call("report", str(path), *flags)
        assert code == 0, err


# --- the named cases, in a child with a time limit and an address-space limit --------------------------------


def _set(path: str, value: object):
    def change(doc: dict) -> None:
        *head, last = path.split(".")
        node = doc
        for k in head:
            node = node[int(k)] if isinstance(node, list) else node[k]
        node[int(last) if isinstance(node, list) else last] = value
    return change


NAMED = [
    ("experiment", _set("runs.0.start", 10**400), "run 1's start is not a number"),
    ("matrix", _set("runs.0.start", 10**400), "run 1's start is not a number"),
    ("experiment", _set("repeat", float("inf")), "repeat: must be a whole number"),
    ("matrix", _set("repeat", float("inf")), "repeat: must be a whole number"),
    ("matrix", _set("device", None), None),  # no device named: the report still reads
    ("matrix", _set("device", []), "device is not an object"),
    ("matrix", _set("workloads", []), "its workloads are not its jobs"),
    ("matrix", _set("workloads", None), "workloads is not a list"),
    ("matrix", _set("notes", [1]), "notes is not a list of text"),
    ("experiment", _set("notes", "text"), "notes is not a list"),
    ("matrix", _set("settle_s", 1e9), "settle_s: must be at least 0 and at most 3600"),
    ("matrix", _set("settle_s", -1), "settle_s: must be at least 0 and at most 3600, not -1"),
    ("experiment", _set("settle_s", -1), "settle_s: must be at least 0 and at most 3600, not -1"),
    ("alternation", _set("every_s", 0), "every_s: the duration must be between 0.5 s and 24 h"),
    ("matrix", _set("jobs.0.runtime", 1e9), "is not one --runtime or --size takes"),
    ("matrix", _set("primary_metric", "nonsense"), "primary_metric: 'nonsense' is no metric"),
    ("matrix", _set("variants.1.label", "none"), "variant none does not read back the same"),
    ("matrix", _set("variants.1.label", "none,bfq"), "variant labels are not what --schedulers takes"),
    ("matrix", _set("variants.1.label", "none:x"), "not what --schedulers takes"),
    ("matrix", _set("switches", "ab"), "switches is not a list"),
    ("sequential", _set("sequential.looks", []), "the sequential looks are not increasing run counts"),
    ("experiment", _set("runs.0.metrics.iops", float("nan")), "run 1's iops is not a number"),
    ("experiment", _set("runs.0.metrics.iops", 1e-300), "run 1's iops is 1e-300, outside a figure's range"),
    ("experiment", _set("runs.0.metrics.iops", 3e19), "run 1's iops is 3e+19, outside a figure's range"),
    ("matrix", _set("runs.0.fio.jobs.0.read.clat_ns.bins.15296", 1e308), "holds a number of no sensible size"),
    # A study under --until-verdict: its boundary cannot be loosened, its looks must be its maximum's schedule,
    # and its commands are checked as a study file's would be.
    ("study", _set("sequential.levels", [0.05, 0.05]), "its sequential boundary is looser than alpha allows"),
    ("study", _set("sequential.levels", [0.01]), "its sequential boundary does not fit the matrix"),
    ("study", _set("sequential.looks", [2, 5]), "its sequential looks are not those of its most runs per cell"),
    ("study", _set("sequential.alpha", 0.9), "its sequential boundary does not fit the matrix"),
    ("study", _set("jobs.1.cmd_metrics.0.name", "iops"), "iosched measures a figure of that name itself"),
    ("study", _set("jobs.1.name", "a b"), "is not a name"),
    ("study", _set("jobs.1.cmd", ""), "cmd must be a command line"),
]


@pytest.mark.parametrize(("kind", "change", "why"), NAMED)
def test_named_hostile_files_are_one_sentence_for_report(tmp_path, kind, change, why):
    doc = saved(kind)
    change(doc)
    path, data = write(tmp_path, doc)
    r = run_cli("report", str(path), timeout=60, preexec=["prlimit", "--as=2000000000", "--"])
    if why is None:
        assert r.returncode == 0, r.stderr
        return
    assert r.returncode == 2, r.stderr
    assert_one_sentence(r.stderr, path, "matrix" if kind in ("matrix", "study") else "experiment")
    assert why in r.stderr, r.stderr
    assert path.read_bytes() == data


def test_a_fleet_whose_hosts_compared_different_things_is_one_sentence(tmp_path):
    doc = saved("fleet")
    doc["hosts"][1]["result"]["variants"][1].update(label="bfq", scheduler="bfq")
    for r in doc["hosts"][1]["result"]["runs"]:
        if r["variant"] == "mq-deadline":
            r["variant"], r["config"]["scheduler"] = "bfq", "bfq"
    doc["hosts"][1]["result"]["order"] = ["none", "bfq", "bfq", "none"]
    path, _ = write(tmp_path, doc)
    code, _out, err = call("report", str(path))
    assert code == 2 and "different variants" in err
    assert_one_sentence(err, path, "fleet compare")
    doc = saved("fleet")
    doc["hosts"][1]["host"] = "db1"
    path, _ = write(tmp_path, doc)
    code, _out, err = call("report", str(path))
    assert code == 2 and "names a host twice" in err


def test_not_json_says_what_the_file_is_not(tmp_path):
    for data, why in ((b'{"runs": [', "not JSON (line 1, column 11)"), (b"{\"a\": \"\xff\xff\"}", "not UTF-8 text"),
                      (b"[" * 100_000, "nested too deeply"), (b"1" * 5000, "a number too long to read"),
                      # a small file that parses into a vast one: counted before it is parsed
                      (b"[" + b"[]," * 1_000_000 + b"[]]", "more than 1,000,000 lists and objects")):
        path = tmp_path / "x.json"
        path.write_bytes(data)
        code, _out, err = call("report", str(path))
        assert code == 2 and why in err, err
        assert_one_sentence(err, path, "experiment")


# --- item 4: a value from a file goes through its flag's parser ------------------------------------------------


@pytest.mark.parametrize(("flag", "field", "text", "value"), [
    ("--settle", "settle_s", "-1", -1), ("--settle", "settle_s", "5000", 5000),
    ("--repeat", "repeat", "0", 0), ("--repeat", "repeat", "1001", 1001),
])
def test_a_saved_value_is_refused_with_its_flags_own_reason(tmp_path, flag, field, text, value):
    flag_err = run_cli("compare", "loop0", "--schedulers", "none,bfq", "--jobs", "4k-read", flag, text).stderr
    reason = flag_err.split(f"argument {flag}: ", 1)[1].split(" (see")[0]
    for kind in ("experiment", "matrix"):
        doc = saved(kind)
        doc[field] = value
        path, _ = write(tmp_path, doc)
        code, _out, err = call("report", str(path))
        assert code == 2 and err.strip().endswith(f"{field}: {reason}"), (err, reason)


def test_the_parsers_take_text_and_json_numbers_alike():
    assert parse_settle("2.5") == parse_settle(2.5) == 2.5 and parse_seconds("2m") == parse_seconds(120) == 120.0
    for bad in (-1, 1e9, 10**400, float("nan"), float("inf"), True, None, "x", [1]):
        with pytest.raises(BadValue):
            parse_settle(bad)
        with pytest.raises(BadValue):
            parse_seconds(bad)
    with pytest.raises(BadValue, match=r"not 10{30,}…$"):  # cut, never converted to a float
        parse_settle(10**400)


# --- compare --resume: refused before the device is locked, nothing run, nothing changed --------------------


def resumable(loop) -> dict:
    """The saved matrix as if interrupted on this loop device after its first three runs."""
    doc = saved("matrix")
    dev = read_device(loop.name)
    assert dev is not None
    doc["device"] = asdict(dev)
    doc["runs"] = doc["runs"][:3]
    doc["status"] = "running"
    return doc


def io_counters(loop) -> str:
    return (loop.sysdir / "stat").read_text()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                      HealthCheck.too_slow])
@given(data=st.data())
def test_resume_of_a_hostile_matrix_refuses_before_locking_and_runs_nothing(loopdev, tmp_path_factory, data):
    need_real("fio")
    doc = data.draw(mutate(resumable(loopdev)))
    path, saved_bytes = write(tmp_path_factory.mktemp("res"), doc)
    before, sched = io_counters(loopdev), loopdev.scheduler_text()
    # The device is held as by another iosched: a file refused before the lock is refused as a file (exit 2);
    # one that passes every check meets the lock (exit 1) and must then be a matrix `report` can show.
    with load_lock(loopdev.name, "test"):
        code, _out, err = call("compare", loopdev.name, "--resume", str(path), "--dir", str(path.parent))
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and not any(w in err for w in PYTHON_WORDS), err
        assert str(path) in err, err
    else:
        assert code == 1 and "already under load" in err, err
        assert call("report", str(path))[0] == 0
    assert path.read_bytes() == saved_bytes
    assert io_counters(loopdev) == before and loopdev.scheduler_text() == sched
    assert sorted(p.name for p in path.parent.iterdir()) == ["saved.json"]


@pytest.mark.parametrize(("change", "why"), [
    (_set("workloads", None), "workloads is not a list"),
    (_set("notes", [None]), "notes is not a list of text"),
    (_set("settle_s", 1e9), "settle_s: must be at least 0 and at most 3600, not 1000000000.0"),
    (_set("settle_s", -1), "settle_s: must be at least 0 and at most 3600, not -1"),
    (_set("repeat", float("inf")), "repeat: must be a whole number, not inf"),
    (_set("runs.0.start", 10**400), "run 1's start is not a number"),
    (_set("workloads", []), "its workloads are not its jobs"),
])
def test_resume_refuses_the_named_hostile_files_in_a_child(loopdev, tmp_path, change, why):
    need_real("fio")
    doc = resumable(loopdev)
    change(doc)
    path, data = write(tmp_path, doc)
    before, sched = io_counters(loopdev), loopdev.scheduler_text()
    r = run_cli("compare", loopdev.name, "--resume", str(path), "--dir", str(tmp_path), timeout=60,
                preexec=["prlimit", "--as=2000000000", "--"])
    assert r.returncode == 2 and why in r.stderr, r.stderr
    assert_one_sentence(r.stderr, path, "matrix")
    assert path.read_bytes() == data and io_counters(loopdev) == before and loopdev.scheduler_text() == sched


def test_a_well_formed_resumable_matrix_passes_the_check_before_the_lock(loopdev, tmp_path):
    need_real("fio")
    path, _ = write(tmp_path, resumable(loopdev))
    with load_lock(loopdev.name, "test"):
        code, _out, err = call("compare", loopdev.name, "--resume", str(path))
    assert code == 1 and "already under load" in err, err


def test_the_core_decoders_raise_bad_input_only():
    from iosched.core.documents.saved import read_experiment
    from iosched.core.experiment.matrix import decode_matrix

    for doc in (None, [], {}, {"kind": "matrix"}, {"variants": None}):
        with pytest.raises(BadInput):
            read_experiment(doc, "x.json")
        with pytest.raises(BadInput):
            decode_matrix(doc, "x.json")
