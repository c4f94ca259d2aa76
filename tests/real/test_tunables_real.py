"""Tunables and queue knobs on real loop devices: writes journaled and restored, kernel refusals, read-backs
that differ, hand-tuned values after a switch, wbt_lat_usec=-1."""

import json
import signal
import time

import pytest
from fio_support import start_cli, wait_for_fio

from iosched.core.settings.journal import Journal

from conftest import need_real, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def test_tune_on_a_real_device_journals_and_restores(loopdev):
    assert run_cli("set", loopdev.name, "mq-deadline").returncode == 0
    r = run_cli("tune", loopdev.name, "read_expire=100", "fifo_batch=4", "read_ahead_kb=64")
    assert r.returncode == 0, r.stderr
    assert "read_expire: 500 -> 100" in r.stdout and "read_ahead_kb" in r.stdout
    q = loopdev.sysdir / "queue"
    assert (q / "iosched/read_expire").read_text().strip() == "100"
    listed = {s["name"]: s for s in json.loads(run_cli("tune", loopdev.name, "--json").stdout)}
    assert listed["fifo_batch"]["value"] == "4"
    r = run_cli("restore")
    assert r.returncode == 0, r.stderr
    assert loopdev.current() == loopdev.initial_scheduler
    assert (q / "read_ahead_kb").read_text().strip() != "64"


def test_kernel_refusal_and_silent_ignore_are_clear_errors(loopdev):
    r = run_cli("tune", loopdev.name, "nr_requests=3000")
    assert r.returncode == 1 and "kernel refused '3000'" in r.stderr
    r = run_cli("tune", loopdev.name, "io_poll_delay=5")
    assert r.returncode == 1 and "still reads" in r.stderr
    assert run_cli("restore").stdout.startswith("nothing to restore")


def test_a_value_the_kernel_cannot_store_is_refused_before_writing(loopdev, private_journal):
    """mq-deadline keeps read_expire in jiffies: below HZ=1000, 2147483647 ms reads back negative."""
    q = loopdev.sysdir / "queue"
    (q / "scheduler").write_text("mq-deadline")
    before = (q / "iosched/read_expire").read_text()
    r = run_cli("tune", loopdev.name, "read_expire=2147483647")
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "iosched: read_expire must lie between 0 and 2147483000 ms"]
    assert (q / "iosched/read_expire").read_text() == before
    assert not (private_journal / "journal.json").exists()
    r = run_cli("tune", loopdev.name, "read_expire=2147483000")  # the bound itself is stored as it is
    assert r.returncode == 0, r.stderr
    assert (q / "iosched/read_expire").read_text().strip() == "2147483000"


def test_a_read_back_that_differs_puts_the_previous_value_back(loopdev, private_journal):
    """read_ahead_kb is kept in pages: 5 KiB is stored as 4 (a page of 4 KiB), not what was asked for."""
    ra = loopdev.sysdir / "queue/read_ahead_kb"
    before = ra.read_text().strip()
    r = run_cli("tune", loopdev.name, "read_ahead_kb=5")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "stored '4' for queue/read_ahead_kb when given '5'" in lines[0], lines
    assert f"the previous '{before}' was put back" in lines[0]
    assert ra.read_text().strip() == before
    # Nothing left to restore: the entry journaled before the write is gone again.
    assert Journal(private_journal).entries() == {}


def test_hand_tuned_values_come_back_after_a_switch(loopdev):
    """A switch resets the old scheduler's tunables; restore must bring back what the user had set by hand."""
    q = loopdev.sysdir / "queue"
    (q / "scheduler").write_text("mq-deadline")
    (q / "iosched/read_expire").write_text("300")
    (q / "nr_requests").write_text("64")
    assert run_cli("set", loopdev.name, "bfq").returncode == 0
    assert run_cli("restore").returncode == 0
    assert loopdev.current() == "mq-deadline"
    assert (q / "iosched/read_expire").read_text().strip() == "300"
    assert (q / "nr_requests").read_text().strip() == "64"


def test_sigkill_mid_experiment_then_restore_from_a_new_process(loopdev):
    need_real("fio")
    q = loopdev.sysdir / "queue"
    (q / "scheduler").write_text("mq-deadline")
    (q / "iosched/read_expire").write_text("300")
    (q / "iosched/fifo_batch").write_text("8")
    p = start_cli("compare", loopdev.name, "--schedulers", "bfq:low_latency=0,mq-deadline:read_expire=100",
                  "--job", "randread-q16t2", "--runtime", "30", "--repeat", "2", "--settle", "0")
    wait_for_fio(loopdev.path, p)
    assert loopdev.current() == "bfq" and (q / "iosched/low_latency").read_text().strip() == "0"
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=10)
    time.sleep(0.2)
    r = run_cli("restore")
    assert r.returncode == 0, r.stderr
    assert loopdev.current() == "mq-deadline"
    assert (q / "iosched/read_expire").read_text().strip() == "300"
    assert (q / "iosched/fifo_batch").read_text().strip() == "8"


def test_wbt_lat_usec_minus_one_is_the_kernel_default(loopdev):
    wbt = loopdev.sysdir / "queue/wbt_lat_usec"
    before = wbt.read_text().strip()
    try:
        assert run_cli("tune", loopdev.name, "wbt_lat_usec=1234").returncode == 0
        out = run_cli("tune", loopdev.name, "wbt_lat_usec=-1")
        assert out.returncode == 0, out.stderr
        now = wbt.read_text().strip()
        assert now != "1234" and out.stdout.strip() == f"{loopdev.name} wbt_lat_usec: 1234 -> {now} " \
            "(kernel default applied)"
    finally:
        wbt.write_text(before)
