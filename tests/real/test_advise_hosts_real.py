"""`advise --hosts` over three "hosts": the fleet tests' network namespaces (test_fleet_real.py ``host_namespaces``:
veth pairs, an sshd each), each with its own loop device, each host's own iosched running the whole advice.

One host disagrees by design: the command each host times (`--cmd`) stands for a workload whose time follows its
device's scheduler, and on hosts 1 and 2 bfq makes it ten times as short while on host 3 it doubles it (wide
enough that a loaded machine's jitter does not blur it) — as the same
question can come out otherwise on a host whose disk or load differs. The command reads the host's own device's
scheduler from sysfs, as the kernel has it while that host's iosched tests it. The hosts' devices name no model, so
all three are pooled as one; host 3 is named with its own figure beside the pooled one, the pool cannot tell (the
hosts disagree), and `advise --hosts` exits 1 as `advise` does when it cannot decide."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from schema_support import valid
from test_fleet_real import host_namespaces

from conftest import need_real, one_sentence_exit_2, run_cli


def test_three_hosts_pool_as_one_model_and_the_host_that_disagrees_is_named(make_loop, tmp_path):
    need_real("setpriv", "sshd", "ssh", "ssh-keygen", "ip")
    loops = [make_loop("16M", tmp_path / f"disk{n}") for n in range(3)]
    before = [Path(f"/sys/block/{lp.name}/queue/scheduler").read_text() for lp in loops]
    probe = tmp_path / "probe.sh"
    cases = "".join(f"  *-{n}) dev={lp.name}; with_bfq={'0.4' if n == 3 else '0.02'} ;;\n"
                    for n, lp in enumerate(loops, 1))
    probe.write_text("#!/bin/sh\n# this host's device, and how long the work takes under bfq (0.2 s otherwise)\n"
                     f'case "$(ip netns identify)" in\n{cases}  *) exit 3 ;;\nesac\n'
                     'if grep -q "\\[bfq\\]" "/sys/block/$dev/queue/scheduler"; then sleep "$with_bfq"; '
                     "else sleep 0.2; fi\n")
    probe.chmod(0o755)
    with host_namespaces(tmp_path, 3) as (addresses, ssh):
        hosts = tmp_path / "hosts"
        hosts.write_text("".join(f"{a} {lp.name}\n" for a, lp in zip(addresses, loops, strict=True)))
        iosched = str(Path(sys.executable).with_name("iosched"))
        out = run_cli("advise", loops[0].name, "--hosts", str(hosts), "--goal", "throughput", "--candidates", "bfq",
                      "--cmd", str(probe), "--settle", "0", "--yes", "--remote-iosched", iosched, "--ssh", str(ssh),
                      "--json", "--save", str(tmp_path / "advice.json"), timeout=120)
    assert out.returncode == 1, out.stderr[-3000:]
    doc = json.loads(out.stdout)
    valid("advice.schema.json", doc)
    assert doc["kind"] == "advice_fleet"
    assert [h["status"] for h in doc["hosts"]] == ["done"] * 3, [h["reason"] for h in doc["hosts"]]
    own = {h["host"]: h["result"]["advice"][0] for h in doc["hosts"]}
    h1, h2, h3 = addresses
    assert own[h1]["outcome"] == own[h2]["outcome"] == "switch" and own[h1]["recommended"] == "bfq", [
        (g["outcome"], g["reasons"], g["effect"]) for g in own.values()]
    assert own[h3]["outcome"] != "switch" and own[h3]["estimate"]["ratio"] > 1.2  # bfq slower there
    # One model (the loop devices name none): the three pooled together, host 3 named with its own figure.
    (model,) = doc["models"]
    assert model["model"] is None and model["hosts"] == addresses
    (goal,) = model["goals"]
    assert goal["agree"] is False and goal["differ"] == [h3]
    odd = next(a for a in goal["hosts"] if a["host"] == h3)
    assert odd["variant"] == "bfq" and odd["ratio"] > 1.2 and not odd["agrees"]
    assert goal["pooled"]["outcome"] == "cannot-tell" and model["keep"] == []
    # Every device back as it was.
    assert [Path(f"/sys/block/{lp.name}/queue/scheduler").read_text() for lp in loops] == before
    # `report` decides every host again and pools again, in words: the disagreement before the answer.
    shown = run_cli("report", str(tmp_path / "advice.json"), timeout=60)
    assert shown.returncode == 1, shown.stderr
    text = shown.stdout
    assert "devices that name no model: 3 hosts" in text
    named = text.index(f"{h3} says ")
    assert text.index("the hosts disagree: 2 of 3 say switch to bfq") < named < text.index("pooled over the hosts:")
    assert "bfq wall time +" in text[named:].splitlines()[0], text


def test_what_cannot_reach_the_hosts_is_refused_before_any_host(make_loop, tmp_path):
    loop = make_loop("16M")
    hosts = "10.255.255.1,10.255.255.2"  # never reached: every refusal comes first
    assert "add --yes" in one_sentence_exit_2("advise", loop.name, "--hosts", hosts)
    assert "--persist does not apply" in one_sentence_exit_2("advise", loop.name, "--hosts", hosts, "--yes",
                                                             "--persist")
    assert "--dir does not apply" in one_sentence_exit_2("advise", loop.name, "--hosts", hosts, "--yes", "--dir",
                                                         str(tmp_path))
    assert "catalog jobs" in one_sentence_exit_2("advise", loop.name, "--hosts", hosts, "--yes", "--job",
                                                 str(tmp_path / "mine.fio"))
    assert "add --hosts" in one_sentence_exit_2("advise", loop.name, "--lockstep", "--yes")
    assert "timed by each host's own iosched" in one_sentence_exit_2("advise", loop.name, "--hosts", hosts, "--yes",
                                                                      "--lockstep", "--cmd", "true")
    assert "beside a write flood" in one_sentence_exit_2("advise", loop.name, "--hosts", hosts, "--yes", "--lockstep",
                                                         "--job", "4k-randread", "--goal", "interactive")


@pytest.mark.plumbing  # its figures decide nothing asserted here: runs beside another test (tests/run)
def test_lockstep_on_two_hosts_plans_then_runs_each_goal_together(make_loop, tmp_path):
    """`--lockstep`: each host plans (nothing changed), then the goal's catalog job runs every variant on both hosts
    together through each host's fio server; each host's runs become its planned test's, decided by the same rule,
    pooled as one model; `report` decides both again to the same answers, and both devices are back."""
    need_real("fio", "setpriv", "sshd", "ssh", "ssh-keygen", "ip")
    loops = [make_loop("64M", tmp_path / f"disk{n}") for n in range(2)]
    before = [Path(f"/sys/block/{lp.name}/queue/scheduler").read_text() for lp in loops]
    with host_namespaces(tmp_path, 2) as (addresses, ssh):
        hosts = tmp_path / "hosts"
        hosts.write_text("".join(f"{a} {lp.name}\n" for a, lp in zip(addresses, loops, strict=True)))
        iosched = str(Path(sys.executable).with_name("iosched"))
        out = run_cli("advise", loops[0].name, "--hosts", str(hosts), "--lockstep", "--goal", "throughput",
                      "--candidates", "bfq", "--runtime", "0.5", "--settle", "0", "--yes", "--remote-iosched", iosched,
                      "--ssh", str(ssh), "--json", "--save", str(tmp_path / "advice.json"), timeout=240)
    assert out.returncode in (0, 1), out.stderr[-3000:]
    assert out.stdout, out.stderr[-3000:]
    doc = json.loads(out.stdout)
    valid("advice.schema.json", doc)
    assert doc["kind"] == "advice_fleet" and doc["mode"] == "lockstep"
    assert [h["status"] for h in doc["hosts"]] == ["done"] * 2, [h["reason"] for h in doc["hosts"]]
    orders = []
    for h in doc["hosts"]:
        advice = h["result"]
        assert advice["status"] == "final" and advice["advice"], advice["notes"]
        (test,) = advice["tests"]
        runs = test["result"]["runs"]
        assert {r["variant"] for r in runs} == set(test["variants"]) and len(runs) == 2 * test["runs"]
        assert test["looked"] and test["looked"][-1] <= len(runs)
        assert "lockstep" in test["result"]["notes"][0]  # the fleet's compare, not the host's own advise
        assert advice["conditions"]["device"] == h["device"]  # what the runs were measured under, from fleet-host
        orders.append([r["variant"] for r in runs])
    # In lockstep: the same variants in step on both hosts (each host's runs are on its own session's clock).
    assert orders[0] == orders[1]
    (model,) = doc["models"]
    assert model["hosts"] == addresses and len(model["goals"]) == 1
    assert [Path(f"/sys/block/{lp.name}/queue/scheduler").read_text() for lp in loops] == before
    shown = run_cli("report", str(tmp_path / "advice.json"), "--json", timeout=60)
    assert shown.returncode == out.returncode, shown.stderr
    again = json.loads(shown.stdout)
    assert [h["result"]["advice"][0]["outcome"] for h in again["hosts"]] == \
        [h["result"]["advice"][0]["outcome"] for h in doc["hosts"]]
    assert again["models"][0]["goals"][0]["pooled"] == model["goals"][0]["pooled"]
    words = run_cli("report", str(tmp_path / "advice.json"), timeout=60).stdout
    assert words.startswith("advise on 2 hosts in lockstep (each goal's test on every host together): 2 finished")
