"""Which udev rules set a disk's scheduler, read statically on fixture trees: udev's file order and overrides,
masks, the match keys, GOTO, final assignments, iosched's own rules; random rules text never raises."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iosched.core.advice.udev_rules import (
    disk_facts,
    effective_scheduler_rule,
    effective_setting_rules,
    match_rule,
    parse_rules_text,
    queue_rules,
    rule_files,
)
from iosched.core.settings.persist import Rule, merged

from fixtree import FixTree

BASE = 'ACTION=="add|change", SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", '


def rules(tree: FixTree, rel: str, text: str) -> Path:
    return tree.write(rel, text)


def scsi_disk(tree: FixTree, name: str = "sda", rotational: bool = True) -> None:
    """A disk at the end of a real-looking sysfs path: PCI, ATA host, SCSI device (model, vendor), block."""
    dev = "sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0"
    for folder in ("sys/devices/pci0000:00", "sys/devices/pci0000:00/0000:00:1f.2",
                   "sys/devices/pci0000:00/0000:00:1f.2/ata1", "sys/devices/pci0000:00/0000:00:1f.2/ata1/host0",
                   "sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0", dev):
        tree.write(f"{folder}/uevent", "")
    tree.write(f"{dev}/model", "WDC WD40EFRX    \n")
    tree.write(f"{dev}/vendor", "ATA     \n")
    (tree.root / "sys/bus/scsi/drivers/sd").mkdir(parents=True)
    (tree.root / "sys/class/scsi_device").mkdir(parents=True)
    os.symlink(tree.root / "sys/bus/scsi/drivers/sd", tree.root / dev / "driver")
    os.symlink(tree.root / "sys/class/scsi_device", tree.root / dev / "subsystem")
    block = tree.root / dev / "block" / name
    files = {"dev": "8:0", "size": "2048", "queue/rotational": "1" if rotational else "0",
             "queue/scheduler": "none [mq-deadline] kyber bfq", "uevent": f"MAJOR=8\nMINOR=0\nDEVNAME={name}\n"
             "DEVTYPE=disk\n", "removable": "0"}
    for rel, text in files.items():
        tree.write(str((block / rel).relative_to(tree.root)), text + "\n")
    os.symlink(block, tree.root / "sys/block" / name)
    tree.write("run/udev/data/b8:0", "E:ID_SERIAL=WDC_WD40EFRX_WD-1\nE:ID_BUS=ata\nG:systemd\n")


def test_udev_order_overrides_and_masks(tree):
    tree.add_disk("sda", "8:0")
    rules(tree, "usr/lib/udev/rules.d/60-a.rules", BASE + 'ATTR{queue/scheduler}="bfq"\n')
    rules(tree, "etc/udev/rules.d/60-a.rules", BASE + 'ATTR{queue/scheduler}="kyber"\n')  # hides /usr/lib's
    rules(tree, "lib/udev/rules.d/10-b.rules", BASE + 'ATTR{queue/scheduler}="none"\n')
    rules(tree, "run/udev/rules.d/99-c.rules", BASE + 'ATTR{queue/scheduler}="mq-deadline"\n')
    (tree.root / "etc/udev/rules.d/99-c.rules").symlink_to("/dev/null")  # masks /run's
    rules(tree, "etc/udev/rules.d/notes.txt", BASE + 'ATTR{queue/scheduler}="bfq"\n')
    files = [str(p.relative_to(tree.root)) for p in rule_files(tree.root)]
    assert files == ["lib/udev/rules.d/10-b.rules", "etc/udev/rules.d/60-a.rules"]
    hits, problems = queue_rules("sda", tree.root)
    assert problems == []
    assert [(h.file, h.scheduler, h.match) for h in hits] == [
        ("/lib/udev/rules.d/10-b.rules", "none", "yes"), ("/etc/udev/rules.d/60-a.rules", "kyber", "yes")]
    assert effective_scheduler_rule(hits).scheduler == "kyber"  # the later one wins


def test_a_final_assignment_wins_over_later_ones(tree):
    tree.add_disk("sda", "8:0")
    rules(tree, "etc/udev/rules.d/50-x.rules", BASE + 'ATTR{queue/scheduler}:="bfq"\n')
    rules(tree, "etc/udev/rules.d/70-y.rules", BASE + 'ATTR{queue/scheduler}="none"\n')
    hits, _ = queue_rules("sda", tree.root)
    top = effective_scheduler_rule(hits)
    assert top.scheduler == "bfq" and top.final and top.where() == "/etc/udev/rules.d/50-x.rules:1"


def test_match_keys_against_the_disk(tree):
    tree.add_disk("nvme0n1", "259:0", rotational=False)
    tree.write("run/udev/data/b259:0", "E:ID_MODEL=Samsung SSD 980\n")
    text = "\n".join([
        "# distribution defaults",
        'ACTION=="add|change", KERNEL=="sd[a-z]*|mmcblk[0-9]*", ATTR{queue/scheduler}="bfq"',
        'ACTION=="add|change", KERNEL=="nvme[0-9]*n[0-9]*", ATTR{queue/rotational}=="1", ATTR{queue/scheduler}="bfq"',
        'ACTION=="add|change", KERNEL=="nvme[0-9]*", ATTR{queue/rotational}=="0", \\',
        '  TEST=="queue/scheduler", ATTR{queue/scheduler}="kyber"',
        'ACTION=="remove", ATTR{queue/scheduler}="none"',
        'SUBSYSTEM=="block", ENV{ID_MODEL}=="Samsung*", ATTR{queue/iosched/read_lat_nsec}="500000"',
        'SUBSYSTEM=="block", ENV{ID_MODEL}!="Samsung*", ATTR{queue/nr_requests}="32"',
        'SUBSYSTEM=="block", PROGRAM=="/bin/is-fast %k", ATTR{queue/scheduler}="none"',
        'SUBSYSTEM=="block", TEST=="queue/nope", ATTR{queue/scheduler}="bfq"',
    ]) + "\n"
    rules(tree, "etc/udev/rules.d/60-sched.rules", text)
    hits, _ = queue_rules("nvme0n1", tree.root)
    got = {h.line: (h.scheduler, h.settings, h.match) for h in hits}
    assert got[2] == ("bfq", (), "no")
    assert got[3] == ("bfq", (), "no")
    assert got[4] == ("kyber", (), "yes")  # continued over two lines, numbered by its first
    assert got[6][2] == "no"  # only on remove
    assert got[7] == (None, (("read_lat_nsec", "500000"),), "yes")
    assert got[8][2] == "no"
    assert got[9] == ("none", (), "maybe")
    assert got[10][2] == "no"
    why = {h.line: h.why for h in hits}
    assert "the kernel name is 'nvme0n1'" in why[2] and "queue/rotational" in why[3]
    assert "PROGRAM" in why[9] and "TEST 'queue/nope': absent" in why[10]
    top = effective_scheduler_rule(hits)
    assert top.line == 9 and top.match == "maybe"  # the last that may reach it
    assert effective_setting_rules(hits)["read_lat_nsec"].line == 7


def test_goto_skips_what_it_jumps_over_and_a_maybe_goto_makes_maybes(tree):
    tree.add_disk("sda", "8:0", rotational=True)
    text = "\n".join([
        'SUBSYSTEM!="block", GOTO="end"',
        'KERNEL=="sd*", GOTO="end"',
        'ATTR{queue/scheduler}="kyber"',
        'LABEL="end"',
        'IMPORT{program}="probe %k", GOTO="tail"',
        'ATTR{queue/scheduler}="bfq"',
        'LABEL="tail"',
        'ATTR{queue/scheduler}="mq-deadline"',
        'GOTO="nowhere", ATTR{queue/scheduler}="none"',
    ]) + "\n"
    rules(tree, "etc/udev/rules.d/60-goto.rules", text)
    hits, _ = queue_rules("sda", tree.root)
    got = {h.line: (h.match, h.why) for h in hits}
    assert got[3] == ("no", "skipped by the GOTO at line 2")
    assert got[6][0] == "maybe"  # IMPORT's outcome is only known when udev runs it
    assert got[8] == ("yes", "every key matches")  # after the label: reached either way
    assert got[9][0] == "yes"  # a GOTO to no label is ignored, as udev ignores it
    assert effective_scheduler_rule(hits).line == 9


def test_parent_keys_must_match_on_one_parent(tree):
    scsi_disk(tree)
    facts = disk_facts("sda", tree.root)
    assert facts.devpath.endswith("/0:0:0:0/block/sda") and facts.parents[1].name == "0:0:0:0"
    text = "\n".join([
        'ATTRS{model}=="WDC WD40EFRX", ATTRS{vendor}=="ATA", ATTR{queue/scheduler}="bfq"',
        'ATTRS{model}=="WDC*", KERNELS=="host0", ATTR{queue/scheduler}="kyber"',  # not on one device
        'DRIVERS=="sd", SUBSYSTEMS=="scsi_device", ATTR{queue/scheduler}="none"',
        'SUBSYSTEMS=="block", KERNELS=="sda", TAG=="systemd", ATTR{queue/nr_requests}="64"',
        'ENV{ID_SERIAL}=="WDC_WD40EFRX_WD-1", ENV{DEVNAME}=="/dev/sda", DEVPATH=="*/block/sda", '
        'ATTR{queue/scheduler}="mq-deadline"',
    ]) + "\n"
    rules(tree, "etc/udev/rules.d/61-parents.rules", text)
    hits, _ = queue_rules("sda", tree.root)
    assert [h.match for h in hits] == ["yes", "no", "yes", "yes", "yes"]
    assert "no device on its path" in hits[1].why


def test_iosched_own_rules_are_told_by_their_tag(tree):
    scsi_disk(tree)
    ours = Rule("serial", "WDC_WD40EFRX_WD-1", "bfq", (("slice_idle", "0"),))
    other = Rule("serial", "SOMEONE_ELSE", "kyber")
    rules(tree, "etc/udev/rules.d/61-iosched.rules", merged(merged("", ours), other))
    rules(tree, "usr/lib/udev/rules.d/60-ioschedulers.rules",
          BASE + 'ATTR{queue/rotational}=="1", ATTR{queue/scheduler}="kyber"\n')
    hits, _ = queue_rules("sda", tree.root)
    mine = [h for h in hits if h.iosched]
    assert [(h.iosched, h.match) for h in mine] == [("by=serial match=WDC_WD40EFRX_WD-1", "yes"),
                                                      ("by=serial match=SOMEONE_ELSE", "no")]
    top = effective_scheduler_rule(hits)
    assert top.iosched == "by=serial match=WDC_WD40EFRX_WD-1" and top.settings == (("slice_idle", "0"),)


def test_unreadable_and_odd_files_are_named_not_raised(tree):
    tree.add_disk("sda", "8:0")
    (tree.root / "etc/udev/rules.d").mkdir(parents=True)
    os.mkfifo(tree.root / "etc/udev/rules.d/10-fifo.rules")
    (tree.root / "etc/udev/rules.d/20-big.rules").write_bytes(b"#" * ((1 << 20) + 1))
    rules(tree, "etc/udev/rules.d/30-junk.rules", 'KERNEL=="sd*" ATTR{queue/scheduler}="bfq" garbage here\n')
    hits, problems = queue_rules("sda", tree.root)
    assert any("10-fifo.rules: not a regular file" in p for p in problems)
    assert any("20-big.rules: larger than" in p for p in problems)
    assert hits[0].match == "maybe" and "cannot read the rule" in hits[0].why


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.sampled_from(list('AKTERNLSUBYMGOVDIP{}=!:+-|*?[]"\\ ,\n#$%')), max_size=300))
def test_random_rules_text_never_raises(tree, text):
    tree.add_disk("sda", "8:0")
    facts = disk_facts("sda", tree.root)
    for rule in parse_rules_text(text, Path("x.rules")):
        for action in ("add", "change"):
            assert match_rule(rule, facts, action)[0] in ("yes", "maybe", "no")


def test_a_model_rule_with_firmware_reaches_the_disks_of_that_firmware_only(tree):
    scsi_disk(tree)
    tree.write("run/udev/data/b8:0", "E:ID_SERIAL=WDC_WD40EFRX_WD-1\nE:ID_MODEL=WDC_WD40EFRX\nE:ID_REVISION=82.00A82\n")
    this = Rule("model", "WDC_WD40EFRX", "bfq", revision="82.00A82")
    other = Rule("model", "WDC_WD40EFRX", "kyber", revision="80.00A80")
    rules(tree, "etc/udev/rules.d/61-iosched.rules", merged(merged("", this), other))
    hits, _ = queue_rules("sda", tree.root)
    assert [(h.iosched, h.match) for h in hits if h.iosched] == [
        ("by=model match=WDC_WD40EFRX revision=82.00A82", "yes"),
        ("by=model match=WDC_WD40EFRX revision=80.00A80", "no")]
    assert effective_scheduler_rule(hits).scheduler == "bfq"
