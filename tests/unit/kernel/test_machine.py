"""What a result was measured on (core/kernel/machine.py): the CPU's model per architecture's cpuinfo, and a
device's firmware from udev, NVMe's or SCSI's sysfs, or none."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from iosched.core.kernel.machine import MAX_WORDS, parse_cpu_model, read_cpu_model, read_firmware


def test_x86_names_its_model() -> None:
    text = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 85\nmodel name\t: Intel(R) Xeon(R)  Gold 6248\n"
    assert parse_cpu_model(text) == "Intel(R) Xeon(R) Gold 6248"  # the model name, not the model number


def test_arm64_board_and_power_names() -> None:
    assert parse_cpu_model("processor\t: 0\nBogoMIPS\t: 108.00\n\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n") == \
        "Raspberry Pi 4 Model B Rev 1.4"
    assert parse_cpu_model("processor\t: 0\ncpu\t\t: POWER9 (architected), altivec supported\n") == \
        "POWER9 (architected), altivec supported"


def test_a_cpuinfo_without_a_name_gives_none() -> None:
    assert parse_cpu_model("processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\n") is None
    assert parse_cpu_model("") is None


@given(st.text(max_size=400))
def test_any_cpuinfo_gives_one_printable_line_or_none(text: str) -> None:
    got = parse_cpu_model(text)
    assert got is None or (got.isprintable() and "\n" not in got and 0 < len(got) <= MAX_WORDS)


def test_read_from_a_tree(tree) -> None:
    tree.write("proc/cpuinfo", "processor\t: 0\nmodel name\t: AMD EPYC 7B13\n\nprocessor\t: 1\nmodel name\t: other\n")
    assert read_cpu_model(tree.root) == "AMD EPYC 7B13"
    assert read_cpu_model(tree.root / "nowhere") is None


def test_firmware_from_udev_then_sysfs_else_none(tree) -> None:
    tree.add_disk("sda", "8:0")
    tree.write("run/udev/data/b8:0", "E:ID_MODEL=Samsung_SSD\nE:ID_REVISION=RVT04B6Q\n")
    tree.add_disk("nvme0n1", "259:0", extra={"device/firmware_rev": "2B2QEXM7"})
    tree.add_disk("sdb", "8:16", extra={"device/rev": "0100"})
    tree.add_disk("loop0", "7:0")
    assert read_firmware("sda", tree.root) == "RVT04B6Q"
    assert read_firmware("nvme0n1", tree.root) == "2B2QEXM7"
    assert read_firmware("sdb", tree.root) == "0100"
    assert read_firmware("loop0", tree.root) is None
    assert read_firmware("gone", tree.root) is None
