"""Rules for a class of disks (`persist --class non-rotational SCHED`) and the rule for a device or class in one call
(`rule_for`): the rule text, what it reaches in words, and dry runs that work where udev's directory is missing."""

from __future__ import annotations

import pytest

from iosched.core.base.errors import BadInput
from iosched.core.settings.persist import (
    Rule,
    apply_hint,
    build_class_rule,
    class_flag,
    parse_rules,
    read_rules_file,
    tuned_snippet,
)
from iosched.core.settings.persist_target import RuleChoice, rule_for

from conftest import run_cli
from fixtree import FixTree


@pytest.mark.parametrize(("name", "flag"), [("non-rotational", "0"), ("nonrotational", "0"), ("SSD", "0"), ("0", "0"),
                                            ("rotational", "1"), ("hdd", "1"), ("1", "1")])
def test_a_class_names_its_rotational_flag(name, flag):
    assert class_flag(name) == flag


@pytest.mark.parametrize("name", ["flash", "", "2", "rotational;x", "nvme"])
def test_an_unknown_class_is_one_sentence(name):
    with pytest.raises(BadInput, match=r"^--class .*: non-rotational \(or ssd\) or rotational \(or hdd\)$"):
        class_flag(name)


def test_a_class_rule_needs_no_device_and_checks_what_the_kernel_offers():
    rule = build_class_rule("ssd", "kyber", [("read_lat_nsec", "2000000"), ("nr_requests", "256")])
    assert rule == Rule("rotational", "0", "kyber", (("read_lat_nsec", "2000000"), ("nr_requests", "256")))
    line = rule.line()
    assert 'KERNEL=="sd*|vd*|xvd*|hd*|nvme[0-9]*n[0-9]*|mmcblk[0-9]*", ATTR{queue/rotational}=="0"' in line
    assert line.index('ATTR{queue/scheduler}="kyber"') < line.index('ATTR{queue/iosched/read_lat_nsec}="2000000"')
    assert 'ATTR{queue/nr_requests}="256"' in line and 'ENV{DEVTYPE}=="disk"' in line
    (back,), _ = parse_rules(f"{rule.tag()}\n{line}\n")
    assert back == rule
    assert "--subsystem-match=block" in apply_hint(rule) and "--sysname-match" not in apply_hint(rule)
    with pytest.raises(BadInput, match="no scheduler 'cfq' here: the kernel's are none, mq-deadline, kyber, bfq, and "
                                       "this machine lists or could load"):
        build_class_rule("ssd", "cfq", [])
    with pytest.raises(BadInput, match="bfq has no setting 'read_expire'"):
        build_class_rule("hdd", "bfq", [("read_expire", "100")])
    with pytest.raises(BadInput, match="low_latency must lie between 0 and 1"):
        build_class_rule("hdd", "bfq", [("low_latency", "5")])
    with pytest.raises(BadInput, match="none has no setting 'slice_idle'"):
        build_class_rule("ssd", "none", [("slice_idle", "0")])


def test_rule_for_a_device_says_what_it_reaches_and_warns_of_an_unstable_name(tree):
    tree.add_disk("sda", "8:0", scheduler="none [mq-deadline] kyber bfq", rotational=True)
    tree.write("run/udev/data/b8:0", "E:ID_SERIAL=WDC_WD40EFRX_WD-1\nE:ID_MODEL=WDC_WD40EFRX\n")
    tree.add_disk("loop3", "7:3")
    got = rule_for("bfq", [("low_latency", "0")], device="sda", root=tree.root)
    assert isinstance(got, RuleChoice) and got.rule == Rule("serial", "WDC_WD40EFRX_WD-1", "bfq",
                                                            (("low_latency", "0"),))
    assert got.scope == "this disk wherever it appears (serial WDC_WD40EFRX_WD-1)" and got.warning is None
    assert rule_for("bfq", device="sda", by="model", root=tree.root).scope == "every disk of model WDC_WD40EFRX"
    by_class = rule_for("bfq", device="sda", by="rotational", root=tree.root)
    assert by_class.rule.match == "1" and by_class.scope.startswith("every rotational disk (sd*, vd*")
    assert "not a reliable HDD signal: virtio disks often say 1" in by_class.scope
    loop = rule_for("none", device="loop3", root=tree.root)
    assert loop.rule.by == "kernel-name" and "loop device" in (loop.warning or "")
    doc = got.to_json()
    assert doc["scope"] == got.scope and doc["rule"] == got.rule.line() and doc["settings"] == {"low_latency": "0"}
    assert got.tuned.startswith("[disk]\ndevices_udev_regex=ID_SERIAL=WDC_WD40EFRX_WD\\-1\nelevator=bfq\n")


def test_rule_for_a_class_with_or_without_a_device(tree):
    tree.add_disk("sda", "8:0", scheduler="none [mq-deadline] bfq", rotational=True)
    tree.add_disk("loop3", "7:3")
    free = rule_for("kyber", klass="non-rotational", root=tree.root)
    assert free.rule == Rule("rotational", "0", "kyber") and free.warning is None
    assert free.scope == "every non-rotational disk (sd*, vd*, xvd*, hd*, nvme*n*, mmcblk* whose queue/rotational is 0)"
    # A device named is what the scheduler and settings are checked against; the rule need not reach it.
    with pytest.raises(BadInput, match="sda has no scheduler 'kyber'"):
        rule_for("kyber", klass="ssd", device="sda", root=tree.root)
    other = rule_for("bfq", klass="ssd", device="sda", root=tree.root)
    assert other.rule.match == "0" and other.warning == "sda is not in this class: the rule leaves it as it is."
    assert rule_for("bfq", klass="hdd", device="sda", root=tree.root).warning is None
    unreached = rule_for("bfq", klass="ssd", device="loop3", root=tree.root)
    assert "loop3 is not among the disks a class rule reaches" in (unreached.warning or "")
    with pytest.raises(BadInput, match="--by serial does not apply"):
        rule_for("bfq", klass="ssd", by="serial", root=tree.root)
    with pytest.raises(BadInput, match="a rule needs a device, or a class"):
        rule_for("bfq", root=tree.root)
    snippet = tuned_snippet(free.rule)
    assert snippet.splitlines()[:3] == [
        "[disk]", "# tuned's [disk] cannot test queue/rotational: list the non-rotational disks with devices=",
        "elevator=kyber"]


def test_a_missing_rules_directory_reads_as_empty_only_when_asked(tmp_path):
    missing = tmp_path / "nope" / "rules.d" / "61-iosched.rules"
    assert read_rules_file(missing, missing_dir_ok=True) == ""
    with pytest.raises(BadInput, match="does not exist"):
        read_rules_file(missing)
    # A path through a file (or any parent that exists but is no directory) is still refused.
    (tmp_path / "afile").write_text("x")
    with pytest.raises(BadInput, match="does not exist"):
        read_rules_file(tmp_path / "afile" / "61-iosched.rules", missing_dir_ok=True)


def cli_tree(tmp_path) -> tuple[FixTree, list[str]]:
    tree = FixTree(tmp_path / "root")
    tree.add_disk("sda", "8:0", scheduler="none [mq-deadline] kyber bfq")
    return tree, ["--root", str(tree.root)]


def test_cli_class_rule_written_listed_replaced_and_removed(tmp_path):
    _, root = cli_tree(tmp_path)
    rules_dir = tmp_path / "rules.d"
    rules_dir.mkdir()
    into = ["--rules-dir", str(rules_dir)]
    f = rules_dir / "61-iosched.rules"
    r = run_cli(*root, "persist", "--class", "non-rotational", "kyber", "--set", "read_lat_nsec=2000000", *into)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("reaches: every non-rotational disk (sd*, vd*")
    assert "+# iosched: by=rotational match=0" in r.stdout and "udev reads rules from" in r.stdout
    assert run_cli(*root, "persist", "--list", *into).stdout == "rotational=0: kyber read_lat_nsec=2000000\n"
    # The device-named form writes the same rule (merged by match, so it replaces this one).
    r = run_cli(*root, "persist", "sda", "mq-deadline", "--by", "rotational", *into)
    assert r.returncode == 0, r.stderr
    assert [(x.by, x.match, x.scheduler) for x in parse_rules(f.read_text())[0]] == [("rotational", "0", "mq-deadline")]
    r = run_cli(*root, "persist", "--class", "hdd", "bfq", *into)
    assert r.returncode == 0 and "virtio disks often say 1" in r.stdout
    r = run_cli(*root, "persist", "--remove", "--class", "ssd", "--dry-run", *into)
    assert r.returncode == 0 and '-ACTION=="add|change"' in r.stdout and len(parse_rules(f.read_text())[0]) == 2
    r = run_cli(*root, "persist", "--remove", "--class", "ssd", *into)
    assert r.returncode == 0 and "those disks keep their current scheduler" in r.stdout
    assert [x.match for x in parse_rules(f.read_text())[0]] == ["1"]
    r = run_cli(*root, "persist", "--remove", "--class", "ssd", *into)
    assert r.returncode == 0 and r.stdout.startswith("no iosched rule for every non-rotational disk")


@pytest.mark.parametrize(("args", "why"), [
    (["--class", "ssd"], "persist needs DEVICE SCHEDULER, or --class CLASS SCHEDULER"),
    (["--class", "flash", "bfq"], "--class 'flash': non-rotational"),
    (["--class", "ssd", "bfq", "--by", "kernel-name"], "--class makes a rule by rotational flag"),
    (["--class", "ssd", "bfq", "--set", "read_expire=5"], "bfq has no setting 'read_expire'"),
    (["--remove"], "persist --remove needs a DEVICE, or --class CLASS"),
    (["--remove", "--class", "ssd", "--by", "model"], "--by model does not apply"),
])
def test_cli_class_mistakes_are_one_sentence_and_change_nothing(tmp_path, args, why):
    _, root = cli_tree(tmp_path)
    rules_dir = tmp_path / "rules.d"
    rules_dir.mkdir()
    r = run_cli(*root, "persist", *args, "--rules-dir", str(rules_dir))
    assert r.returncode == 2 and r.stdout == "" and why in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not any(rules_dir.iterdir())


def test_cli_dry_run_and_tuned_work_without_the_rules_directory(tmp_path):
    _, root = cli_tree(tmp_path)
    missing = tmp_path / "no-udev" / "rules.d"
    into = ["--rules-dir", str(missing)]
    for args in (["sda", "bfq", "--by", "kernel-name"], ["--class", "ssd", "bfq"], ["sda", "bfq", "--class", "ssd"]):
        r = run_cli(*root, "persist", *args, "--dry-run", *into)
        assert r.returncode == 0, r.stderr
        assert "+ACTION==\"add|change\"" in r.stdout and f"rules directory {missing} does not exist" in r.stdout
        r = run_cli(*root, "persist", *args, "--format", "tuned", *into)
        assert r.returncode == 0 and r.stdout.startswith("[disk]\n") and "elevator=bfq" in r.stdout, r.stderr
    assert run_cli(*root, "persist", "--list", *into).stdout.startswith(f"no iosched rules in {missing}")
    r = run_cli(*root, "persist", "sda", "--remove", "--by", "kernel-name", *into)
    assert r.returncode == 0 and r.stdout.startswith("no iosched rule for sda by kernel-name")
    # Writing there is refused before anything is made, in one sentence naming the way out.
    r = run_cli(*root, "persist", "--class", "ssd", "bfq", *into)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert f"rules directory {missing} does not exist" in r.stderr and "--dry-run shows it" in r.stderr
    assert not missing.parent.exists()
