"""Persistence: udev rules generated, merged, parsed back, removed; checked by `udevadm test` on a loop device."""


import pytest

from iosched.core.base.errors import BadInput
from iosched.core.settings.persist import Rule, build_rule, merged, parse_rules, tuned_snippet, without


def test_rule_text_is_the_modern_syntax_and_parses_back():
    r = Rule("serial", "WDC_WD40EFRX_WD-123", "bfq", (("low_latency", "0"), ("read_ahead_kb", "512")))
    line = r.line()
    assert line.startswith('ACTION=="add|change", SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", ')
    assert 'ENV{ID_SERIAL}=="WDC_WD40EFRX_WD-123"' in line and 'TEST=="queue/scheduler"' in line
    # the scheduler before its tunables: a switch resets them
    assert line.index('ATTR{queue/scheduler}="bfq"') < line.index('ATTR{queue/iosched/low_latency}="0"')
    assert 'ATTR{queue/read_ahead_kb}="512"' in line and "SYSFS{" not in line
    rot = Rule("rotational", "0", "none").line()
    assert 'ATTR{queue/rotational}=="0"' in rot and "nvme[0-9]*n[0-9]*" in rot
    (back,), foreign = parse_rules(merged("", r))
    assert back == r and foreign == []


def test_merge_keeps_one_rule_per_match_and_foreign_lines():
    text = "# my own note\nKERNEL==\"sdz\", ATTR{queue/scheduler}=\"none\"\n"
    a = merged(text, Rule("kernel-name", "sda", "bfq"))
    b = merged(a, Rule("kernel-name", "sdb", "kyber"))
    c = merged(b, Rule("kernel-name", "sda", "mq-deadline"))
    rules, foreign = parse_rules(c)
    assert [(r.match, r.scheduler) for r in rules] == [("sdb", "kyber"), ("sda", "mq-deadline")]
    assert foreign[-2:] == ["# my own note", 'KERNEL=="sdz", ATTR{queue/scheduler}="none"']
    assert merged(c, Rule("kernel-name", "sda", "mq-deadline")) == c  # idempotent
    d, found = without(c, "kernel-name", "sdb")
    assert found and [r.match for r in parse_rules(d)[0]] == ["sda"]


def test_build_rule_validates_against_the_device(tree):
    tree.add_disk("sda", "8:0", scheduler="none [mq-deadline] kyber bfq", rotational=True)
    assert build_rule("sda", "bfq", [], "rotational", tree.root).match == "1"
    tree.write("run/udev/data/b8:0", 'E:ID_SERIAL=Disk_"evil"\nE:ID_MODEL=WDC\n')
    assert build_rule("sda", "bfq", [("low_latency", "0")], "model", tree.root).match == "WDC"
    with pytest.raises(BadInput, match="no scheduler 'cfq'"):
        build_rule("sda", "cfq", [], "kernel-name", tree.root)
    with pytest.raises(BadInput, match="bfq has no setting 'read_expire'"):
        build_rule("sda", "bfq", [("read_expire", "1")], "kernel-name", tree.root)
    with pytest.raises(BadInput, match="cannot be matched safely"):
        build_rule("sda", "bfq", [], "serial", tree.root)


def test_tuned_snippet():
    text = tuned_snippet(Rule("kernel-name", "sdb", "bfq", (("read_ahead_kb", "512"), ("low_latency", "0"))))
    assert text.splitlines()[:4] == ["[disk]", "devices=sdb", "elevator=bfq", "readahead=512"]
    assert "[sysfs]\n/sys/block/sdb/queue/iosched/low_latency=0" in text
