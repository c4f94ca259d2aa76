"""`compare --cmd "…" --background JOB` on a real loop device: the command timed while a write job loads the
device for the whole command, the job's figures as bg:METRIC, and no fio left, also after a SIGKILL of iosched."""

import json

import pytest
from fio_support import cmd_cgroups_of, gone, no_fio_left, start_cli, wait_for, wait_for_fio
from schema_support import valid

from iosched.core.load.fio_result import job_seconds

from conftest import need_real, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def test_a_command_is_timed_under_a_background_write_job(loopdev):
    need_real("fio", "setpriv")
    cmd = f"dd if={loopdev.path} of=/dev/null bs=1M count=200 iflag=direct"
    p = start_cli("compare", loopdev.name, "--schedulers", "none,mq-deadline", "--cmd", cmd, "--background",
                  "4k-randwrite", "--size", "64M", "--repeat", "2", "--settle", "0.2", "--json")
    out, err = p.communicate(timeout=200)
    assert p.returncode == 0, err
    doc = json.loads(out)
    assert doc["primary_metric"] == "wall_s" and doc["workload"]["cmd"] == cmd
    assert doc["workload"]["background"]["name"] == "4k-randwrite" and doc["workload"]["target"]["kind"] == "device"
    assert len(doc["runs"]) == 4
    for run in doc["runs"]:
        m = run["metrics"]
        assert run["valid"], run["invalid_reason"]
        assert m["wall_s"] > 0 and all(m[f"bg:{k}"] > 0 for k in ("iops", "mb_s", "clat_mean_us", "clat_p99_us"))
        assert run["fio"]["jobs"][0]["write"]["total_ios"] > 0
        assert job_seconds(run["fio"]) > m["wall_s"]  # the load ran for the whole command (and its settle)
    metrics = {c["metric"] for c in doc["comparisons"]}
    assert {"wall_s", "bg:iops", "bg:clat_p99_us"} <= metrics
    assert [c["metric"] for c in doc["comparisons"] if c["primary"]] == ["wall_s"]
    valid("experiment.schema.json", doc)  # the background is a declared part of the workload
    assert loopdev.current() == loopdev.initial_scheduler
    no_fio_left(loopdev.path)


def test_sigkill_of_iosched_takes_the_background_and_the_command_along(loopdev):
    need_real("fio", "setpriv")
    p = start_cli("compare", loopdev.name, "--schedulers", "none,bfq", "--cmd", "sleep 30.125", "--background",
                  "4k-randwrite", "--size", "64M", "--repeat", "1", "--settle", "0")
    wait_for_fio(loopdev.path, p)
    wait_for("30.125", p)  # the background is on and the command has started
    p.kill()
    p.communicate(timeout=10)
    no_fio_left(loopdev.path)
    assert gone("30.125"), "the command outlived a SIGKILLed iosched"
    assert run_cli("restore").returncode == 0
    assert cmd_cgroups_of(p.pid) == []  # the killed run's command cgroup goes with restore
