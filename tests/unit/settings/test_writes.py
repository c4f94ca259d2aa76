"""The one door for privileged writes (core/settings/writes.py) on fixture trees: validation before any write, the
write and its read-back, the original journaled once, a value stored as something else put back, no change while
the journal is unreadable, restore (idempotent, leaving a replaced device alone), and a write the kernel does not
return from (its writer process made to hang): reported by its deadline, journaled, never made again.

A fixture file is not sysfs: the write lands in it as bytes. `kernel()` adds what the kernel does after a write
(shows the scheduler in brackets, clamps, ignores), so each test states the kernel behaviour it relies on."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from link_support import digest, make_victim, plant, plant_while_writing, temporaries
from stuck_support import REAL_CHILD, end_left_writers, hanging_switches, late_child, let_go, marking, writer_code

from iosched.core.base.errors import BadInput, DeviceGone, UnknownDevice, WriteNotApplied
from iosched.core.kernel.processes import running
from iosched.core.settings import writes
from iosched.core.settings.journal import Journal, JournalUnreadable, default_run_dir
from iosched.core.settings.restore_report import restore_failed, restore_lines
from iosched.core.settings.writes import WritePending, WriteStuck, restore, write_attr

from fixtree import FixTree

SCHEDULERS = ["none", "mq-deadline", "kyber", "bfq"]


@pytest.fixture
def disk(tree: FixTree) -> FixTree:
    tree.add_disk("sda", "8:0", extra={"queue/wbt_lat_usec": "2000"})
    return tree


def read(tree: FixTree, attr: str, device: str = "sda") -> str:
    return (tree.root / "sys/block" / device / attr).read_text().strip()


def journal(tree: FixTree) -> dict:
    return Journal(default_run_dir(tree.root)).entries()


def kernel(monkeypatch: pytest.MonkeyPatch, shows: Callable[[Path, str], str | None]) -> list[str]:
    """After each real write into the fixture file, the file shows ``shows(path, value)`` (None: as written).
    Returns the values written, in order."""
    real, written = writes._raw_write, []

    def raw(path: Path, value: str, device: str, attr: str, sending: object = None) -> float:
        before = path.read_text()
        seconds = real(path, value, device, attr, sending)
        written.append(value)
        shown = shows(path, value)
        path.write_text((before if shown == "" else value if shown is None else shown) + "\n")
        return seconds

    monkeypatch.setattr(writes, "_raw_write", raw)
    return written


def scheduler_file(path: Path, value: str) -> str:
    return " ".join(f"[{s}]" if s == value else s for s in SCHEDULERS)


@pytest.mark.parametrize(("device", "attr", "value", "error"), [
    ("sda", "queue/rotational", "1", BadInput),  # not a setting iosched changes
    ("sda", "queue/iosched/../../dev", "1", BadInput),
    ("sda", "size", "1", BadInput),
    ("sda", "queue/read_ahead_kb", "1 2", BadInput),  # not a plain token
    ("sda", "queue/read_ahead_kb", "", BadInput),
    ("sda", "queue/read_ahead_kb", "1;reboot", BadInput),
    ("sda", "queue/read_ahead_kb", "9" * 41, BadInput),
    ("../sda", "queue/read_ahead_kb", "256", BadInput),
    ("sda/queue", "queue/read_ahead_kb", "256", BadInput),
    ("sdz", "queue/read_ahead_kb", "256", UnknownDevice),
])
def test_what_is_not_valid_is_refused_before_any_write(disk, monkeypatch, device, attr, value, error):
    written = kernel(monkeypatch, lambda path, v: None)
    before = read(disk, "queue/read_ahead_kb")
    with pytest.raises(error):
        write_attr(device, attr, value, root=disk.root)
    assert written == [] and read(disk, "queue/read_ahead_kb") == before
    assert not Journal(default_run_dir(disk.root)).path.exists()


def test_a_write_is_read_back_and_its_original_journaled_once(disk, private_journal):
    r = write_attr("sda", "queue/read_ahead_kb", "256", root=disk.root)
    assert (r.device, r.attr, r.old, r.new, r.note) == ("sda", "queue/read_ahead_kb", "128", "256", "")
    assert read(disk, "queue/read_ahead_kb") == "256"
    (entry,) = journal(disk).values()
    assert (entry.device, entry.attr, entry.original, entry.pid) == ("sda", "queue/read_ahead_kb", "128", os.getpid())
    assert entry.maj_min == "8:0"  # who the device was, for a restore to know it again
    # A second change keeps the first original: a restore goes back to before iosched, not one step.
    write_attr("sda", "queue/read_ahead_kb", "512", root=disk.root)
    assert [e.original for e in journal(disk).values()] == ["128"]
    assert json.loads((private_journal / "journal.json").read_text())["entries"][0]["original"] == "128"


def test_the_value_already_there_is_not_written_nor_journaled(disk, monkeypatch):
    written = kernel(monkeypatch, lambda path, v: None)
    r = write_attr("sda", "queue/read_ahead_kb", "128", root=disk.root)
    assert (r.old, r.new, r.seconds) == ("128", "128", 0.0)
    assert written == [] and journal(disk) == {}


def test_a_switch_journals_the_scheduler_and_what_the_switch_resets(disk, monkeypatch):
    disk.write("sys/block/sda/queue/scheduler", "none [mq-deadline] kyber bfq\n")
    disk.write("sys/block/sda/queue/iosched/read_expire", "500\n")
    disk.write("sys/block/sda/queue/iosched/fifo_batch", "16\n")
    kernel(monkeypatch, scheduler_file)
    r = write_attr("sda", "queue/scheduler", "bfq", root=disk.root)
    assert (r.old, r.new) == ("mq-deadline", "bfq") and read(disk, "queue/scheduler") == "none mq-deadline kyber [bfq]"
    entries = {(e.attr, e.original, e.scheduler) for e in journal(disk).values()}
    assert entries == {("queue/scheduler", "mq-deadline", None), ("queue/nr_requests", "64", None),
                       ("queue/iosched/read_expire", "500", "mq-deadline"),
                       ("queue/iosched/fifo_batch", "16", "mq-deadline")}


def test_a_value_stored_as_something_else_is_put_back(disk, monkeypatch):
    written = kernel(monkeypatch, lambda path, v: str(min(int(v), 1024)))  # a kernel that clamps
    with pytest.raises(WriteNotApplied, match="stored '1024' for queue/read_ahead_kb when given '4096', so the "
                                              "previous '128' was put back"):
        write_attr("sda", "queue/read_ahead_kb", "4096", root=disk.root)
    assert written == ["4096", "128"] and read(disk, "queue/read_ahead_kb") == "128"
    assert journal(disk) == {}  # nothing changed, nothing to restore


def test_a_put_back_that_does_not_stick_is_left_for_restore(disk, monkeypatch):
    kernel(monkeypatch, lambda path, v: "1024")  # stores 1024 whatever it is given
    with pytest.raises(WriteNotApplied, match=r"could not be put back .*`iosched restore` puts it back"):
        write_attr("sda", "queue/read_ahead_kb", "4096", root=disk.root)
    assert read(disk, "queue/read_ahead_kb") == "1024"
    assert [(e.attr, e.original) for e in journal(disk).values()] == [("queue/read_ahead_kb", "128")]


def test_a_write_the_kernel_ignores_is_an_error_and_not_journaled(disk, monkeypatch):
    kernel(monkeypatch, lambda path, v: "")  # accepted, nothing changed
    with pytest.raises(WriteNotApplied, match="accepted '256' for queue/read_ahead_kb but it still reads '128'"):
        write_attr("sda", "queue/read_ahead_kb", "256", root=disk.root)
    assert read(disk, "queue/read_ahead_kb") == "128" and journal(disk) == {}


def test_minus_one_for_wbt_lat_usec_is_the_kernel_default(disk, monkeypatch):
    kernel(monkeypatch, lambda path, v: "75000")  # -1 asks for the default, which reads back as itself
    r = write_attr("sda", "queue/wbt_lat_usec", "-1", root=disk.root)
    assert (r.old, r.new, r.note) == ("2000", "75000", "kernel default applied")
    assert [e.original for e in journal(disk).values()] == ["2000"]


def test_a_missing_attribute_is_a_device_gone(disk):
    with pytest.raises(DeviceGone, match="sda has no queue/iosched/slice_idle"):
        write_attr("sda", "queue/iosched/slice_idle", "0", root=disk.root)
    assert journal(disk) == {}


@pytest.mark.parametrize("text", ["[]", "not json", '{"entries": [1]}', '{"entries": [{"device": "sda"}]}'])
def test_nothing_is_written_while_the_journal_is_unreadable(disk, monkeypatch, private_journal, text):
    written = kernel(monkeypatch, lambda path, v: None)
    private_journal.mkdir(parents=True, exist_ok=True)
    (private_journal / "journal.json").write_text(text)
    with pytest.raises(JournalUnreadable):
        write_attr("sda", "queue/read_ahead_kb", "256", root=disk.root)
    with pytest.raises(JournalUnreadable):
        restore(root=disk.root)
    assert written == [] and read(disk, "queue/read_ahead_kb") == "128"
    assert (private_journal / "journal.json").read_text() == text


def test_restore_puts_back_every_original_once(disk, monkeypatch):
    disk.write("sys/block/sda/queue/iosched/read_expire", "500\n")
    disk.write("sys/block/sda/queue/scheduler", "none [mq-deadline] kyber bfq\n")
    kernel(monkeypatch, lambda path, v: scheduler_file(path, v) if path.name == "scheduler" else None)
    write_attr("sda", "queue/read_ahead_kb", "256", root=disk.root)
    write_attr("sda", "queue/iosched/read_expire", "250", root=disk.root)
    write_attr("sda", "queue/scheduler", "bfq", root=disk.root)
    disk.write("sys/block/sda/queue/iosched/read_expire", "")  # bfq has no read_expire
    dry = restore(root=disk.root, dry_run=True)
    assert {(o.attr, o.status) for o in dry} >= {("queue/scheduler", "would restore")}
    assert read(disk, "queue/scheduler") == "none mq-deadline kyber [bfq]" and len(journal(disk)) == 4
    outcomes = restore(root=disk.root)
    # The scheduler goes first: a tunable of mq-deadline can only be put back once mq-deadline runs again.
    assert [(o.attr, o.original, o.status) for o in outcomes] == [
        ("queue/scheduler", "mq-deadline", "restored"), ("queue/read_ahead_kb", "128", "restored"),
        ("queue/nr_requests", "64", "unchanged"), ("queue/iosched/read_expire", "500", "restored")]
    assert read(disk, "queue/scheduler") == "none [mq-deadline] kyber bfq"
    assert (read(disk, "queue/read_ahead_kb"), read(disk, "queue/iosched/read_expire")) == ("128", "500")
    assert journal(disk) == {}
    assert restore(root=disk.root) == []  # idempotent: nothing left to do, nothing written
    assert read(disk, "queue/read_ahead_kb") == "128"


def test_restore_leaves_a_device_that_now_has_another_identity(disk):
    write_attr("sda", "queue/read_ahead_kb", "256", root=disk.root)
    disk.write("sys/block/sda/dev", "8:16\n")  # another disk took the name
    (outcome,) = restore(root=disk.root)
    assert outcome.status == "replaced" and "maj_min was 8:0, now 8:16" in outcome.detail
    assert read(disk, "queue/read_ahead_kb") == "256" and journal(disk) == {}


def test_restore_of_a_gone_device_drops_its_entries(disk):
    write_attr("sda", "queue/read_ahead_kb", "256", root=disk.root)
    for p in sorted((disk.root / "sys/block/sda").rglob("*"), reverse=True):
        p.rmdir() if p.is_dir() else p.unlink()
    (disk.root / "sys/block/sda").rmdir()
    assert [o.status for o in restore(root=disk.root)] == ["gone"]
    assert journal(disk) == {}


def test_a_failed_restore_keeps_its_entry(disk, monkeypatch):
    write_attr("sda", "queue/read_ahead_kb", "256", root=disk.root)
    kernel(monkeypatch, lambda path, v: "")  # writes now change nothing
    (outcome,) = restore(root=disk.root)
    assert (outcome.status, outcome.detail) == ("failed", "still reads '256'")
    assert [e.original for e in journal(disk).values()] == ["128"]  # a later restore may yet put it back


def test_a_rules_file_never_goes_through_a_link_another_user_planted(others_dir, tmp_path, monkeypatch):
    victim = make_victim(tmp_path)
    before = digest(victim)
    rules = others_dir / "61-iosched.rules"
    plant(others_dir / ".61-iosched.rules.iosched-tmp", victim)  # the name the rule went through before
    writes.write_rules_file(rules, "# rule one\n")
    assert rules.read_text() == "# rule one\n" and stat.S_IMODE(rules.stat().st_mode) == 0o644
    os.chmod(rules, 0o600)
    writes.write_rules_file(rules, "# rule two\n")
    assert stat.S_IMODE(rules.stat().st_mode) == 0o600  # the file keeps its mode
    # A link planted after the command read the file, before the rename: refused, the file left as it was.
    rules.unlink()
    plant_while_writing(monkeypatch, rules, victim)
    with pytest.raises(BadInput, match=r"61-iosched\.rules is a symlink, not a regular file: nothing was written"):
        writes.write_rules_file(rules, "# rule three\n")
    with pytest.raises(BadInput, match="is a symlink"):
        writes.write_rules_file(rules, None)  # removing one: the link is not taken for the file
    assert digest(victim) == before and rules.is_symlink()
    assert temporaries(others_dir) == [".61-iosched.rules.iosched-tmp"]


# --- a write the kernel does not return from ------------------------------------------------------------------------

@pytest.fixture
def stuck_switches(monkeypatch) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Switches that never return (tests/stuck_support.py), reported after 0.3 s; yields the writers abandoned so
    far, oldest first, until the next write reaps those that ended."""
    yield from (writes._WRITER.left for _ in hanging_switches(monkeypatch))


def test_a_switch_that_does_not_return_is_reported_by_its_deadline_and_journaled(disk, monkeypatch, stuck_switches):
    disk.write("sys/block/sda/queue/scheduler", "none [mq-deadline] kyber bfq\n")
    disk.write("sys/block/sda/queue/iosched/read_expire", "250\n")
    with pytest.raises(WriteStuck, match=r"the kernel has not returned from writing 'bfq' to sda scheduler within "
                                         r"0\.3 s \(a switch can hang: kernel bugzilla 219166\); sda is left as the "
                                         r"kernel has it, the write is journaled and not made again"):
        write_attr("sda", "queue/scheduler", "bfq", root=disk.root)
    (writer,) = stuck_switches
    assert writer.poll() is None  # left to the kernel, not waited for
    entries = journal(disk)
    sched = entries["sda/queue/scheduler"]
    assert sched.original == "mq-deadline" and sched.pending is not None
    assert (sched.pending.value, sched.pending.pid) == ("bfq", writer.pid) and sched.pending.start is not None
    # What the switch would reset is journaled with it, as for any switch; the device is as the kernel has it.
    assert {e.attr for e in entries.values()} == {"queue/scheduler", "queue/nr_requests", "queue/iosched/read_expire"}
    assert read(disk, "queue/scheduler") == "none [mq-deadline] kyber bfq"
    saved = json.loads((default_run_dir(disk.root) / "journal.json").read_text())["entries"]
    assert [e["pending"]["value"] for e in saved if "pending" in e] == ["bfq"]  # only where there is one


def test_nothing_more_is_written_to_a_device_the_kernel_owes_a_write(disk, monkeypatch, stuck_switches):
    disk.add_disk("sdb", "8:16")
    with pytest.raises(WriteStuck):
        write_attr("sda", "queue/scheduler", "bfq", root=disk.root)
    before = journal(disk)
    # Never again blindly: not the same switch, not another setting of that device, not a restore of it.
    for attr, value in [("queue/scheduler", "bfq"), ("queue/scheduler", "kyber"), ("queue/read_ahead_kb", "256")]:
        with pytest.raises(WritePending, match=r"sda still has a write the kernel has not returned from \('bfq' to "
                                               r"scheduler, pid \d+, since \d\d:\d\d:\d\d\): iosched writes nothing "
                                               r"more to sda until it returns"):
            write_attr("sda", attr, value, root=disk.root)
    assert len(stuck_switches) == 1 and journal(disk) == before
    outcomes = restore(root=disk.root)
    assert {o.status for o in outcomes} == {"stuck"} and journal(disk) == before
    lines = restore_lines(outcomes)
    assert lines[0].startswith("sda: left alone: the kernel has not returned from writing 'bfq' to scheduler (pid ")
    assert len(lines) == 2 and restore_failed(outcomes)
    # Another device is written as ever, by a new writer.
    assert write_attr("sdb", "queue/read_ahead_kb", "256", root=disk.root).new == "256"


def test_once_the_kernel_lets_go_the_device_is_read_and_restored_as_usual(disk, monkeypatch, stuck_switches):
    disk.write("sys/block/sda/queue/scheduler", "none [mq-deadline] kyber bfq\n")
    hanging = writes._CHILD
    with pytest.raises(WriteStuck) as first:
        write_attr("sda", "queue/scheduler", "bfq", root=disk.root)
    let_go(first.value.writer.pid)
    disk.write("sys/block/sda/queue/scheduler", "none mq-deadline kyber [bfq]\n")  # the switch went through, late
    # Its writer gone, the device may be written again (once: this switch hangs too, and is reported again).
    with pytest.raises(WriteStuck) as second:
        write_attr("sda", "queue/scheduler", "kyber", root=disk.root)
    assert second.value.writer.pid != first.value.writer.pid
    let_go(second.value.writer.pid)
    assert journal(disk)["sda/queue/scheduler"].original == "mq-deadline"
    writer_code(monkeypatch, REAL_CHILD)
    kernel(monkeypatch, lambda path, v: scheduler_file(path, v) if path.name == "scheduler" else None)
    outcomes = restore(root=disk.root)
    assert (outcomes[0].attr, outcomes[0].status) == ("queue/scheduler", "restored")
    assert read(disk, "queue/scheduler") == "none [mq-deadline] kyber bfq" and journal(disk) == {}
    assert hanging != REAL_CHILD


def test_a_restore_whose_own_write_does_not_return_keeps_the_entry_and_names_it(disk, monkeypatch, stuck_switches):
    disk.write("sys/block/sda/queue/scheduler", "none [mq-deadline] kyber bfq\n")
    hanging = writes._CHILD
    writer_code(monkeypatch, REAL_CHILD)
    kernel(monkeypatch, lambda path, v: scheduler_file(path, v) if path.name == "scheduler" else None)
    write_attr("sda", "queue/scheduler", "bfq", root=disk.root)
    writer_code(monkeypatch, hanging)
    (outcome, *rest) = restore(root=disk.root)
    assert (outcome.attr, outcome.status) == ("queue/scheduler", "stuck") and "within 0.3 s" in outcome.detail
    assert {o.status for o in rest} <= {"stuck"}
    entry = journal(disk)["sda/queue/scheduler"]
    assert entry.original == "mq-deadline" and entry.pending is not None and entry.pending.value == "mq-deadline"
    assert restore(root=disk.root)[0].status == "stuck"  # not made again while its writer lives
    assert len(stuck_switches) == 1


def test_iosched_ends_though_its_writer_is_stuck(tree, tmp_path):
    """A thread stuck in write(2) keeps its process from ending; a child process does not: the command reports and
    exits, its writer left behind (ended here by the test, as the kernel would)."""
    tree.add_disk("sda", "8:0", scheduler="none [mq-deadline] kyber bfq")
    script = ("import sys\n"
              "from iosched.core.settings import writes\n"
              "writes._CHILD = writes._CHILD.replace('    try:\\n        fd = os.open(', "
              "'    import time; time.sleep(3600)\\n    try:\\n        fd = os.open(', 1)\n"
              "try:\n"
              "    writes.write_attr('sda', 'queue/scheduler', 'bfq', root=sys.argv[1])\n"
              "except writes.WriteStuck as e:\n"
              "    print(e.writer.pid, flush=True)\n")
    out = subprocess.run([sys.executable, "-c", script, str(tree.root)], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "IOSCHED_WRITE_DEADLINE": "0.3"})
    assert out.returncode == 0, out.stderr
    pid = int(out.stdout)
    try:
        assert running(pid, None)  # still in its write, and iosched has ended
    finally:
        os.kill(pid, 9)


@contextlib.contextmanager
def ctrl_c_once(mark: Path) -> Iterator[None]:
    """Ctrl-C (KeyboardInterrupt in the main thread) as soon as the writer holds its request (it made ``mark``:
    stuck_support.marking), as a terminal's would arrive while the kernel is in the write. Not at a set time: on a
    loaded machine the request may not have reached the writer by then, and the test would see another case."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    def watch() -> None:
        end = time.monotonic() + 60
        while not mark.exists() and time.monotonic() < end and not done.is_set():
            time.sleep(0.005)
        if not done.is_set():
            signal.pthread_kill(main, signal.SIGALRM)

    main, done = threading.main_thread().ident or 0, threading.Event()
    old = signal.signal(signal.SIGALRM, interrupt)
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()
        signal.signal(signal.SIGALRM, old)


def test_a_write_whose_wait_is_interrupted_stays_journaled_as_on_its_way(disk, monkeypatch, stuck_switches,
                                                                          tmp_path):
    """Ctrl-C (or SIGTERM's SystemExit) while the kernel is still in the write: the journal on disk holds the original
    and the value on its way, written before the request went, so the change the kernel makes later is restored."""
    monkeypatch.setenv("IOSCHED_WRITE_DEADLINE", "60")
    monkeypatch.setattr(writes, "SETTLE_S", 0.2)  # a put-back waits this long for the kernel, then leaves it
    writer_code(monkeypatch, marking(writes._CHILD, tmp_path / "held"))  # the hanging writer, marking its request
    disk.write("sys/block/sda/queue/scheduler", "none [mq-deadline] kyber bfq\n")
    with pytest.raises(KeyboardInterrupt), ctrl_c_once(tmp_path / "held"):
        write_attr("sda", "queue/scheduler", "bfq", root=disk.root)
    (writer,) = stuck_switches  # abandoned, as at a deadline: its answer is no one's
    assert writer.poll() is None and writes._WRITER.proc is None
    entries = journal(disk)
    sched = entries["sda/queue/scheduler"]
    assert sched.original == "mq-deadline" and sched.pending is not None
    assert (sched.pending.value, sched.pending.pid) == ("bfq", writer.pid) and running(writer.pid, sched.pending.start)
    assert {e.attr for e in entries.values()} == {"queue/scheduler", "queue/nr_requests"}
    # Nothing more is written to the device while the kernel holds the write; once it lets go, restore as usual.
    with pytest.raises(WritePending, match=r"sda still has a write the kernel has not returned from \('bfq'"):
        write_attr("sda", "queue/read_ahead_kb", "256", root=disk.root)
    assert restore(root=disk.root)[0].status == "stuck"
    let_go(writer.pid)
    disk.write("sys/block/sda/queue/scheduler", "none mq-deadline kyber [bfq]\n")  # the switch went through, late
    writer_code(monkeypatch, REAL_CHILD)
    kernel(monkeypatch, lambda path, v: scheduler_file(path, v) if path.name == "scheduler" else None)
    outcomes = restore(root=disk.root)
    assert (outcomes[0].attr, outcomes[0].status) == ("queue/scheduler", "restored")
    assert read(disk, "queue/scheduler") == "none [mq-deadline] kyber bfq" and journal(disk) == {}


def test_a_put_back_waits_for_its_own_interrupted_write_and_then_puts_back(disk, monkeypatch, tmp_path):
    """Ctrl-C lands while the kernel is in a write that returns soon after (a switch under load): the put-back that
    follows waits for that write, then reads the device and puts its original back, leaving no entry behind."""
    monkeypatch.setenv("IOSCHED_WRITE_DEADLINE", "60")
    writer_code(monkeypatch, marking(late_child(0.6), tmp_path / "held"))
    disk.write("sys/block/sda/queue/read_ahead_kb", "128\n")
    try:
        with pytest.raises(KeyboardInterrupt), ctrl_c_once(tmp_path / "held"):
            write_attr("sda", "queue/read_ahead_kb", "256", root=disk.root)
        entry = journal(disk)["sda/queue/read_ahead_kb"]
        assert entry.pending is not None and entry.pending.value == "256"
        started = time.monotonic()
        (outcome,) = restore(root=disk.root)
        assert time.monotonic() - started < writes.SETTLE_S
        assert (outcome.status, outcome.current) == ("restored", "256"), outcome  # the late write, then put back
        assert read(disk, "queue/read_ahead_kb") == "128" and journal(disk) == {}
    finally:
        end_left_writers()


def test_an_answer_is_never_read_as_the_answer_to_the_next_write(disk, monkeypatch, tmp_path):
    """A write whose wait was interrupted leaves its writer behind: the next write is answered by a new writer, not
    by the old one's late answer (a failing write read as ok, a good one as the failure before it)."""
    writer_code(monkeypatch, marking(late_child(0.5), tmp_path / "held"))
    try:
        with pytest.raises(KeyboardInterrupt), ctrl_c_once(tmp_path / "held"):
            writes._raw_write(disk.root / "sys/block/sda/queue/read_ahead_kb", "256", "sda", "queue/read_ahead_kb")
        # The next: a folder cannot be opened for writing; the late "ok" above must not answer it.
        with pytest.raises(writes.IoschedError, match="opening sda queue failed: Is a directory"):
            writes._raw_write(disk.root / "sys/block/sda/queue", "1", "sda", "queue")
    finally:
        end_left_writers()


def test_a_write_killed_with_its_process_is_journaled_as_on_its_way(tree, tmp_path):
    """SIGKILL while the kernel is in the write: no code of iosched runs after it, and the journal on disk already
    holds the original and the value on its way, with its writer."""
    tree.add_disk("sda", "8:0", scheduler="none [mq-deadline] kyber bfq")
    script = ("import sys\n"
              "from iosched.core.settings import writes\n"
              "writes._CHILD = writes._CHILD.replace('    try:\\n        fd = os.open(', "
              "'    import time; time.sleep(3600)\\n    try:\\n        fd = os.open(', 1)\n"
              "writes.write_attr('sda', 'queue/scheduler', 'bfq', root=sys.argv[1])\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(tree.root)],
                            env={**os.environ, "IOSCHED_WRITE_DEADLINE": "3600"})
    entry = None
    try:
        for _ in range(600):
            with contextlib.suppress(KeyError):
                entry = journal(tree)["sda/queue/scheduler"]
                break
            assert proc.poll() is None
            time.sleep(0.05)
        assert entry is not None, "the write was never journaled while its writer waited"
        proc.kill()
        proc.wait()
        entry = journal(tree)["sda/queue/scheduler"]
        assert entry.original == "mq-deadline" and entry.pending is not None and entry.pending.value == "bfq"
        assert running(entry.pending.pid, entry.pending.start)  # the writer, still in the kernel's hands
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if entry is not None and entry.pending is not None and running(entry.pending.pid, entry.pending.start):
            os.kill(entry.pending.pid, 9)


@pytest.mark.parametrize("text", ["0", "abc", "1e9", "-1", "nan"])
def test_a_deadline_out_of_bounds_is_one_sentence_before_anything_changes(disk, monkeypatch, text):
    monkeypatch.setenv("IOSCHED_WRITE_DEADLINE", text)
    with pytest.raises(BadInput, match=r"IOSCHED_WRITE_DEADLINE must be seconds from 0\.1 to 3600"):
        write_attr("sda", "queue/read_ahead_kb", "256", root=disk.root)
    assert read(disk, "queue/read_ahead_kb") == "128" and journal(disk) == {}
