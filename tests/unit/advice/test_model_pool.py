"""`advise --hosts` pooled per device model, on host advices made of simulated runs: hosts that agree are said to,
one whose runs say otherwise is named with its own figure beside the pooled one (never pooled away), and said before
the model's one answer; hosts of another model are pooled apart; the rule that keeps the answer matches the model;
the document is valid against the published schema and `report` decides it again to the same answer."""

from __future__ import annotations

import json

import pytest
from advice_support import SimulatedRunner, nvme_disk
from schema_support import valid

from iosched.core.advice.hosts import decided_hosts, host_entry, pooled
from iosched.core.advice.model_pool import pool_models
from iosched.core.advice.request import AdviceRequest, prepare_advice
from iosched.core.base.decode import decode
from iosched.core.base.encode import encode
from iosched.core.documents.document import AdviceDoc, AdviceHostDoc, FleetAdviceDoc
from iosched.core.documents.params import parse_candidates
from iosched.core.experiment import service
from iosched.core.fleet.fleet import Host, HostRun
from iosched.core.present.hosts_advice_report import hosts_advice_lines, undecided
from iosched.core.present.worded import worded_json

MODEL = "Samsung_SSD_970_EVO_1TB"


def advice_on(tree, effect: float, noise: float = 0.03, seed: int = 1) -> AdviceDoc:
    """One host's advice on its fixture NVMe drive: kyber's IOPS ``effect`` x the current setting's."""
    nvme_disk(tree)
    req = AdviceRequest("nvme0n1", goals=("throughput",), candidates=tuple(parse_candidates("kyber")), runtime=1.0,
                        settle=0.0, root=tree.root)
    prep = prepare_advice(req)
    runner = SimulatedRunner({"kyber": {"iops": effect, "mb_s": effect}}, noise=noise, seed=seed)
    outcome = service.run(prep.plan_to_run(runner, None), None, lambda e: None)
    assert outcome.status == "final"
    return outcome.doc


def host(name: str, doc: AdviceDoc, model: str | None = MODEL, firmware: str | None = "2B2QEXE7") -> AdviceHostDoc:
    return AdviceHostDoc(host=name, device="nvme0n1", status="done", reason=None, scheduler_before="none",
                         scheduler_after="none", put_back="nvme0n1 back on none", model=model, firmware=firmware,
                         result=doc)


def fleet(hosts: list[AdviceHostDoc]) -> FleetAdviceDoc:
    return pooled(FleetAdviceDoc(kind="advice_fleet", started=1.0, finished=2.0, goals="throughput", alpha=0.05,
                                 hosts=hosts, models=[]))


@pytest.fixture(scope="module")
def advices(tmp_path_factory):
    from fixtree import FixTree

    def made(effect: float, seed: int) -> AdviceDoc:
        return advice_on(FixTree(tmp_path_factory.mktemp("tree")), effect, seed=seed)

    return {"better": [made(1.3, 1), made(1.3, 2)], "same": [made(1.0, 3), made(1.0, 4)]}


def test_hosts_that_agree_are_said_to_before_the_one_answer(advices):
    doc = fleet([host("db1", advices["better"][0]), host("db2", advices["better"][1])])
    (m,) = doc.models
    (g,) = m.goals
    assert g.agree and g.differ == [] and [a.host for a in g.hosts] == ["db1", "db2"]
    assert all(a.outcome == "switch" and a.recommended == "kyber" and 1.2 < (a.ratio or 0) < 1.4 for a in g.hosts)
    assert g.pooled is not None and 1.2 < g.pooled.estimate.ratio < 1.4
    lines = hosts_advice_lines(doc)
    title = next(i for i, line in enumerate(lines) if line.startswith(f"model {MODEL}, firmware 2B2QEXE7: 2 hosts"))
    agree = next(i for i, line in enumerate(lines) if "both hosts agree: switch to kyber" in line)
    answer = next(i for i, line in enumerate(lines) if "recommendation for this model:" in line)
    assert title < agree < answer, lines
    assert lines[1].startswith("decided by a rule fixed before the first run")  # the rule, said first


def test_a_host_whose_runs_say_otherwise_is_named_with_its_figure(advices):
    doc = fleet([host("db1", advices["better"][0]), host("db2", advices["better"][1]),
                 host("db3", advices["same"][0])])
    (m,) = doc.models
    (g,) = m.goals
    assert not g.agree and g.differ == ["db3"]
    (odd,) = [a for a in g.hosts if a.host == "db3"]
    assert odd.outcome == "keep-equal" and odd.variant == "kyber" and 0.9 < (odd.ratio or 0) < 1.1
    assert g.pooled is not None and g.pooled.estimate is not None
    # Never pooled away: it is in the pool (its estimate pulls the pooled one down) and in the words.
    assert g.pooled.estimate.ratio < min(a.ratio for a in g.hosts if a.host != "db3")
    lines = hosts_advice_lines(doc)
    disagree = next(i for i, line in enumerate(lines) if "the hosts disagree: 2 of 3 say switch to kyber" in line)
    named = lines[disagree + 1]
    assert named.startswith("    db3 says keep none: kyber IOPS ") and named.endswith("pooled"), named
    assert disagree < next(i for i, line in enumerate(lines) if "pooled over the hosts:" in line)


def test_a_tie_names_every_host_and_a_third_host_settles_it(advices):
    doc = fleet([host("a", advices["better"][0]), host("b", advices["same"][0])])
    (g,) = doc.models[0].goals
    assert not g.agree
    assert g.pooled is not None and g.pooled.outcome == "cannot-tell"  # two hosts apart: the pool cannot tell
    assert sorted(g.differ) == ["a", "b"]  # no answer most hosts gave: each is named
    assert "the hosts disagree, no answer shared by most" in "\n".join(hosts_advice_lines(doc))
    assert undecided(doc)


def test_models_are_pooled_apart_and_the_rule_matches_the_model(advices):
    doc = fleet([host("db1", advices["better"][0]), host("db2", advices["better"][1]),
                 host("web1", advices["same"][0], model="WDC_WD10EZEX", firmware=None)])
    assert [m.model for m in doc.models] == [MODEL, "WDC_WD10EZEX"]
    ssd, hdd = doc.models
    assert ssd.hosts == ["db1", "db2"] and ssd.goals[0].agree
    (k,) = ssd.keep
    assert k.rule == ('ACTION=="add|change", SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", '
                      f'ENV{{ID_MODEL}}=="{MODEL}", ENV{{ID_REVISION}}=="2B2QEXE7", TEST=="queue/scheduler", '
                      'ATTR{queue/scheduler}="kyber"')
    assert k.scope.startswith(f"every disk of model {MODEL} on firmware 2B2QEXE7")
    assert k.commands == ["db1: iosched set nvme0n1 kyber", "db2: iosched set nvme0n1 kyber"]
    assert hdd.hosts == ["web1"] and hdd.goals[0].why == "one-host" and hdd.keep == []
    assert hdd.goals[0].pooled is not None and hdd.goals[0].pooled.outcome == "keep-equal"
    assert not undecided(doc)


@pytest.mark.parametrize("model", [None, 'Evil" RUN+="/bin/sh', "glob*model", "new\nline"])
def test_a_model_that_cannot_stand_in_a_rule_makes_none(advices, model):
    doc = fleet([host("a", advices["better"][0], model=model), host("b", advices["better"][1], model=model)])
    (k,) = doc.models[0].keep
    assert k.rule is None and k.warnings and k.warnings[0].startswith("no rule for the model")
    assert all("RUN" not in line for line in hosts_advice_lines(doc) if "ATTR{" in line)


def test_a_failed_host_is_said_and_the_advice_is_undecided(advices):
    failed = AdviceHostDoc(host="db9", device="sdb", status="failed", reason="the SSH session was lost",
                           scheduler_before=None, scheduler_after=None, put_back="its device could not be checked",
                           model=None, firmware=None, result=None)
    doc = fleet([host("db1", advices["better"][0]), host("db2", advices["better"][1]), failed])
    assert [m.hosts for m in doc.models] == [["db1", "db2"]]
    assert "db9: failed: the SSH session was lost (not pooled)" in hosts_advice_lines(doc)
    assert undecided(doc)


def test_saved_and_read_back_it_decides_the_same(advices):
    doc = fleet([host("db1", advices["better"][0]), host("db2", advices["better"][1]),
                 host("db3", advices["same"][0])])
    saved = json.loads(json.dumps(worded_json(doc)))
    valid("advice.schema.json", saved)
    back = decided_hosts(decode(FleetAdviceDoc, saved))
    assert [[g.differ for g in m.goals] for m in back.models] == [[["db3"]]]
    assert back.models[0].goals[0].pooled.outcome == doc.models[0].goals[0].pooled.outcome
    # One host's advice still reads (and validates) as an advice: old saves stay readable.
    valid("advice.schema.json", json.loads(json.dumps(encode(advices["same"][0]))))


def test_a_host_answer_is_read_as_a_saved_advice_and_decided_again(advices):
    answer = json.loads(json.dumps(worded_json(advices["better"][0])))
    entry = host_entry(HostRun(Host("db1", "nvme0n1"), status="done", answer=answer))
    assert entry.status == "done" and entry.result is not None and entry.result.advice[0].recommended == "kyber"
    # Its conclusion is never taken from its words: a forged answer without the runs to back it gives none.
    forged = json.loads(json.dumps(answer))
    for t in forged["tests"]:
        t["result"]["runs"] = t["result"]["runs"][:1]
        t["looked"] = []
    entry = host_entry(HostRun(Host("db1", "nvme0n1"), status="done", answer=forged))
    assert entry.status == "failed" or (entry.result is not None and entry.result.advice == [])
    bad = host_entry(HostRun(Host("db2", "nvme0n1"), status="done", answer={"kind": "advice", "tests": 3}))
    assert bad.status == "failed" and bad.reason.startswith("its advice did not read back")
    assert pool_models([bad]) == []
