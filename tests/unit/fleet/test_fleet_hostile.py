"""Hosts that answer as an adversary would, through the fleet's real protocol: `compare --hosts` reaches each through
an ssh stand-in (fake_host.py) that speaks the line protocol of `iosched fleet-host` (lockstep) or prints an
independent host's compare, with huge lines, endless stderr, 10**400, NaN and negative figures.

A host that breaks a bound or sends a number out of its range is a failed host whose reason names it; the others
go on and are pooled; an experiment left with nothing to judge exits 1 and says so first. Bad flags are refused
before any host is reached. fio's client is played here (no fio on this side): the protocol is what is tested."""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from saved_support import PYTHON_WORDS, call

from iosched.core.fleet import lockstep
from iosched.core.fleet.host_answers import Bye, Ready, Window, read_answer

HERE = Path(__file__).resolve().parent
GIB = 1 << 30
BIG = "1" + "0" * 400


class PlayedFio:
    """fio's client as far as the controller reads it: figures a little different each run."""

    runs = itertools.count()

    def __init__(self, argv: list[str], expected_s: float | None = None) -> None:
        self.n = next(self.runs)

    def stop(self) -> None:
        pass

    def run(self, timeout: float | None = None) -> SimpleNamespace:
        iops = 1000.0 + 37.0 * (self.n % 5)
        return SimpleNamespace(total_ios=int(iops), raw={"fio version": "fio-3.33", "jobs": []},
                               metrics=lambda: {"iops": iops, "mb_s": iops * 4096 / 1e6})


@pytest.fixture
def fleet(tmp_path, monkeypatch):
    """``run(hosts, *flags)``: `compare --hosts` over the fake hosts (a map of host name to its part, fake_host.py
    says what a part may hold), its exit code, its --json document (None without one) and its stderr. No thread
    may end in an exception, and nothing said may be a traceback."""
    ssh = tmp_path / "ssh"
    ssh.write_text(f"#!/bin/sh\nexec {sys.executable} {HERE / 'fake_host.py'} \"$@\"\n")
    ssh.chmod(0o755)
    scenario = tmp_path / "hosts.json"
    monkeypatch.setenv("FAKE_HOSTS", str(scenario))
    monkeypatch.setattr(lockstep, "check_fence", lambda fio, work: None)
    monkeypatch.setattr(lockstep, "fio_binary", lambda: "fio")
    monkeypatch.setattr(lockstep, "fenced", lambda argv, work: argv)
    monkeypatch.setattr(lockstep, "FioRun", PlayedFio)
    probe = lockstep._probe_forward
    monkeypatch.setattr(lockstep, "_probe_forward", lambda local: probe(local, wait_s=0.05))
    died: list[object] = []
    monkeypatch.setattr(threading, "excepthook", died.append)

    def run(hosts: dict[str, dict], *flags: str, json_out: bool = True) -> tuple[int, dict | None, str]:
        scenario.write_text(json.dumps(hosts))
        code, out, err = call("compare", "--hosts", ",".join(hosts), "sdb", "--schedulers", "none,mq-deadline",
                              "--job", "randread-q16t2", "--repeat", "2", "--settle", "0", "--ssh", str(ssh),
                              *(["--json"] if json_out else []), *flags)
        assert not died, died
        assert not any(w in err for w in ("Traceback", "OverflowError", "JSONDecode")), err[-3000:]
        return code, json.loads(out) if json_out and out.strip() else None, err if json_out else out + err

    return run


def status(doc: dict) -> dict[str, tuple[str, str | None]]:
    fleets = doc["fleets"] if doc["kind"] == "fleet_matrix" else [doc]
    return {h["host"]: (h["status"], h["reason"]) for f in fleets for h in f["hosts"]}


MODES = [pytest.param((), id="lockstep"), pytest.param(("--independent",), id="independent")]


# --- bounds --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("part", "bound"), [
    ({"stderr_flood": GIB}, "a line longer than 64 KiB on its stderr"),
    ({"stderr_lines": 17_000}, "more than 16 MiB on its stderr"),
])
def test_a_host_that_says_too_much_on_stderr_fails_alone(fleet, mode, part, bound):
    code, doc, err = fleet({"h1": {}, "h2": {}, "h3": part}, *mode)
    assert code == 1 and doc is not None
    assert status(doc)["h3"][0] == "failed" and bound in status(doc)["h3"][1]
    assert status(doc)["h1"] == ("done", None) and status(doc)["h2"] == ("done", None)
    assert "pooled over 2 hosts" in doc["pooled"]["pooled"][0]["sentence"]
    assert len(err) < 32 << 20  # what it said was bounded on the way through


@pytest.mark.parametrize("mode", MODES)
def test_a_hosts_device_list_of_a_gigabyte_is_not_read(fleet, mode):
    code, doc, _err = fleet({"h1": {}, "h2": {}, "h3": {"list_flood": GIB}}, *mode)
    assert code == 1 and doc is not None
    why = "its `iosched list --json` was larger than 4 MiB (the bound on its `iosched list --json`)"
    assert status(doc)["h3"][0] == "failed" and why in status(doc)["h3"][1]
    assert [status(doc)[h][0] for h in ("h1", "h2")] == ["done", "done"]


def test_an_independent_hosts_result_of_a_gigabyte_is_not_read(fleet):
    code, doc, _err = fleet({"h1": {}, "h2": {}, "h3": {"result_flood": GIB}}, "--independent")
    assert code == 1 and doc is not None
    assert status(doc)["h3"] == ("failed", "its compare's result was larger than 64 MiB (the bound on its compare's "
                                           "result)")
    assert doc["pooled"] is not None


@pytest.mark.parametrize(("part", "bound"), [
    ({"end_flood": GIB}, "an answer longer than 1 MiB (the bound on an answer)"),
    ({"ready_flood": GIB}, "an answer longer than 1 MiB"),
    ({"unasked": 40}, "answers to nothing it was asked"),
])
def test_a_lockstep_host_whose_answers_break_a_bound_fails_alone(fleet, part, bound):
    code, doc, _err = fleet({"h1": {}, "h2": {}, "h3": part})
    assert code == 1 and doc is not None
    assert status(doc)["h3"][0] == "failed" and bound in status(doc)["h3"][1], status(doc)
    assert [status(doc)[h][0] for h in ("h1", "h2")] == ["done", "done"]


def test_a_sessions_answers_are_bounded_in_all(fleet, monkeypatch):
    monkeypatch.setattr(lockstep, "MAX_ANSWERS", 1 << 10)  # a few runs' answers: reached within the test
    code, doc, _err = fleet({"h1": {}, "h2": {}})
    assert code == 1 and doc is not None
    assert all(s == ("failed", "its iosched wrote more than 1 KiB of answers (the bound on a session's answers)")
               for s in status(doc).values()), status(doc)


# --- numbers -------------------------------------------------------------------------------------------------


# Beyond these, any number anywhere: the decoder's own test below and the protocol's hypothesis test after it.
RAWS = [pytest.param(BIG, id="10**400"), "NaN", "-1"]


@pytest.mark.parametrize("raw", RAWS)
@pytest.mark.parametrize(("verb", "path", "place"), [
    ("end", "start", "start"), ("end", "metrics.dev_iops", "metrics.dev_iops"),
    ("end", "metrics.cpu_us_per_io", "metrics.cpu_us_per_io"), ("bye", "switches.1.0", "switches"),
    ("ready", "started", "started"),
])
def test_a_number_out_of_range_from_a_lockstep_host_fails_that_host(fleet, verb, path, place, raw):
    code, doc, _err = fleet({"h1": {}, "h2": {}, "h3": {verb: {path: raw}}})
    assert code == 1 and doc is not None
    state, reason = status(doc)["h3"]
    assert state == "failed" and "not understood" in reason and place in reason, reason
    assert not any(w in reason for w in PYTHON_WORDS), reason
    assert [status(doc)[h][0] for h in ("h1", "h2")] == ["done", "done"]
    assert "pooled over 2 hosts" in doc["pooled"]["pooled"][0]["sentence"]


@pytest.mark.parametrize("raw", RAWS)
@pytest.mark.parametrize("path", ["runs.0.metrics.iops", "runs.1.start", "switches.0.0", "repeat", "runs.2.index"])
def test_a_number_out_of_range_from_an_independent_host_fails_that_host(fleet, path, raw):
    code, doc, _err = fleet({"h1": {}, "h2": {}, "h3": {"result": {path: raw}}}, "--independent")
    state, reason = status(doc)["h3"]
    assert code == 1 and state == "failed" and reason.startswith("its result did not read back"), reason
    assert not any(w in reason for w in PYTHON_WORDS), reason
    assert [status(doc)[h][0] for h in ("h1", "h2")] == ["done", "done"]


def test_a_window_that_ends_before_it_starts_fails_its_host(fleet):
    code, doc, _err = fleet({"h1": {}, "h2": {}, "h3": {"end": {"end": "0.5"}}})
    assert code == 1 and "ends before it starts" in status(doc)["h3"][1]


def test_a_figure_the_sampler_never_reports_fails_its_host(fleet):
    # A host's window speaks for its sampler alone: it cannot put a figure of fio's (iops) over the client's.
    code, doc, _err = fleet({"h1": {}, "h2": {}, "h3": {"end": {"metrics.iops": "1e9"}}})
    assert code == 1 and "that no iosched writes" in status(doc)["h3"][1]


# --- an experiment that cannot judge ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_fleet_that_cannot_judge_exits_1_and_says_so_first(fleet, mode, tmp_path):
    hostile = {"end": {"start": BIG}} if not mode else {"result": {"runs.0.end": BIG}}
    code, _doc, out = fleet({"h1": {}, "h2": hostile, "h3": hostile}, *mode, json_out=False)
    assert code == 1
    assert out.startswith("cannot judge: 1 of 3 hosts finished runs to pool, and it takes two (2 failed"), out
    saved = tmp_path / "fleet.json"
    code, doc, err = fleet({"h1": {}, "h2": hostile, "h3": hostile}, *mode, "--save", str(saved))
    assert code == 1 and doc["pooled"] is None
    said = [line for line in err.splitlines() if not line.startswith("iosched: saved to")]
    assert said[-1].startswith("iosched: cannot judge: 1 of 3 hosts"), err  # after the progress
    code, out, err = call("report", str(saved))  # judged again from the file: the same answer, the same exit
    assert code == 1 and out.startswith("cannot judge: 1 of 3 hosts finished runs to pool"), out + err


@pytest.mark.parametrize("mode", MODES)
def test_in_a_fleet_matrix_a_hostile_host_fails_in_each_job_and_the_others_are_pooled(fleet, mode):
    hostile = {"stderr_flood": GIB, "end": {"end": BIG}, "result": {"runs.0.end": BIG}}
    code, doc, _err = fleet({"h1": {}, "h2": {}, "h3": hostile}, *mode, "--jobs", "4k-randread,randread-q16t2",
                            "--job", "")
    assert code == 1 and doc["kind"] == "fleet_matrix" and len(doc["fleets"]) == 2
    for f in doc["fleets"]:
        states = {h["host"]: (h["status"], h["reason"]) for h in f["hosts"]}
        assert states["h3"] == ("failed", "it wrote a line longer than 64 KiB on its stderr (the bound on a line)")
        assert states["h1"] == states["h2"] == ("done", None)
    assert doc["pooled"]["cells"] == 2


def test_a_fleet_matrix_that_cannot_judge_a_job_exits_1(fleet):
    hostile = {"end": {"metrics.dev_util": "-5"}}
    code, doc, err = fleet({"h1": {}, "h2": hostile}, "--jobs", "4k-randread,randread-q16t2", "--job", "")
    assert code == 1 and doc["kind"] == "fleet_matrix"
    assert err.splitlines()[-1].startswith("iosched: cannot judge 4k-randread, randread-q16t2"), err
    code, _doc, out = fleet({"h1": {}, "h2": hostile}, "--jobs", "4k-randread,randread-q16t2", "--job", "",
                            json_out=False)
    assert code == 1 and out.startswith("cannot judge 4k-randread, randread-q16t2"), out


# --- everything local checked before any host is reached ----------------------------------------------------------


@pytest.mark.parametrize(("flags", "why"), [
    (("--metric", "iops;touch /tmp/owned"), "unknown --metric"),
    (("--metric", "fg:clat_p99_us"), "has no role 'fg'"),
    (("--cmd-metric", "x=y"), "--cmd-metric does not apply"),
    (("--replay-fit",), "--replay-fit does not apply"),
    (("--max-time", "60"), "--max-time does not apply"),
    (("--until-verdict", "--max-runs", "2", "--independent"), "at least 4 and at most 200"),
    (("--schedulers", "none"), "--schedulers"),
    (("--schedulers", "none,,bfq"), "--schedulers"),
    (("--remote-iosched=-oProxyCommand=x",), "--remote-iosched"),
    (("--remote-iosched", "iosched\x1b[2J"), "--remote-iosched"),
    (("--ssh", "/nonexistent/ssh"), "no such command here"),
    (("--jobs", "contention", "--job", "", "--metric", "fg:clat_p99_us", "--independent"), "has no role 'fg'"),
    (("--save", "/nonexistent/dir/f.json"), ""),
])
def test_every_flag_is_checked_before_any_host_is_reached(tmp_path, flags, why):
    calls = tmp_path / "calls"
    ssh = tmp_path / "ssh"
    ssh.write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\nexit 255\n")
    ssh.chmod(0o755)
    argv = ["compare", "--hosts", "h1,h2", "sdb", "--schedulers", "none,bfq", "--job", "randread-q16t2", "--ssh",
            str(ssh), *flags]
    if "--ssh" in flags[::2]:
        del argv[argv.index("--ssh"):argv.index("--ssh") + 2]
        argv += flags[flags.index("--ssh"):flags.index("--ssh") + 2]
    code, out, err = call(*argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and why in err, err
    assert not calls.exists(), "a host was reached"
    assert not Path("/tmp/owned").exists()


# --- a hosts file ---------------------------------------------------------------------------------------------


SECRET = "root:$y$j9T$Wm9pT0tZbUhzS2VjcmV0$0pAqs1uEX:19700:0:99999:7:::\n"


@pytest.mark.parametrize("text", [SECRET, "db1 sdb\n" + SECRET, "db1 " + SECRET, "db1 sdb -p " + SECRET,
                                  "db1 sdb -x " + SECRET, "db1 sdb -i " + SECRET, SECRET * 3000],
                         ids=["first", "second", "device", "port", "option", "key", "large"])
def test_a_file_that_is_no_hosts_file_is_never_echoed(tmp_path, text):
    f = tmp_path / "shadow"
    f.write_text(text)
    f.chmod(0o600)
    code, out, err = call("compare", "--hosts", str(f), "sdb", "--schedulers", "none,bfq", "--job",
                          "randread-q16t2", "--ssh", "/bin/false")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "line " in err or "larger than" in err or "lines" in err, err
    assert not any(w in err for w in ("$y$", "j9T", "Wm9pT0", "19700", "99999", ":::")), err


@pytest.mark.parametrize(("make", "why"), [
    (lambda p: p.write_bytes(b"db1 sdb\n\xff\xfe\n"), "not UTF-8 text"),
    (lambda p: p.write_text("# x\n" * 1001), "more than 1000 lines"),
    (lambda p: p.write_text("db1 sdb\n" + " " * (64 << 10)), "larger than 64 KiB"),
    (lambda p: os.mkfifo(p), "not a regular file"),
    (lambda p: p.mkdir(), "not a regular file"),
])
def test_a_hosts_file_is_bounded_and_text(tmp_path, make, why):
    f = tmp_path / "hosts"
    make(f)
    code, _out, err = call("compare", "--hosts", str(f), "sdb", "--schedulers", "none,bfq", "--job",
                           "randread-q16t2", "--ssh", "/bin/false")
    assert code == 2 and why in err and len(err.strip().splitlines()) == 1, err


# --- any number ------------------------------------------------------------------------------------------------


def raw_numbers() -> st.SearchStrategy[str]:
    """Any number as JSON text, and the texts Python's reader takes beyond JSON."""
    return st.one_of(st.integers(min_value=-(10**500), max_value=10**500).map(str),
                     st.floats(allow_nan=True, allow_infinity=True).map(json.dumps),
                     st.sampled_from(["1e999", "-0", "1e-400", "0.0", "-0.0", "5e-324", "1e15", "1.0000001e15"]))


PLACES = [("end", "start"), ("end", "end"), ("end", "metrics.dev_iops"), ("end", "metrics.cpu_usr"),
          ("bye", "switches.0.0"), ("ready", "started")]


@settings(max_examples=400, deadline=None)
@given(raw_numbers(), st.sampled_from(PLACES))
def test_any_number_in_an_answer_decodes_or_is_one_sentence(raw, place):
    verb, path = place
    answers = {"end": {"ok": True, "start": 1.0, "end": 2.0, "metrics": {"dev_iops": 5.0, "cpu_usr": 1.0},
                       "drift": None},
               "bye": {"ok": True, "bye": True, "switches": [[0.5, "none"]]},
               "ready": {"ok": True, "kernel": "6.1", "machine": "x86_64", "host": "h", "device": {"name": "sdb"},
                         "original": {"scheduler": "none"}, "started": 1.0,
                         "target": {"device": "sdb", "path": "/dev/sdb", "kind": "device", "note": ""}}}
    from fake_host import patched

    try:
        answer = json.loads(patched(answers[verb], {path: raw}))
    except ValueError:
        return  # not JSON: the link refuses it before the decoder (test_lockstep covers it)
    got = read_answer({"end": Window, "bye": Bye, "ready": Ready}[verb], answer)
    if isinstance(got, str):
        assert got and "\n" not in got and len(got) < 200 and not any(w in got for w in PYTHON_WORDS), got
    else:
        numbers = [got.start, got.end, *got.metrics.as_metrics().values()] if verb == "end" else (
            [t for t, _ in got.switches] if verb == "bye" else [got.started])
        assert all(0 <= x <= 1e15 for x in numbers)


INDEPENDENT = ["runs.1.start", "runs.1.end", "runs.1.metrics.iops", "runs.1.metrics.cpu_usr", "switches.0.0",
               "started", "repeat", "runs.1.index"]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=raw_numbers(), place=st.sampled_from(PLACES + [("result", p) for p in INDEPENDENT]))
def test_any_number_from_a_host_is_a_run_a_failed_host_or_a_refusal(fleet, raw, place):
    """Through the protocol: whatever number a host sends, where it sends it (a lockstep answer, an independent
    host's compare), the fleet ends in a result (the host done with all its runs, or failed with its reason) and
    never a traceback."""
    verb, path = place
    code, doc, err = fleet({"h1": {}, "h2": {verb: {path: raw}}}, *(["--independent"] if verb == "result" else []))
    assert doc is not None and code in (0, 1)
    state, reason = status(doc)["h2"]
    if state == "failed":
        assert reason and not any(w in reason for w in PYTHON_WORDS) and code == 1, reason
        assert doc["pooled"] is None  # one host left: nothing to pool, and the exit says so
    else:
        # A figure a ratio cannot take (a zero IOPS) leaves the host done and the fleet unjudged: exit 1, said first.
        assert state == "done" and (code == 0 or "iosched: cannot judge" in err), (reason, err)
        host = next(h for h in doc["hosts"] if h["host"] == "h2")
        assert len(host["result"]["runs"]) == 4  # every run kept


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["cpu_model", "device", "device_model", "firmware", "fill", "steady", "x"]),
                       st.one_of(st.none(), st.text(max_size=30), st.integers(), st.lists(st.integers(), max_size=2))))
def test_a_ready_answers_conditions_decode_or_are_one_sentence(conditions):
    """What a host says it measures under (its CPU, its device's model and firmware) is outside input too."""
    answer = {"ok": True, "kernel": "6.1", "machine": "x86_64", "host": "h", "device": {"name": "sdb"},
              "original": {"scheduler": "none"}, "started": 1.0, "conditions": conditions,
              "target": {"device": "sdb", "path": "/dev/sdb", "kind": "device", "note": ""}}
    got = read_answer(Ready, answer)
    if isinstance(got, str):
        assert got and "\n" not in got and len(got) < 200 and not any(w in got for w in PYTHON_WORDS), got
    else:
        assert got.conditions is not None and got.conditions.device == conditions["device"]
        assert got.conditions.firmware == conditions.get("firmware")
