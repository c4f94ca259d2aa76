"""`compare --hosts … --resume FILE`: a saved fleet is read whole and checked against the command line before any
host is reached; whatever is wrong is one sentence, exit 2, and no ssh is started."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from saved_support import assert_one_sentence, call, mutate, saved

HOSTS = "db1 sdb\ndb2 sdb\ndb3 nvme0n1\n"


def resumable(kind: str = "fleet") -> dict:
    """The sample fleet (or 0.1.0's: ``kind`` "0.1.0/fleet"), stopped after two of its four slots."""
    doc = saved(kind)
    for h in doc["hosts"]:
        if h["result"] is not None:
            h["status"], h["result"]["status"] = "cancelled", "cancelled"
            h["result"]["runs"] = h["result"]["runs"][:2]
    return doc


def setup(tmp: Path, doc: object) -> tuple[Path, Path, Path]:
    fleet, hosts, ssh = tmp / "fleet.json", tmp / "hosts", tmp / "ssh"
    fleet.write_text(json.dumps(doc))
    hosts.write_text(HOSTS)
    ssh.write_text(f"#!/bin/sh\necho called >> {tmp / 'ssh-called'}\nexit 255\n")
    ssh.chmod(0o755)
    return fleet, hosts, ssh


def resume(tmp: Path, fleet: Path, hosts: Path, ssh: Path, *extra: str) -> tuple[int, str]:
    code, _out, err = call("compare", "--hosts", str(hosts), "sdb", "--resume", str(fleet), "--ssh", str(ssh),
                           *extra)
    return code, err


@pytest.mark.parametrize(("change", "extra", "why"), [
    (lambda d: d.update(kind="compare"), (), "is not a saved iosched fleet compare"),
    (lambda d: d.update(mode="independent"), (), "ran each host alone"),
    (lambda d: None, ("--repeat", "5"), "--repeat 5 differs from the saved fleet's 2"),
    (lambda d: None, ("--schedulers", "none,bfq"), "differs from the saved fleet's none,mq-deadline"),
    (lambda d: None, ("--independent",), "--resume goes on with a fleet in lockstep"),
    (lambda d: d["hosts"][0].update(host="db9"), (), "--hosts names other hosts"),
    (lambda d: [h["result"]["runs"].extend([{**copy.deepcopy(r), "index": r["index"] + 2}
                                            for r in h["result"]["runs"]]) for h in d["hosts"][:2]], (),
     "has ended"),
])
def test_what_cannot_go_on_is_one_sentence_and_reaches_no_host(tmp_path, change, extra, why):
    doc = resumable()
    change(doc)
    fleet, hosts, ssh = setup(tmp_path, doc)
    before = fleet.read_bytes()
    code, err = resume(tmp_path, fleet, hosts, ssh, *extra)
    assert code == 2 and why in err, err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "ssh-called").exists() and fleet.read_bytes() == before


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutate(resumable()))
def test_a_hostile_saved_fleet_is_refused_before_any_host(tmp_path_factory, doc):
    tmp = tmp_path_factory.mktemp("resume")
    fleet, hosts, ssh = setup(tmp, doc)
    before = fleet.read_bytes()
    code, err = resume(tmp, fleet, hosts, ssh)
    if code == 2 and "is not a saved iosched" in err:
        assert_one_sentence(err, fleet, "fleet compare")
    if code == 2:
        assert not (tmp / "ssh-called").exists() and fleet.read_bytes() == before
    else:  # it read as a fleet that can go on: then its hosts were tried (each refused by this ssh)
        assert code == 1 and (tmp / "ssh-called").exists()
        after = json.loads(fleet.read_text())  # saved again: every run it held is still there
        assert [len(h["result"]["runs"]) if h["result"] else 0 for h in after["hosts"]] == [
            len(h["result"]["runs"]) if h["result"] else 0 for h in doc["hosts"]]


@pytest.mark.parametrize("kind", ["fleet", "0.1.0/fleet"])
def test_unreachable_hosts_on_resume_keep_their_saved_runs(tmp_path, kind):
    fleet, hosts, ssh = setup(tmp_path, resumable(kind))
    code, err = resume(tmp_path, fleet, hosts, ssh)
    assert code == 1, err
    after = json.loads(fleet.read_text())
    assert [h["status"] for h in after["hosts"]] == ["failed"] * 3
    assert [len(h["result"]["runs"]) if h["result"] else 0 for h in after["hosts"]] == [2, 2, 0]
