"""`iosched report` against bad input: files that are not files, too large, saved experiments and
recordings of any shape."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iosched.cli.main import main

from conftest import one_sentence_exit_2, run_cli


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/null", "/proc/self", "/nonexistent/file"])
def test_report_refuses_what_is_not_a_regular_file_at_once(path):
    one_sentence_exit_2("report", path)


def test_report_reads_with_a_bound(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(65 << 20)  # sparse: nothing is written to disk
    assert "larger than 64 MiB" in one_sentence_exit_2("report", str(big))


def _report(tmp_path_factory, data: bytes) -> int:
    f = tmp_path_factory.mktemp("rep") / "doc.json"
    f.write_bytes(data)
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(["report", str(f)])
    assert f.read_bytes() == data
    return code


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
                     lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids, max_size=3),
                     max_leaves=15)
_run = st.fixed_dictionaries({}, optional={"index": _json | st.integers(0, 5), "variant": _json | st.just("none"),
                                           "valid": _json, "metrics": _json | st.just({"iops": 1.0}),
                                           "config": _json | st.just({"scheduler": "none"}), "start": _json,
                                           "end": _json, "invalid_reason": _json})
_doc = st.fixed_dictionaries({"runs": st.lists(_run, max_size=4)},
                             optional={"variants": _json | st.just([{"label": "none"}, {"label": "bfq"}]),
                                       "kind": _json, "device": _json, "workload": _json, "version": _json})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(_json, _doc))
def test_random_saved_experiments_report_or_refuse(tmp_path_factory, doc):
    assert _report(tmp_path_factory, json.dumps(doc).encode()) in (0, 2)


_line = st.one_of(_json.map(json.dumps), st.sampled_from(['{"t":"s","m":1,"d":{},"c":{}}',
                                                          '{"t":"e","m":1,"dev":"sda","name":"scheduler"}',
                                                          '{"t":"s","m":"x","d":{"sda":[1,2]},"c":{}}',
                                                          '{"t":"s","m":2,"d":{"sda":[8,0,1,2,3,4]},"c":{"cpu":[1,2,3,4]}}',
                                                          '{"t":"s","m":3,"d":{"sda":[8,0,true,2]},"c":{}}',
                                                          '{"t":"dev","m":1,"device":{"name":"sdb"}}',
                                                          '{"t":"e","m":1,"dev":"sda","name":"scheduler",'
                                                          '"old":"none","new":7}']))
_header = st.fixed_dictionaries({"t": st.just("header"), "version": st.just(1)},
                                optional={"start_wall": _json | st.just(0), "interval": _json | st.just(1),
                                          "devices": _json, "inventory": _json | st.just([])})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_header, st.lists(_line, max_size=6), st.binary(max_size=20))
def test_random_recordings_report_or_refuse(tmp_path_factory, header, lines, tail):
    data = ("\n".join([json.dumps(header, separators=(",", ":")), *lines]) + "\n").encode() + tail
    assert _report(tmp_path_factory, data) in (0, 2)


def test_report_refuses_what_it_cannot_read(tmp_path):
    f = tmp_path / "x.json"
    f.write_text('{"hello": 1}')
    r = run_cli("report", str(f))
    assert r.returncode == 2 and "not a saved iosched experiment" in r.stderr
    r = run_cli("report", str(tmp_path / "none.json"))
    assert r.returncode == 2 and "no such file" in r.stderr
