"""What a persistence rule matches: the most stable identity first, a warning for a kernel name that is not
stable, the demo sandbox refused, and the change shown as a small diff before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from iosched.core.base.errors import BadInput
from iosched.core.settings.persist import Rule, build_rule, diff, merged, parse_rules
from iosched.core.settings.persist_target import auto_by, match_label, matches, name_warning, runtime_kind

from conftest import run_cli
from fixtree import FixTree


def test_serial_wwn_and_model_are_the_udev_properties_the_rule_matches(tree):
    tree.add_disk("sda", "8:0", scheduler="none [mq-deadline] bfq", extra={"device/model": "Samsung SSD 870 "})
    # ID_SERIAL_SHORT is what devices.py shows as the serial, but the rule matches ENV{ID_SERIAL}.
    tree.write("run/udev/data/b8:0", "E:ID_SERIAL=Samsung_SSD_870_S5SSNX0R\nE:ID_SERIAL_SHORT=S5SSNX0R\n"
                                     "E:ID_WWN=0x5002538f4230b1c2\nE:ID_MODEL=Samsung_SSD_870\n")
    assert build_rule("sda", "bfq", [], "serial", tree.root).match == "Samsung_SSD_870_S5SSNX0R"
    wwn = build_rule("sda", "bfq", [], "wwn", tree.root)
    assert 'ENV{ID_WWN}=="0x5002538f4230b1c2"' in wwn.line()
    assert build_rule("sda", "bfq", [], "model", tree.root).match == "Samsung_SSD_870"
    assert [by for by, _ in matches("sda", tree.root)] == ["serial", "wwn", "model", "rotational",
                                                       "kernel-name"]
    assert auto_by("sda", tree.root) == "serial"
    tree.write("run/udev/data/b8:0", "E:ID_WWN=0x5002538f4230b1c2\nE:ID_MODEL=Samsung_SSD_870\n")
    assert auto_by("sda", tree.root) == "wwn"
    tree.write("run/udev/data/b8:0", "E:ID_MODEL=Samsung_SSD_870\n")
    assert auto_by("sda", tree.root) == "model"
    tree.write("run/udev/data/b8:0", "")
    assert auto_by("sda", tree.root) == "kernel-name"  # sysfs's padded model is not what ENV{ID_MODEL} holds
    with pytest.raises(BadInput, match="no WWN"):
        build_rule("sda", "bfq", [], "wwn", tree.root)


@pytest.mark.parametrize("device", ["loop3", "nbd0", "zram1", "dm-2", "md127", "ram0"])
def test_run_time_numbered_kernel_names_are_warned_about(device):
    warning = name_warning(device, "kernel-name")
    assert warning and runtime_kind(device) in warning and f'KERNEL=="{device}"' in warning
    assert warning.count(".") == 1 and warning.endswith(".")  # one sentence
    assert "not stable" in match_label(device, "kernel-name", device)
    assert name_warning(device, "serial") is None


def test_other_kernel_names_are_warned_about_too_and_stable_matches_are_not():
    assert runtime_kind("sdb") is None and runtime_kind("mdx") is None
    assert "serial or WWN" in (name_warning("sdb", "kernel-name") or "")
    assert name_warning("sdb", "wwn") is None and name_warning("sdb", "model") is None


def test_a_demo_sandbox_is_refused_even_once_its_file_is_deleted(tree):
    tree.add_disk("loop9", "7:9", extra={"loop/backing_file": "/var/tmp/iosched-demo-k2j4x/disk.img (deleted)"})
    with pytest.raises(BadInput, match="demo sandbox"):
        build_rule("loop9", "bfq", [], "kernel-name", tree.root)
    tree.add_disk("loop8", "7:8", extra={"loop/backing_file": "/var/tmp/iosched-demo-k2j4x/other.img"})
    assert build_rule("loop8", "bfq", [], "kernel-name", tree.root).match == "loop8"


def test_the_diff_is_the_rule_lines_added_or_replaced():
    first = merged("", Rule("kernel-name", "sdb", "bfq"))
    both = merged(first, Rule("serial", "X_1", "none"))
    changed = merged(both, Rule("kernel-name", "sdb", "kyber"))
    d = diff(both, changed, "61-iosched.rules")
    body = [line for line in d.splitlines()[2:] if not line.startswith("@@")]
    # Rules merge by match: the sdb rule moves to the end with its new scheduler, the serial rule stays.
    assert [line[0] for line in body if line[0] in "+-"] == ["-", "-", "+", "+"]
    assert sum('scheduler}="kyber"' in line for line in body if line.startswith("+")) == 1
    assert len(body) <= 8  # one line of context, not the whole file


def disk_and_rules_dir(tmp_path, udev_data: str) -> tuple[FixTree, Path, list[str], list[str]]:
    """A fixture tree with disk sda and these udev properties, an empty rules directory, and the command-line
    arguments that point iosched at both."""
    tree = FixTree(tmp_path / "root")
    tree.add_disk("sda", "8:0")
    tree.write("run/udev/data/b8:0", udev_data)
    rules_dir = tmp_path / "rules.d"
    rules_dir.mkdir()
    return tree, rules_dir, ["--root", str(tree.root)], ["--rules-dir", str(rules_dir)]


def test_remove_by_auto_takes_the_devices_own_rule_and_only_names_a_shared_one(tmp_path):
    # A fixture tree: an SSD with a serial and a model in udev's data (this machine's disks are not ours to use).
    _, rules_dir, root, into = disk_and_rules_dir(tmp_path, "E:ID_SERIAL=DISK-1\nE:ID_MODEL=FAST_SSD\n")
    for by in ("rotational", "model", "serial"):
        assert run_cli(*root, "persist", "sda", "bfq", "--by", by, *into).returncode == 0
    f = rules_dir / "61-iosched.rules"
    r = run_cli(*root, "persist", "sda", "--remove", *into)
    assert r.returncode == 0, r.stderr
    left = sorted(f"{rule.by}={rule.match}" for rule in parse_rules(f.read_text())[0])
    assert left == ["model=FAST_SSD", "rotational=0"]  # the serial rule went; the shared ones stay
    assert "a rule by model (FAST_SSD) also covers sda" in r.stderr and "--by rotational" in r.stderr


def test_remove_finds_a_serial_rule_an_earlier_iosched_wrote_with_the_short_serial(tmp_path):
    # Earlier versions put the inventory's serial (ID_SERIAL_SHORT) in ENV{ID_SERIAL}=="…": a rule that never
    # matched. --remove, by auto or by serial, must still find it, and say it had no effect.
    tree, rules_dir, root, into = disk_and_rules_dir(
        tmp_path, "E:ID_SERIAL=Samsung_SSD_870_S5SSNX0R\nE:ID_SERIAL_SHORT=S5SSNX0R\n")
    f = rules_dir / "61-iosched.rules"
    earlier = Rule("serial", "S5SSNX0R", "bfq")
    other = Rule("kernel-name", "sdb", "kyber")
    text = f"{earlier.tag()}\n{earlier.line()}\n{other.tag()}\n{other.line()}\n"
    for by in ("auto", "serial"):
        f.write_text(text)
        r = run_cli(*root, "persist", "sda", "--remove", "--by", by, *into)
        assert r.returncode == 0, r.stderr
        assert [rule.match for rule in parse_rules(f.read_text())[0]] == ["sdb"]
        assert "short serial" in r.stderr and "had no effect" in r.stderr
    # Without ID_SERIAL now (udev data gone), --by serial still finds it by the sysfs serial.
    tree.write("run/udev/data/b8:0", "")
    tree.write("sys/block/sda/serial", "S5SSNX0R\n")
    f.write_text(text)
    r = run_cli(*root, "persist", "sda", "--remove", "--by", "serial", *into)
    assert r.returncode == 0 and [rule.match for rule in parse_rules(f.read_text())[0]] == ["sdb"], r.stderr
    # A current rule by ID_SERIAL gets no such note.
    tree.write("run/udev/data/b8:0", "E:ID_SERIAL=Samsung_SSD_870_S5SSNX0R\nE:ID_SERIAL_SHORT=S5SSNX0R\n")
    assert run_cli(*root, "persist", "sda", "bfq", "--by", "serial", *into).returncode == 0
    r = run_cli(*root, "persist", "sda", "--remove", *into)
    assert r.returncode == 0 and "short serial" not in r.stderr
    assert [rule.match for rule in parse_rules(f.read_text())[0]] == ["sdb"]
