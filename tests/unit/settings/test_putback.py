"""Putting a run's starting point back (core/settings/putback.py) on a fixture tree whose writes behave as the
kernel's do (6.x): a switch resets nr_requests and gives the new scheduler's tunables their defaults, a write to
nr_requests under mq-deadline resets async_depth. The order (scheduler, queue knobs, tunables), every value back, the
run's own journal entries gone and another's kept, the starting point's file removed; a killed run's device put back
from its file; a file that is not one of ours, or names another device, changes nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from stuck_support import REAL_CHILD, end_left_writers, hanging_switches, late_child, let_go, writer_code

from iosched.core.documents.params import Variant
from iosched.core.experiment.variants import Configurator
from iosched.core.settings import writes
from iosched.core.settings.journal import Journal, default_run_dir
from iosched.core.settings.putback import (
    PutBack,
    note,
    put_back_after,
    put_back_left,
    starting_point,
    starts_of,
)
from iosched.core.settings.writes import restore, write_attr

from fixtree import FixTree

SCHEDULERS = ["none", "mq-deadline", "kyber", "bfq"]
DEFAULTS = {"none": {}, "mq-deadline": {"read_expire": "500", "async_depth": "256", "fifo_batch": "16"},
            "kyber": {"read_lat_nsec": "2000000"}, "bfq": {"slice_idle": "8", "low_latency": "1"}}


@pytest.fixture
def disk(tree: FixTree) -> FixTree:
    """sda on mq-deadline, set by hand: nr_requests 64, async_depth 16 (after nr_requests), read_expire 200."""
    tree.add_disk("sda", "8:0", scheduler="none [mq-deadline] kyber bfq", extra={"queue/wbt_lat_usec": "2000"})
    tree.write("sys/block/sda/queue/iosched/read_expire", "200\n")
    tree.write("sys/block/sda/queue/iosched/async_depth", "16\n")
    tree.write("sys/block/sda/queue/iosched/fifo_batch", "16\n")
    return tree


def read(tree: FixTree, attr: str) -> str:
    return (tree.root / "sys/block/sda" / attr).read_text().strip()


def journal(tree: FixTree) -> dict:
    return Journal(default_run_dir(tree.root)).entries()


@pytest.fixture
def kernel(disk: FixTree, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Writes land as the kernel's would; returns (attr, value) of every write, in order."""
    real, written = writes._raw_write, []
    queue = disk.root / "sys/block/sda/queue"

    def raw(path: Path, value: str, device: str, attr: str, sending: object = None) -> float:
        seconds = real(path, value, device, attr, sending)
        written.append((attr, value))
        path.write_text(value + "\n")  # a fixture file takes the bytes over its old ones; sysfs takes the value
        if attr == "queue/scheduler":
            path.write_text(" ".join(f"[{s}]" if s == value else s for s in SCHEDULERS) + "\n")
            for f in (queue / "iosched").glob("*"):
                f.unlink()
            for name, default in DEFAULTS[value].items():
                (queue / "iosched" / name).write_text(default + "\n")
            (queue / "nr_requests").write_text("256\n")
        elif attr == "queue/nr_requests" and (queue / "iosched/async_depth").exists():
            (queue / "iosched/async_depth").write_text(value + "\n")
        return seconds

    monkeypatch.setattr(writes, "_raw_write", raw)
    return written


def hand_set(disk: FixTree) -> dict[str, str]:
    return {attr: read(disk, attr) for attr in ("queue/scheduler", "queue/nr_requests", "queue/iosched/read_expire",
                                                 "queue/iosched/async_depth", "queue/iosched/fifo_batch")}


def test_every_value_comes_back_in_the_kernels_order_and_the_runs_entries_go(disk, kernel, private_journal):
    before = hand_set(disk)
    plain, tuned = Variant("mq-deadline", "mq-deadline"), Variant("bfq:slice_idle=0", "bfq", (("slice_idle", "0"),))
    cfg = Configurator("sda", [plain, tuned], disk.root)
    cfg.apply(plain)  # away and back: the kernel's defaults, nr_requests 256
    assert read(disk, "queue/nr_requests") == "256" and read(disk, "queue/iosched/read_expire") == "500"
    cfg.apply(tuned)
    assert (private_journal / "starts" / f"sda.{os.getpid()}.json").exists()
    kernel.clear()
    cfg.put_back()
    assert hand_set(disk) == before
    # The scheduler first (it resets the rest), nr_requests before async_depth (its write resets async_depth).
    assert kernel == [("queue/scheduler", "mq-deadline"), ("queue/nr_requests", "64"),
                      ("queue/iosched/async_depth", "16"), ("queue/iosched/read_expire", "200")]
    assert journal(disk) == {} and list((private_journal / "starts").iterdir()) == []
    assert [name for _, name in cfg.switches][-1] == "mq-deadline"  # the switch back is on the run's timeline
    cfg.put_back()  # again: nothing more
    assert kernel[4:] == []


def test_entries_that_were_there_before_the_run_stay(disk, kernel):
    write_attr("sda", "queue/read_ahead_kb", "256", root=disk.root)  # a hand change in the TUI, journaled
    cfg = Configurator("sda", [Variant("kyber", "kyber")], disk.root)
    cfg.apply(Variant("kyber", "kyber"))
    cfg.put_back()
    assert read(disk, "queue/read_ahead_kb") == "256" and read(disk, "queue/nr_requests") == "64"
    assert [(e.attr, e.original) for e in journal(disk).values()] == [("queue/read_ahead_kb", "128")]


def test_a_value_the_kernel_refuses_is_named_and_its_entry_stays(disk, kernel, monkeypatch):
    cfg = Configurator("sda", [Variant("kyber", "kyber")], disk.root)
    cfg.apply(Variant("kyber", "kyber"))
    refuse = writes._raw_write

    def no_64(path: Path, value: str, device: str, attr: str, sending: object = None) -> float:
        if attr == "queue/nr_requests":
            raise writes.IoschedError(f"the kernel refused {value!r} for {device} {attr} (invalid argument)")
        return refuse(path, value, device, attr, sending)

    monkeypatch.setattr(writes, "_raw_write", no_64)
    said = r"sda nr_requests 64 \(the kernel refused .*invalid argument\)\); `iosched restore` tries again"
    with pytest.raises(writes.IoschedError, match=said):
        cfg.put_back()
    assert read(disk, "queue/scheduler") == "none [mq-deadline] kyber bfq" and read(disk, "queue/nr_requests") == "256"
    assert read(disk, "queue/iosched/read_expire") == "200"  # the rest went back all the same
    assert [(e.attr, e.original) for e in journal(disk).values()] == [("queue/nr_requests", "64")]


def killed_run(disk: FixTree, private_journal: Path, scheduler: str = "bfq") -> Path:
    """A run that changed sda and died without putting it back: its file names this process's pid with another start
    time (the pid given to another process since), so its owner is gone."""
    start = note(starting_point("sda", disk.root), disk.root)
    write_attr("sda", "queue/scheduler", scheduler, root=disk.root)
    f = private_journal / "starts" / f"sda.{os.getpid()}.json"
    info = json.loads(f.read_text())
    f.write_text(json.dumps({**info, "start": (start.start or 0) + 1}))
    return f


def test_a_write_the_kernel_still_holds_keeps_the_journal_and_is_named(disk, kernel, monkeypatch, private_journal):
    """A switch the kernel has not returned from (stuck, or its wait cut short by Ctrl-C): the device still reads as
    the run found it, but may change when the kernel lets go, so nothing is written and every entry stays for
    `iosched restore`, the put-back failing with why; the starting point's file goes (the journal holds the rest)."""
    for _ in hanging_switches(monkeypatch):
        cfg = Configurator("sda", [Variant("kyber", "kyber")], disk.root)
        kernel.clear()
        with pytest.raises(writes.WriteStuck):
            cfg.apply(Variant("kyber", "kyber"))
        entries = journal(disk)
        said = (r"sda scheduler mq-deadline \(the kernel has not returned from writing 'kyber' to scheduler "
                r"\(pid \d+\): nothing is written to sda until it does\); `iosched restore` tries again")
        with pytest.raises(writes.IoschedError, match=said):
            cfg.put_back()
        assert journal(disk) == entries and entries["sda/queue/scheduler"].pending is not None
        assert kernel == []  # no write answered: the stuck switch, and nothing after it
        assert list((private_journal / "starts").iterdir()) == []
        let_go(entries["sda/queue/scheduler"].pending.pid)
        writer_code(monkeypatch, REAL_CHILD)
        assert {o.status for o in restore(root=disk.root)} == {"unchanged"} and journal(disk) == {}


def test_a_switch_whose_wait_ctrl_c_cut_short_is_waited_for_then_put_back(disk, kernel, monkeypatch):
    """Ctrl-C lands while the kernel is in a switch that returns soon after (a matrix's next variant under load): the
    put-back waits for that write, then puts the device back and leaves no journal entry behind."""
    monkeypatch.setenv("IOSCHED_WRITE_DEADLINE", "60")
    # The switch returns 0.6 s late, the file then reading as the kernel's would after it.
    slow = late_child(0.6).replace("os.write(fd, value)", "os.write(fd, b'none mq-deadline [kyber] bfq\\n')", 1)
    assert "[kyber]" in slow
    writer_code(monkeypatch, slow)
    cfg = Configurator("sda", [Variant("kyber", "kyber")], disk.root)

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.1)
    try:
        with pytest.raises(KeyboardInterrupt):
            cfg.apply(Variant("kyber", "kyber"))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    try:
        assert journal(disk)["sda/queue/scheduler"].pending is not None
        writer_code(monkeypatch, REAL_CHILD)
        cfg.put_back()
        assert read(disk, "queue/scheduler") == "none [mq-deadline] kyber bfq" and journal(disk) == {}
    finally:
        end_left_writers()


def test_a_killed_runs_device_is_put_back_from_its_file(disk, kernel, private_journal):
    before = hand_set(disk)
    f = killed_run(disk, private_journal)
    other = Journal(default_run_dir(disk.root))
    with other.locked() as entries:  # another process's entry on another attribute stays
        entries["sda/queue/rq_affinity"] = writes.new_entry("sda", "queue/rq_affinity", "2")
        entries["sda/queue/rq_affinity"] = writes.JournalEntry(**{**entries["sda/queue/rq_affinity"].__dict__,
                                                                  "pid": 1})
    (dry,) = put_back_left(disk.root, dry_run=True)
    assert dry.status == "would put back" and f.exists()
    # The dry run names what the real one may write: after the switch back, each tunable not at its default.
    assert dry.line() == (f"sda: would put back as pid {os.getpid()}'s run found it: scheduler mq-deadline, "
                          "nr_requests 64; then each of its tunables the switch leaves at another value: "
                          "async_depth 16, fifo_batch 16, read_expire 200")
    (done,) = put_back_left(disk.root)
    assert done.status == "put back" and hand_set(disk) == before and not f.exists()
    assert done.line() == (f"sda: put back as pid {os.getpid()}'s run found it: scheduler mq-deadline, "
                           "nr_requests 64, async_depth 16, read_expire 200")
    assert [e.attr for e in journal(disk).values()] == ["queue/rq_affinity"]
    assert put_back_left(disk.root) == []


def test_only_the_process_named_is_put_back_after_it_ends(disk, kernel, private_journal):
    killed_run(disk, private_journal)
    assert put_back_left(disk.root, pid=os.getpid() + 1) == [] and read(disk, "queue/scheduler").endswith("[bfq]")
    starts = starts_of(os.getpid(), disk.root)
    assert [s.device for s in starts] == ["sda"]
    (done,) = put_back_after(os.getpid(), starts, disk.root)
    assert done.status == "put back"
    # Its app put it back itself (its file gone): checked, and said so.
    (checked,) = put_back_after(os.getpid(), starts, disk.root)
    assert checked == PutBack("sda", os.getpid(), "as found")
    write_attr("sda", "queue/iosched/read_expire", "300", root=disk.root)
    (checked,) = put_back_after(os.getpid(), starts, disk.root)
    assert checked.status == "not as found" and checked.values == (("read_expire", "200"),)
    assert "`iosched restore`" in checked.line()


def test_a_device_that_now_is_another_is_left_alone(disk, kernel, private_journal):
    f = killed_run(disk, private_journal)
    disk.write("sys/block/sda/dev", "8:16\n")  # another disk took the name
    kernel.clear()
    (done,) = put_back_left(disk.root)
    assert done.status == "replaced" and "maj_min was 8:0, now 8:16" in done.detail and kernel == []
    assert not f.exists() and read(disk, "queue/scheduler").endswith("[bfq]")


@pytest.mark.parametrize("change", [
    {"device": "../../etc"}, {"device": "sda/queue"}, {"knobs": {"../../../x": "1"}},
    {"tunables": {"../x": "1"}}, {"scheduler": 5}, {"pid": "me"}, {"tunables": []}, {"extra": 1},
])
def test_a_file_that_is_no_starting_point_changes_nothing_and_goes(disk, kernel, private_journal, change):
    f = killed_run(disk, private_journal)
    f.write_text(json.dumps({**json.loads(f.read_text()), **change}))
    kernel.clear()
    assert put_back_left(disk.root) == [] and kernel == [] and not f.exists()


def test_a_device_under_load_elsewhere_is_left_to_that_run_and_its_file_kept(disk, kernel, private_journal):
    f = killed_run(disk, private_journal)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(disk.root)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        kernel.clear()
        (left,) = put_back_left(disk.root)
        assert left.status == "held" and f"pid {holder.pid}, compare" in left.detail and kernel == [] and f.exists()
        assert "`iosched restore` puts back" in left.line()
    finally:
        holder.communicate("", timeout=30)
    (done,) = put_back_left(disk.root)
    assert done.status == "put back" and not f.exists()


HOLD = """import sys
from iosched.core.settings.device_lock import load_lock
with load_lock("sda", "compare", sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()
"""
