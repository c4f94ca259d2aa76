"""Whether tuned's active profile sets a disk's scheduler, read from its files on fixture trees (no tuned here)."""

from __future__ import annotations

import os

from iosched.core.advice.tuned_profile import devices_match, first_offered, tuned_state
from iosched.core.advice.udev_rules import disk_facts


def profile(tree, where: str, name: str, text: str) -> None:
    tree.write(f"{where}/{name}/tuned.conf", text)


def test_no_tuned_at_all(tree):
    tree.add_disk("sda", "8:0")
    state = tuned_state(disk_facts("sda", tree.root))
    assert state.active == () and not state.running and state.disks == () and state.effective() is None


def test_active_profile_with_an_include_and_a_disk_section(tree):
    tree.add_disk("sda", "8:0", rotational=True)
    tree.add_disk("nvme0n1", "259:0")
    tree.write("etc/tuned/active_profile", "my-server\n")
    profile(tree, "usr/lib/tuned", "throughput-performance", "[main]\nsummary=base\n\n[disk]\nreadahead=>4096\n"
            "elevator=mq-deadline\n")
    profile(tree, "etc/tuned", "my-server", "[main]\ninclude=throughput-performance\n\n[disk]\n"
            "devices=sd*, !sdb\nelevator=bfq,mq-deadline\n\n[nvme]\ntype=disk\ndevices=nvme*\nelevator=none\n")
    tree.write("run/tuned/tuned.pid", f"{os.getpid()}\n")
    (tree.root / "proc" / str(os.getpid())).mkdir()
    sda = tuned_state(disk_facts("sda", tree.root))
    assert sda.active == ("my-server",) and sda.running
    disk = sda.effective()
    assert disk.section == "disk" and disk.elevator == "bfq,mq-deadline" and disk.match == "yes"
    assert disk.profile == "my-server" and disk.file == "/etc/tuned/my-server/tuned.conf"
    assert first_offered(disk.elevator, ["none", "mq-deadline"]) == "mq-deadline"
    nvme = tuned_state(disk_facts("nvme0n1", tree.root))
    assert [(d.section, d.match) for d in nvme.disks] == [("disk", "no"), ("nvme", "yes")]
    assert "leaves nvme0n1 out" in nvme.disks[0].why
    assert nvme.effective().elevator == "none"


def test_replace_drops_what_the_parent_said_and_missing_profiles_are_named(tree):
    tree.add_disk("sdb", "8:16")
    tree.write("etc/tuned/active_profile", "child ghost ../etc\n")
    profile(tree, "usr/lib/tuned/profiles", "parent", "[disk]\ndevices=sdb\nelevator=kyber\n")
    profile(tree, "etc/tuned/profiles", "child", "[main]\ninclude=parent\n[disk]\nreplace=1\nreadahead=128\n")
    state = tuned_state(disk_facts("sdb", tree.root))
    assert state.disks == ()  # the child's [disk] replaced the parent's, elevator and all
    assert "tuned profile 'ghost' was not found" in state.problems
    assert any("'../etc' is not one tuned would look up" in p for p in state.problems)


def test_udev_regex_read_only_when_it_is_a_plain_string(tree):
    tree.add_disk("sda", "8:0")
    tree.write("run/udev/data/b8:0", "E:ID_SERIAL=WDC_WD40EFRX_WD-1\n")
    tree.write("etc/tuned/active_profile", "p\n")
    profile(tree, "etc/tuned", "p", "[a]\ntype=disk\ndevices_udev_regex=ID_SERIAL=WDC_WD40EFRX_WD\\-1\nelevator=bfq\n"
            "[b]\ntype=disk\ndevices_udev_regex=ID_SERIAL=(a+)+$\nelevator=kyber\n"
            "[c]\ntype=disk\ndevices_udev_regex=ID_MODEL=Other\nelevator=none\n")
    got = {d.section: (d.match, d.why) for d in tuned_state(disk_facts("sda", tree.root)).disks}
    assert got["a"][0] == "yes"
    assert got["b"][0] == "maybe" and "does not run" in got["b"][1]
    assert got["c"][0] == "no"


def test_removable_and_mmc_disks_are_not_the_disk_plugins(tree):
    tree.add_disk("sdc", "8:32", extra={"removable": "1"})
    tree.add_disk("mmcblk0", "179:0")
    tree.write("etc/tuned/active_profile", "p\n")
    profile(tree, "etc/tuned", "p", "[disk]\nelevator=bfq\n")
    assert "removable" in tuned_state(disk_facts("sdc", tree.root)).disks[0].why
    assert tuned_state(disk_facts("mmcblk0", tree.root)).disks[0].match == "no"


def test_a_profile_tuned_cannot_be_read_as_is_named(tree):
    tree.add_disk("sda", "8:0")
    tree.write("etc/tuned/active_profile", "p\n")
    profile(tree, "etc/tuned", "p", "not a section\nelevator=bfq\n")
    state = tuned_state(disk_facts("sda", tree.root))
    assert state.disks == () and "not a profile iosched can read" in state.problems[0]


def test_devices_expressions_as_tuned_reads_them():
    assert devices_match("", "sda") and devices_match("*", "nvme0n1")
    assert devices_match("sd*,nvme*", "nvme0n1") and not devices_match("sd*", "nvme0n1")
    assert not devices_match("!sda", "sda") and devices_match("!sda", "sdb")
    assert devices_match("sd* !sdb", "sda") and not devices_match("sd* !sdb", "sdb")
