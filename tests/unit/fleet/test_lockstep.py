"""The lockstep fleet's two ends as far as no host is needed: the host end's answers to any line (a refusal, never
a traceback, nothing changed), the controller's reading of a host's answers (anything else loses the host), and
the job file each host's fio server is sent (the catalog's options through the job-file allow-list)."""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosched.cli import fleet as fleet_cli
from iosched.core.base.errors import BadInput
from iosched.core.documents.document import CompareDoc
from iosched.core.documents.params import parse_variants
from iosched.core.documents.saved import read_experiment
from iosched.core.experiment.slots import run_slots
from iosched.core.fleet.fleet import Host, HostRun
from iosched.core.fleet.fleet_host import BusyWindow, HostEnd, clean_stale_sessions, serve_lines, socket_path
from iosched.core.fleet.host_answers import Applied
from iosched.core.fleet.lockstep import (
    ANSWER_S,
    InLockstep,
    Link,
    LinkLost,
    Lockstep,
    LockstepCourse,
    _check_run,
    _each,
    attach,
    idle_s,
    job_file_text,
)
from iosched.core.kernel.procfs import DiskCounters
from iosched.core.live.sampler import Sample
from iosched.core.load.jobs import CATALOG, parse_job_file


def host_end() -> HostEnd:
    return HostEnd("loop0", parse_variants("none,bfq"), CATALOG["randread-q16t2"], "0123456789abcdef")


@pytest.mark.parametrize("line", ["", "apply", "apply 2", "apply -1", "apply 0 1", "begin now", "end", "end x",
                                  "end 1e9", "x" * 500, "restore", "apply 0; reboot", "apply \u00b2", "end \u00b3",
                                  "end 1234567890123", "restart now"])
def test_a_line_that_is_not_the_protocols_is_refused(line):
    answer = host_end().answer(line)
    assert answer["ok"] is False and answer["error"]


def test_the_order_of_a_run_is_kept():
    end = host_end()
    assert "before the device is held" in end.answer("apply 0")["error"]  # nothing held: nothing changes
    assert "before a variant" in end.answer("begin")["error"]
    assert "before begin" in end.answer("end 10")["error"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_line_gets_an_answer(line):
    answer = host_end().answer(line)
    assert set(answer) == {"ok", "error"} and answer["ok"] is False


@pytest.mark.parametrize("session", ["", "../../etc", "0123", "ABCDEF0123456789", "0123456789abcdef/x"])
def test_a_session_name_is_hex_only(session):
    end = HostEnd("loop0", parse_variants("none,bfq"), CATALOG["randread-q16t2"], session)
    with pytest.raises(BadInput, match="hex"):
        end.check()


def test_a_host_whose_controller_went_silent_puts_its_device_back_by_itself(capfd):
    # A controller that vanished without closing the session: its lines stop, the input never ends.
    r, w = os.pipe()
    silent = os.fdopen(r)
    said: list[str] = []
    try:
        assert serve_lines(None, iter(silent.readline, ""), said.append, idle_s=0.3) is False  # type: ignore[arg-type]
    finally:
        os.close(w)
        silent.close()
    assert said == [] and "no word from the controller for 0 s" in capfd.readouterr().err
    # Lines that keep coming, each within the bound, are answered and end with bye.
    end = HostEnd("loop0", parse_variants("none,bfq"), CATALOG["randread-q16t2"], "0" * 16)
    assert serve_lines(end, iter(["junk\n", "bye\n"]), said.append, idle_s=0.3) is True
    assert len(said) == 1 and '"ok":false' in said[0]


def test_the_idle_bound_outlasts_the_longest_run():
    plan = Lockstep(parse_variants("none,bfq"), "none,bfq", CATALOG["randread-q16t2"], 30.0, 3, 2.0, "iosched",
                    "ssh", 0, {}, False, 0.05, "iops")
    assert idle_s(plan) > 30.0 * 3 + 120 + 2.0 + 4 * ANSWER_S


def test_every_host_forwards_to_the_same_place():
    assert str(socket_path("0123456789abcdef")) == "/run/iosched/fleet/0123456789abcdef/fio.sock"


def test_restore_removes_only_the_folders_of_sessions_whose_host_end_is_gone(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()

    def session(name: str, owner: str | None, *extra: str) -> Path:
        d = tmp_path / name
        d.mkdir()
        for f in ("fio.sock", "server.log", *extra):
            (d / f).write_text("")
        if owner is not None:
            (d / "owner").write_text(owner)
        return d

    gone = session("a" * 16, f"{dead.pid}\n")
    live = session("b" * 16, f"{os.getpid()}\n")
    unowned = session("c" * 16, None)
    odd_owner = session("d" * 16, "-1")
    holds_more = session("e" * 16, f"{dead.pid}\n", "notes.txt")
    not_ours = session("not-a-session", f"{dead.pid}\n")
    assert clean_stale_sessions(dry_run=True, base=tmp_path) == [str(gone)] and gone.is_dir()
    assert clean_stale_sessions(base=tmp_path) == [str(gone)] and not gone.exists()
    assert all(d.is_dir() for d in (live, unowned, odd_owner, holds_more, not_ours))
    assert clean_stale_sessions(base=tmp_path / "none") == []


def link_to(script: str) -> Link:
    proc = subprocess.Popen(["sh", "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    return attach(HostRun(Host("h1", "loop0")), Path("/nonexistent"), proc, lambda host, line: None)


def test_what_a_host_says_is_an_answer_or_the_host_is_lost():
    link = link_to("""printf 'junk\\n{"ok": false, "error": "no such scheduler"}\\n[1]\\n{"ok": true, "x": 1}\\n'; """
                   """echo 'iosched: the device vanished' >&2; exit 2""")
    with pytest.raises(LinkLost, match="not an answer"):
        link.exchange(None)
    with pytest.raises(LinkLost, match="refused: no such scheduler"):
        link.exchange(None)
    with pytest.raises(LinkLost, match="not an answer"):
        link.exchange(None)
    assert link.exchange(None) == {"ok": True, "x": 1}
    with pytest.raises(LinkLost, match="exited with status 2: the device vanished"):
        link.exchange(None)


def test_a_host_that_says_nothing_in_time_is_lost():
    link = link_to("sleep 5")
    with pytest.raises(LinkLost, match="no answer"):
        link.exchange(None, timeout=0.2)
    link.proc.kill()
    link.proc.wait()


def test_a_cut_answer_loses_the_host():
    link = link_to("printf '{\"ok\": true'; exit 255")
    with pytest.raises(LinkLost, match="SSH session was lost"):
        link.exchange(None)


@pytest.mark.parametrize("name", sorted(n for n, j in CATALOG.items() if not j.cgroup_weights))
def test_each_hosts_job_file_passes_the_allow_list(name):
    text = job_file_text(CATALOG[name], 2.0, "/dev/sdb")
    parsed = parse_job_file(text.replace("filename=/dev/sdb\n", ""), name)  # the target is ours alone
    assert "filename=/dev/sdb" in text and "runtime=2" in text
    assert text.startswith("[global]\nthread=1\n")  # jobs stay in the server's process group
    assert parsed.writes == CATALOG[name].writes


class Looks:
    """A monitor whose snapshots are the given device IO counts, one per look, a second apart."""

    def __init__(self, counts: list[int]) -> None:
        self.counts = iter(counts)
        self.t = 0.0

    def snapshot(self) -> Sample:
        self.t += 1.0
        zero = DiskCounters(*[0] * len(DiskCounters._fields))
        return Sample(self.t, {"loop0": zero._replace(reads=next(self.counts))}, {})


def test_a_runs_window_is_the_span_its_device_was_busy(monkeypatch):
    monkeypatch.setattr(BusyWindow, "STEP_S", 3600.0)  # the test takes the looks itself
    w = BusyWindow(Looks([100, 100, 100, 150, 400, 400, 400]), "loop0")  # type: ignore[arg-type]
    for _ in range(5):
        w._look()
    s0, s1 = w.close()
    assert (s0.time, s1.time) == (3.0, 5.0)  # from the look before the first IO to the one that saw the last
    idle = BusyWindow(Looks([7, 7, 7]), "loop0")  # type: ignore[arg-type]
    s0, s1 = idle.close()
    assert (s0.time, s1.time) == (1.0, 2.0)  # no IO: the whole span


def test_an_answer_of_the_wrong_shape_fails_its_host_only():
    link = link_to("""printf '{"ok": true}\\n'; sleep 5""")
    _each([link], lambda lk: lk.ask(None, Applied).config)
    assert link.run.status == "failed" and "not understood" in link.run.reason
    link.proc.kill()
    link.proc.wait()


def saved_compare() -> CompareDoc:
    doc = read_experiment(json.loads((Path(__file__).parents[2] / "data/saved/experiment.json").read_text()), "x")
    assert isinstance(doc, CompareDoc)
    return doc


def test_a_run_that_would_not_read_back_fails_its_host_before_it_is_kept():
    link = link_to("true")
    link.run.doc = saved_compare()
    run = replace(link.run.doc.runs[0], config={"scheduler": 5})
    with pytest.raises(LinkLost, match="do not read as a compare"):
        _check_run(link, run)
    assert _check_run(link, link.run.doc.runs[0]) == link.run.doc.runs[0]  # a run as iosched writes it passes


def test_hosts_that_cannot_be_reached_keep_their_saved_runs(tmp_path):
    saved = saved_compare()
    plan = Lockstep(parse_variants("none,mq-deadline"), "none,mq-deadline", CATALOG["randread-q16t2"], 1.0, 3, 0.0,
                    ssh=str(tmp_path / "no-such-ssh"), first=4, saved={"h1": saved})
    heard = []
    lockstep = InLockstep([Host("h1", "loop0"), Host("h2", "loop1")], plan, lambda h, line: None)
    runs = run_slots(LockstepCourse(lockstep), lockstep, lockstep.runs, lambda runs, save: save and heard.append(runs))
    assert [r.status for r in runs] == ["failed", "failed"] and "not found: " in runs[0].reason
    assert runs[0].doc is saved and runs[1].doc is None and heard == []  # nothing ran: nothing saved over the file


def test_resume_goes_on_after_the_last_slot_any_host_finished():
    doc = json.loads((Path(__file__).parents[2] / "data/saved/fleet.json").read_text())
    doc["repeat"] = 3
    a, b = (h["result"]["runs"] for h in doc["hosts"][:2])
    del a[3:]  # slots 0-2
    b[1:] = [{**b[1], "index": 3}, {**b[2], "index": 4}]  # lost after slot 0, back for slots 3-4
    for h in doc["hosts"][:2]:
        h["result"]["repeat"], h["result"]["status"] = 3, "cancelled"
        h["result"]["order"] = ["none", "mq-deadline", "mq-deadline", "none", "none", "mq-deadline"]
    args = argparse.Namespace(resume="f", schedulers=None, job=None, repeat=None, runtime=None, size=None,
                              settle=1.0, until_verdict=False, max_runs=8)
    first = fleet_cli.resumed(args, doc)
    assert first == 5 and args.repeat == 3 and args.job == doc["job"]


def stopped_until_verdict(alpha: float, **result: object) -> tuple[dict, argparse.Namespace]:
    """The sample fleet under --until-verdict (boundaries at ``alpha``), stopped after two of its slots, and the
    arguments of a bare --resume of it."""
    from iosched.core.base.encode import encode
    from iosched.core.statistics.verdict import sequential_plan

    doc = json.loads((Path(__file__).parents[2] / "data/saved/fleet.json").read_text())
    doc["until_verdict"], doc["repeat"] = True, 4
    for h in doc["hosts"]:
        if h["result"] is not None:
            del h["result"]["runs"][2:]
            h["result"].update(status="cancelled", repeat=4, sequential=encode(sequential_plan(4, alpha, 2, False)),
                               order=["none", "mq-deadline", "mq-deadline", "none"] * 2, **result)
    args = argparse.Namespace(resume="f", schedulers=None, job=None, repeat=None, runtime=None, size=None,
                              settle=1.0, until_verdict=False, max_runs=8, alpha=0.05, metric=None)
    return doc, args


def test_resume_keeps_the_alpha_the_saved_boundaries_were_set_at():
    doc, args = stopped_until_verdict(0.01)
    with pytest.raises(BadInput, match=r"alpha 0\.01: go on with --alpha 0\.01"):
        fleet_cli.resumed(args, copy.deepcopy(doc))
    args.alpha = 0.01
    first = fleet_cli.resumed(args, copy.deepcopy(doc))
    assert first == 2 and args.until_verdict


def test_resume_watches_the_metric_the_saved_boundaries_watched():
    doc, args = stopped_until_verdict(0.05, primary_metric="mb_s")
    args.metric = "iops"
    with pytest.raises(BadInput, match="boundaries watch mb_s: leave out --metric iops"):
        fleet_cli.resumed(args, copy.deepcopy(doc))
    args.metric = None
    assert fleet_cli.resumed(args, copy.deepcopy(doc)) == 2 and args.metric == "mb_s"


def test_what_a_real_host_end_says_decodes_as_its_declared_answer():
    """The host end's answers (fleet_host.py) and the controller's declared answers (host_answers.py) agree: a
    window of this machine's own sampler, a ready answer as HostEnd.held() makes it, and a bye, each sent through
    the host end's encoder."""
    import time

    from iosched.core.base import encode as documents
    from iosched.core.experiment.runner import sysinfo, window_metrics
    from iosched.core.fleet.fleet_host import encode
    from iosched.core.fleet.host_answers import Bye, Ready, Window, read_answer
    from iosched.core.live.sampler import Sampler
    from iosched.core.load.targets import Target

    sampler = Sampler()
    s0 = sampler.take()
    time.sleep(0.05)
    s1 = sampler.take()
    device = next(iter(s1.disks), "loop0")
    window = {"ok": True, "start": 0.25, "end": 1.5, "metrics": window_metrics(device, s0, s1, 100), "drift": None}
    assert window["metrics"]  # the CPU's figures at least
    ready = {"ok": True, **documents.encode(sysinfo(device, "/")), "original": {"scheduler": "none"},
             "target": Target(device, f"/dev/{device}", "device").to_json(), "started": time.time()}
    bye = {"ok": True, "bye": True, "switches": [(0.1, "bfq"), (3.0, "none")]}
    for tp, answer in ((Window, window), (Ready, ready), (Bye, bye)):
        got = read_answer(tp, json.loads(encode(answer)))
        assert isinstance(got, tp), got


def test_any_fault_in_a_hosts_thread_fails_that_host_and_no_other():
    # What used to end a thread in a traceback (OverflowError from a 400-digit number) and leave its host "done".
    bad, good = link_to("sleep 5"), link_to("sleep 5")

    def work(lk: Link) -> None:
        if lk is bad:
            float(10**400)

    _each([bad, good], work)
    assert bad.run.status == "failed" and "OverflowError" in bad.run.reason
    assert good.run.status == "running"
    for lk in (bad, good):
        lk.proc.kill()
        lk.proc.wait()
