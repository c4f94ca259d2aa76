"""Persistence: udev rules generated, merged, parsed back, removed; checked by `udevadm test` on a loop device."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from iosched.core.base.errors import BadInput
from iosched.core.settings.persist import Rule, build_rule, merged, parse_rules, tuned_snippet, without

from conftest import need, need_real, run_cli


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
    text = tuned_snippet(Rule("kernel-name", "sdb", "bfq", (("read_ahead_kb", "512"), ("low_latency", "0"))), "sdb")
    assert text.splitlines()[:4] == ["[disk]", "devices=sdb", "elevator=bfq", "readahead=512"]
    assert "[sysfs]\n/sys/block/sdb/queue/iosched/low_latency=0" in text


def test_cli_persist_writes_lists_removes(loopdev, tmp_path):
    rules_dir = tmp_path / "rules.d"
    rules_dir.mkdir()
    d = ["--rules-dir", str(rules_dir)]
    r = run_cli("persist", loopdev.name, "bfq", "--by", "kernel-name", "--set", "low_latency=0", "--dry-run", *d)
    assert r.returncode == 0 and "+# iosched: by=kernel-name" in r.stdout and not any(rules_dir.iterdir())
    r = run_cli("persist", loopdev.name, "bfq", "--by", "kernel-name", "--set", "low_latency=0", *d)
    assert r.returncode == 0 and "udevadm control --reload" in r.stdout
    f = rules_dir / "61-iosched.rules"
    assert oct(f.stat().st_mode & 0o777) == "0o644"
    assert run_cli("persist", "--list", *d).stdout.strip() == f"kernel-name={loopdev.name}: bfq low_latency=0"
    assert "already has this rule" in run_cli("persist", loopdev.name, "bfq", "--by", "kernel-name",
                                              "--set", "low_latency=0", *d).stdout
    r = run_cli("persist", loopdev.name, "bfq", "--by", "serial", *d)
    assert r.returncode == 2 and "no serial" in r.stderr
    r = run_cli("persist", loopdev.name, "bfq", "--by", "rotational", *d)
    assert r.returncode == 2 and "is not one: use --by kernel-name" in r.stderr
    r = run_cli("persist", loopdev.name, "--remove", "--by", "kernel-name", *d)
    assert r.returncode == 0 and not f.exists()
    assert loopdev.current() == loopdev.initial_scheduler  # persisting never touched the device


def test_udevadm_test_shows_the_rule_matches_and_sets(loopdev, tmp_path):
    need_real()
    need(shutil.which("udevadm") is not None, "needs udevadm (Debian package udev)")
    # udevadm test reads the system rule directories only: /run/udev/rules.d is tmpfs and ours for the test.
    run_rules = Path("/run/udev/rules.d")
    run_rules.mkdir(parents=True, exist_ok=True)
    name = f"60-iosched-test-{os.getpid()}.rules"
    r = run_cli("persist", loopdev.name, "kyber", "--by", "kernel-name", "--set", "read_lat_nsec=1000000",
                "--rules-file", str(run_rules / name))
    assert r.returncode == 0, r.stderr
    try:
        out = subprocess.run(["udevadm", "test", "--action=change", f"/sys/class/block/{loopdev.name}"],
                             capture_output=True, text=True, timeout=60)
        text = out.stdout + out.stderr
        attr = re.escape(f"/sys/devices/virtual/block/{loopdev.name}/queue/scheduler")
        assert re.search(rf"{re.escape(name)}:\d+ ATTR '{attr}' writing 'kyber'", text), text
        assert "queue/iosched/read_lat_nsec' writing '1000000'" in text
    finally:
        (run_rules / name).unlink(missing_ok=True)
    # udevadm test applies ATTR writes: the rule really took; the fixture puts the scheduler back.
    assert loopdev.current() == "kyber"
