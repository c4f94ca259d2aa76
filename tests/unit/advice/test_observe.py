"""Who set a disk's scheduler and tunables, on fixture trees: iosched's journal (a live iosched, or one gone),
tuned, a udev rule, the kernel's default, or none of them; contradictions are said."""

from __future__ import annotations

import os

import pytest

from iosched.core.advice.observe import observation_lines, observe
from iosched.core.settings.journal import Journal, JournalEntry

from fixtree import ADIOS, LAYOUTS, add_kernel_disk

BASE = 'ACTION=="add|change", SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", '


def nvme(tree, scheduler: str = "[none] mq-deadline kyber bfq") -> None:
    tree.add_disk("nvme0n1", "259:0", scheduler=scheduler)
    for i in range(4):
        tree.write(f"sys/block/nvme0n1/mq/{i}/nr_tags", "1023\n")


def hdd(tree, scheduler: str = "none [mq-deadline] kyber bfq", tunables: dict[str, str] | None = None) -> None:
    tree.add_disk("sda", "8:0", rotational=True, scheduler=scheduler, extra={"device/queue_depth": "32"})
    tree.write("sys/block/sda/mq/0/nr_tags", "64\n")
    base = {"read_expire": "500", "write_expire": "5000", "fifo_batch": "16"}
    for k, v in {**base, **(tunables or {})}.items():
        tree.write(f"sys/block/sda/queue/iosched/{k}", v + "\n")


def journal(run_dir, *entries: JournalEntry) -> None:
    with Journal(run_dir).locked() as held:
        for e in entries:
            held[e.key] = e


def test_the_kernel_default_on_an_nvme_drive(tree):
    nvme(tree)
    obs = observe("nvme0n1", tree.root)
    assert obs.scheduler == "none" and obs.set_by.kind == "kernel"
    assert "4 hardware queues" in obs.set_by.words
    lines = observation_lines(obs)
    assert lines[0].startswith("nvme0n1: none, set by the kernel's default: 4 hardware queues")
    assert "NVMe drive" in lines[1] and "the kernel's default here is none" in lines[2]


def test_a_udev_rule_set_it_and_will_set_it_again(tree):
    hdd(tree, "none mq-deadline kyber [bfq]")
    tree.write("usr/lib/udev/rules.d/60-ioschedulers.rules",
               BASE + 'KERNEL=="sd*", ATTR{queue/rotational}=="1", ATTR{queue/scheduler}="bfq"\n')
    obs = observe("sda", tree.root)
    assert obs.set_by.kind == "udev" and obs.set_by.where == "/usr/lib/udev/rules.d/60-ioschedulers.rules:1"
    assert obs.reapplying_rule is not None
    assert any("every change event" in n for n in obs.notes)
    assert any(line.startswith("  udev: /usr/lib/udev/rules.d/60-ioschedulers.rules:1 sets bfq: reaches it")
               for line in observation_lines(obs))


def test_a_rule_that_no_longer_holds_is_a_contradiction(tree):
    hdd(tree)  # mq-deadline now
    tree.write("etc/udev/rules.d/60-x.rules", BASE + 'KERNEL=="sda", ATTR{queue/scheduler}="bfq"\n')
    obs = observe("sda", tree.root)
    assert obs.set_by.kind == "kernel"
    assert any("sets bfq, yet sda has mq-deadline" in n for n in obs.notes)


def test_tuned_set_it(tree):
    nvme(tree, "none [mq-deadline] kyber bfq")
    tree.write("etc/tuned/active_profile", "p\n")
    tree.write("etc/tuned/p/tuned.conf", "[disk]\nelevator=mq-deadline\n")
    tree.write("usr/lib/udev/rules.d/60-a.rules", BASE + 'KERNEL=="nvme*", ATTR{queue/scheduler}="mq-deadline"\n')
    obs = observe("nvme0n1", tree.root)
    assert obs.set_by.kind == "tuned"  # applied after udev: tuned reacts to udev's events
    assert "tuned is not running now" in obs.set_by.words
    assert any("tuned (not running): profile p" in line for line in observation_lines(obs))


def test_iosched_changed_it_live_or_gone(tree, private_journal):
    hdd(tree, "none mq-deadline [kyber] bfq")
    journal(private_journal, JournalEntry("sda", "queue/scheduler", "mq-deadline", maj_min="8:0", pid=os.getpid()))
    (tree.root / "proc" / str(os.getpid())).mkdir()
    obs = observe("sda", tree.root)
    assert obs.set_by.kind == "iosched" and f"a running iosched (pid {os.getpid()})" in obs.set_by.words
    # one sentence: "set by a running iosched (pid N) changed it from …" read as two (#48 item 9)
    assert observation_lines(obs)[0] == (f"sda: kyber, set by a running iosched (pid {os.getpid()}), which changed "
                                         "it from mq-deadline")
    assert obs.journal[0].live and obs.journal[0].original == "mq-deadline"
    journal(private_journal, JournalEntry("sda", "queue/scheduler", "mq-deadline", maj_min="8:0", pid=999_999))
    obs = observe("sda", tree.root)
    assert "has ended" in obs.set_by.words and "`iosched restore` puts back mq-deadline" in obs.set_by.words


def test_an_entry_for_an_earlier_device_of_the_same_name_is_not_this_one(tree, private_journal):
    hdd(tree, "none mq-deadline [kyber] bfq")
    journal(private_journal, JournalEntry("sda", "queue/scheduler", "mq-deadline", maj_min="8:16", pid=1))
    obs = observe("sda", tree.root)
    assert obs.set_by.kind == "unknown" and obs.journal == ()
    assert "no journal entry, tuned profile or udev rule sets kyber" in obs.set_by.words


def test_tunables_and_who_set_them(tree, private_journal):
    hdd(tree, tunables={"read_expire": "100", "fifo_batch": "8", "write_expire": "3000"})
    tree.write("etc/udev/rules.d/61-t.rules", BASE + 'KERNEL=="sda", ATTR{queue/iosched/fifo_batch}="8"\n')
    journal(private_journal, JournalEntry("sda", "queue/iosched/read_expire", "500", maj_min="8:0",
                                          scheduler="mq-deadline", pid=999_999))
    obs = observe("sda", tree.root)
    by = {t.name: t for t in obs.tunables}
    assert by["read_expire"].set_by.kind == "iosched"
    assert by["fifo_batch"].set_by.kind == "udev" and by["fifo_batch"].set_by.where == "/etc/udev/rules.d/61-t.rules:1"
    assert by["write_expire"].set_by.kind == "unknown" and "not the kernel's default (5000)" in \
        by["write_expire"].set_by.words
    assert by["nr_requests"].scope == "queue" and not by["nr_requests"].changed
    lines = observation_lines(obs)
    assert any(line.startswith("  fifo_batch=8 (mq-deadline): set by the udev rule") for line in lines)


def test_an_unreadable_journal_is_said_not_raised(tree, private_journal):
    hdd(tree)
    private_journal.mkdir(parents=True, exist_ok=True)
    (private_journal / "journal.json").write_text("{not json")
    obs = observe("sda", tree.root)
    assert any("journal" in n and "unreadable" in n for n in obs.notes)


@pytest.mark.parametrize("layout", ["6.1", "next"])
def test_a_scheduler_outside_the_four_and_one_that_could_be_loaded(tree, private_journal, layout):
    add_kernel_disk(tree, "sda", "8:0", LAYOUTS[layout], "adios", ("none", "mq-deadline", "kyber", "bfq", "adios"))
    tree.write("proc/sys/kernel/osrelease", "7.0.0-test\n")
    tree.write("lib/modules/7.0.0-test/modules.alias", "alias kpp-iosched kpp\nalias bfq-iosched bfq\n")
    tree.write("sys/block/sda/queue/iosched/lat_target_read", "1000000\n")
    if layout == "next":  # async_depth in queue/, journaled there by an iosched (this one) that changed it
        tree.write("sys/block/sda/queue/async_depth", "32\n")
        journal(private_journal, JournalEntry("sda", "queue/async_depth", "256", maj_min="8:0", scheduler="adios",
                                              pid=os.getpid()))
    obs = observe("sda", tree.root)
    assert obs.scheduler == "adios" and obs.schedulers[-1] == "adios"
    tunables = {t.name: t for t in obs.tunables if t.scope == "adios"}
    assert set(tunables) == set(ADIOS) | ({"async_depth"} if layout == "next" else set())
    # Its defaults are not iosched's to know: as the kernel made it, as far as iosched can tell.
    assert tunables["lat_target_read"].default is None and tunables["lat_target_read"].set_by.kind == "kernel"
    if layout == "next":
        assert tunables["async_depth"].set_by.kind == "iosched" and "from 256" in tunables["async_depth"].set_by.words
    (note,) = [n for n in obs.notes if "installed as a module" in n]
    assert note.startswith("kpp is installed as a module but not loaded, so it is no candidate: `modprobe kpp` (or "
                           "`iosched set sda kpp --load-module`)")
    assert any("kpp is installed" in line for line in observation_lines(obs))
