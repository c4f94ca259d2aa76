"""Scheduler switching and restore on real loop devices the tests create."""

import json
import os
import subprocess
import sys

import pytest

from iosched.core.base.errors import UnknownScheduler
from iosched.core.settings.journal import Journal
from iosched.core.settings.scheduler import switch_scheduler
from iosched.core.settings.writes import restore

from conftest import detach_loop, need_real, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def test_every_available_scheduler_and_back_then_restore(loopdev, private_journal):
    original = loopdev.current()
    available = loopdev.scheduler_text().replace("[", "").replace("]", "").split()
    assert len(available) >= 2
    for name in [*available, original]:
        result = switch_scheduler(loopdev.name, name)
        assert loopdev.current() == name
        assert result.new == name
        assert result.seconds >= 0
    switch_scheduler(loopdev.name, next(s for s in available if s != original))
    journal = Journal(private_journal)
    entries = journal.entries()
    entry = entries[f"{loopdev.name}/queue/scheduler"]
    assert entry.original == original and entry.backing_file == str(loopdev.file)
    # A switch resets nr_requests (and the old scheduler's tunables): they are journaled with it.
    assert set(entries) >= {f"{loopdev.name}/queue/scheduler", f"{loopdev.name}/queue/nr_requests"}
    outcomes = restore()
    assert outcomes[0].status == "restored" and {o.status for o in outcomes[1:]} <= {"unchanged"}
    assert loopdev.current() == original
    assert restore() == []  # idempotent: nothing left to do
    assert journal.entries() == {}


def test_cli_set_prints_old_new_and_time(loopdev):
    target = "bfq" if loopdev.current() != "bfq" else "mq-deadline"
    before = loopdev.current()
    r = run_cli("set", loopdev.name, target)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"{loopdev.name}: {before} -> {target} in ")
    assert r.stdout.strip().endswith(" ms")
    assert loopdev.current() == target
    r = run_cli("restore")
    assert r.returncode == 0 and "restored" in r.stdout
    assert loopdev.current() == before


def test_unknown_scheduler_lists_the_available_ones(loopdev):
    with pytest.raises(UnknownScheduler, match="available: none, mq-deadline"):
        switch_scheduler(loopdev.name, "cfq")


@pytest.mark.parametrize("device", ["../vda", "loop0/../vda", "", "loop0 ", "/dev/vda", "vda\n"])
def test_bad_device_names_rejected_before_any_write(loopdev, device):
    before = loopdev.scheduler_text()
    r = run_cli("set", device, "bfq")
    assert r.returncode == 2
    assert r.stderr.startswith("iosched: ") and r.stderr.count("\n") == 1
    assert loopdev.scheduler_text() == before


@pytest.mark.parametrize("name", ["bfq\n", " bfq", "none-of-these", "", "bfq kyber", "[bfq]"])
def test_bad_scheduler_names_change_nothing(loopdev, name, private_journal):
    before = loopdev.scheduler_text()
    r = run_cli("set", loopdev.name, name)
    assert r.returncode == 2, r.stderr
    assert "iosched: " in r.stderr
    assert loopdev.scheduler_text() == before
    assert not (private_journal / "journal.json").exists()


def test_partition_name_points_at_the_disk(tmp_path, make_loop):
    need_real("sfdisk")
    loop = make_loop("64M")
    subprocess.run(["sfdisk", "-q", loop.path], input="label: dos\n,32M\n", text=True, check=True,
                   capture_output=True)
    subprocess.run(["partx", "-u", loop.path], check=False, capture_output=True)
    part = f"{loop.name}p1"
    assert os.path.exists(f"/sys/class/block/{part}"), "the kernel did not create the partition"
    r = run_cli("set", part, "bfq")
    assert r.returncode == 2
    assert f"{part} is a partition" in r.stderr and loop.name in r.stderr


def test_not_root_is_refused_with_a_clear_message(loopdev, private_journal):
    before = loopdev.scheduler_text()
    # Drop to nobody inside the child after imports, so the interpreter's own location does not matter.
    code = ("import os, sys; from iosched.cli.main import build_parser, run;"
            f"args = build_parser().parse_args(['set', {loopdev.name!r}, 'bfq']);"
            "os.setgroups([]); os.setgid(65534); os.setuid(65534); sys.exit(run(args))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert "run as root" in r.stderr
    assert loopdev.scheduler_text() == before


def test_device_detached_between_list_and_set(tmp_path, make_loop):
    need_real()
    loop = make_loop("64M")
    listed = json.loads(run_cli("list", "--json").stdout)
    assert loop.name in [d["name"] for d in listed]
    current = loop.current()
    detach_loop(loop)
    # Ask for the scheduler it already had: should anything re-attach this loop node meanwhile, the request
    # changes nothing on a device this test no longer owns.
    r = run_cli("set", loop.name, current)
    assert r.returncode == 1
    assert "no medium attached" in r.stderr


def test_two_racing_set_processes_keep_the_true_original(loopdev, private_journal):
    original = loopdev.current()
    others = [s for s in ("bfq", "kyber", "mq-deadline", "none") if s != original][:2]
    procs = [subprocess.Popen([sys.executable, "-m", "iosched.cli", "set", loopdev.name, s],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for s in others]
    results = [p.communicate(timeout=30) for p in procs]
    assert all(p.returncode == 0 for p in procs), results
    assert loopdev.current() in others
    entry = Journal(private_journal).entries()[f"{loopdev.name}/queue/scheduler"]
    assert entry.original == original
    restore()
    assert loopdev.current() == original


def test_restore_leaves_a_different_device_alone(loopdev, private_journal):
    original = loopdev.current()
    target = "kyber" if original != "kyber" else "bfq"
    switch_scheduler(loopdev.name, target)
    journal = Journal(private_journal)
    with journal.locked() as entries:
        for key in entries:
            entries[key] = entries[key].__class__(**{**entries[key].__dict__, "diskseq": -1})
    outcomes = restore()
    assert outcomes and {o.status for o in outcomes} == {"replaced"}
    assert loopdev.current() == target  # not ours to touch any more
    switch_scheduler(loopdev.name, original)


def test_a_long_scheduler_name_is_cut_in_the_message(loopdev):
    out = run_cli("set", loopdev.name, "x" * 10_000)
    assert out.returncode == 2
    assert len(out.stderr) < 300 and "(10000 characters)" in out.stderr
    assert loopdev.current() == loopdev.initial_scheduler
