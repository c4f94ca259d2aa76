"""Workloads with roles on a real loop device: the interactive reader under a write flood judged on its own
latency, per-role figures that are fio's own, and a role the workload lacks refused before anything runs."""

from __future__ import annotations

import json

import pytest

from conftest import Loop, need_real, one_sentence_exit_2, run_cli


def test_the_foreground_is_judged_apart_and_bfq_serves_it_first(loopdev: Loop):
    """The issue's acceptance: judged on the foreground's median (about 7.7 ms under none, 0.04 ms under bfq)."""
    need_real("fio")
    out = run_cli("compare", loopdev.name, "--schedulers", "none,bfq", "--job", "interactive-under-writes", "--raw",
                  "--runtime", "3", "--repeat", "4", "--settle", "0.5", "--metric", "fg:clat_p50_us", "--json",
                  timeout=240)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    (primary,) = [c for c in doc["comparisons"] if c["primary"]]
    assert primary["metric"] == "fg:clat_p50_us" and doc["primary_metric"] == "fg:clat_p50_us"
    assert primary["significant"] and primary["ratio"] < 0.5, primary  # the reader waits far less under bfq
    assert "bfq:" in primary["verdict"] and "lower foreground p50 latency than none" in primary["verdict"]
    metrics = {c["metric"] for c in doc["comparisons"]}
    assert {"iops", "clat_p50_us", "bg:mb_s", "fg:clat_p99_us", "fg:share"} <= metrics  # pooled ones stay
    assert doc["workload"]["job"]["roles"].keys() == {"fg", "bg"}
    for run in doc["runs"]:  # each role's figures are fio's own for that section, to 0.1%
        jobs = {j["jobname"]: j for j in run["fio"]["jobs"]}
        assert jobs.keys() == {"fg", "bg"}
        fg_p50 = jobs["fg"]["read"]["clat_ns"]["percentile"]["50.000000"] / 1000
        assert run["metrics"]["fg:clat_p50_us"] == pytest.approx(fg_p50, rel=1e-3)
        assert run["metrics"]["bg:mb_s"] == pytest.approx(jobs["bg"]["write"]["bw_bytes"] / 1e6, rel=1e-3)
        assert run["metrics"]["fg:iops"] == pytest.approx(jobs["fg"]["read"]["iops"], rel=1e-3)


@pytest.mark.plumbing
def test_role_io_counts_add_up_to_the_device(loopdev: Loop):
    """4 KiB reads are never split or merged on their way down: the roles' IOs are the device's."""
    need_real("fio")
    out = run_cli("compare", loopdev.name, "--schedulers", "none,mq-deadline", "--job", "io-priority", "--raw",
                  "--runtime", "2", "--repeat", "1", "--settle", "0", "--json", timeout=120)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["primary_metric"] == "be0:share"  # the job's own metric when none is named
    for run in doc["runs"]:
        m = run["metrics"]
        role_ios = sum(j["read"]["total_ios"] for j in run["fio"]["jobs"])
        assert role_ios == pytest.approx(m["dev_ios"], rel=0.02)
        assert m["be0:share"] + m["idle:share"] == pytest.approx(1.0)
        assert m["be0:iops"] + m["idle:iops"] == pytest.approx(m["iops"], rel=1e-6)


@pytest.mark.plumbing
def test_a_role_the_job_lacks_is_refused_with_its_roles(loopdev: Loop):
    before = loopdev.scheduler_text()
    err = one_sentence_exit_2("compare", loopdev.name, "--schedulers", "none,bfq", "--job",
                              "interactive-under-writes", "--raw", "--metric", "front:clat_p99_us")
    assert "has no role 'front'; its roles are fg, bg" in err
    err = one_sentence_exit_2("compare", loopdev.name, "--schedulers", "none,bfq", "--job", "4k-randread", "--raw",
                              "--metric", "fg:clat_p99_us")
    assert "one job section, so it has no roles" in err
    assert loopdev.scheduler_text() == before
