"""sysfs readers and device names (core/kernel/sysfs.py): a name from outside is a bare block device name or a
sentence; attributes read as the kernel writes them, absent ones as their default."""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iosched.core.base.errors import BadInput, UnknownDevice
from iosched.core.kernel.sysfs import (
    check_device_name,
    device_identity,
    disk_schedulers,
    gone_reason,
    multipath_head,
    parse_scheduler,
    read_attr,
    read_int,
    running_tunables,
)


def test_a_whole_disk_is_its_sys_block_folder(tree) -> None:
    tree.add_disk("sda", "8:0")
    assert check_device_name("sda", tree.root) == tree.root / "sys/block/sda"


@pytest.mark.parametrize(("name", "said"), [
    ("", "no device name given"),
    (" sda", "contains white space"),
    ("sd a", "contains white space"),
    ("/dev/sda", "must be a bare name like sda, not a path"),
    ("..", "must be a bare name"),
    ("sda;rm", "has characters no block device name has"),
    ("x" * 65, "has characters no block device name has"),
])
def test_a_malformed_name_is_refused_before_sysfs_is_read(name: str, said: str) -> None:
    with pytest.raises(BadInput, match=said):
        check_device_name(name, "/nonexistent")


def test_a_partition_points_to_its_disk_and_an_unknown_name_says_so(tree) -> None:
    tree.add_disk("sda", "8:0")
    tree.add_partition("sda", "sda1", "8:1")
    with pytest.raises(BadInput, match="sda1 is a partition; schedulers belong to the whole disk sda"):
        check_device_name("sda1", tree.root)
    with pytest.raises(UnknownDevice, match="no block device named sdz"):
        check_device_name("sdz", tree.root)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=80))
def test_any_name_from_outside_is_a_disk_folder_or_a_typed_refusal(tree, name: str) -> None:
    tree.add_disk("sda", "8:0")
    try:
        path = check_device_name(name, tree.root)
    except BadInput as e:
        assert "\n" not in str(e) and len(str(e)) < 200
    else:
        assert path.parent == tree.root / "sys/block" and path.name == name


def test_the_scheduler_file_read_as_the_kernel_writes_it() -> None:
    assert parse_scheduler("none [mq-deadline] kyber bfq") == ("mq-deadline", ["none", "mq-deadline", "kyber", "bfq"])
    assert parse_scheduler("[none] \n") == ("none", ["none"])
    assert parse_scheduler(None) == (None, [])  # no elevator: no scheduler file


def test_attributes_read_stripped_and_absent_or_garbled_ones_as_their_default(tmp_path: Path) -> None:
    (tmp_path / "size").write_text("2048\n")
    (tmp_path / "model").write_bytes(b"QEMU \xff disk  \n")
    (tmp_path / "diskseq").write_text("not a number\n")
    assert read_int(tmp_path / "size") == 2048 and read_attr(tmp_path / "model") == "QEMU \ufffd disk"
    assert read_int(tmp_path / "diskseq", -1) == -1 and read_attr(tmp_path / "missing", "?") == "?"
    assert read_attr(tmp_path) is None  # a folder where a file was expected


def test_hidden_nvme_paths_belong_to_their_namespace() -> None:
    assert multipath_head("nvme0c1n2") == "nvme0n2" and multipath_head("nvme0n2") is None


def test_a_device_is_gone_when_removed_emptied_or_its_name_taken(tree) -> None:
    tree.add_disk("loop0", "7:0", extra={"diskseq": "9"})
    was = device_identity("loop0", tree.root)
    assert was == ("7:0", 9) and gone_reason("loop0", was, tree.root) is None
    tree.write("sys/block/loop0/diskseq", "10\n")
    assert gone_reason("loop0", was, tree.root) == "another device now has its name"
    tree.write("sys/block/loop0/size", "0\n")  # a detached loop device keeps its node
    assert gone_reason("loop0", was, tree.root) == "no medium attached"
    assert gone_reason("loop1", was, tree.root) == "removed"


def test_a_schedulers_tunables_are_read_where_a_disk_runs_it(tree) -> None:
    tree.add_disk("sda", "8:0", scheduler="none [mq-deadline] kyber bfq")
    tree.add_disk("sdb", "8:16", scheduler="none mq-deadline [kyber] bfq adios")
    tree.write("sys/block/sda/queue/iosched/read_expire", "500\n")
    tree.write("sys/block/sdb/queue/iosched/read_lat_nsec", "2000000\n")
    sdb = tree.root / "sys/block/sdb"
    assert [(d.name, cur) for d, cur, _ in disk_schedulers(tree.root)] == [("sda", "mq-deadline"), ("sdb", "kyber")]
    assert [d.name for d, _, _ in disk_schedulers(tree.root, first=sdb)] == ["sdb", "sda"]
    assert running_tunables("mq-deadline", tree.root, first=sdb) == {"read_expire"}
    assert running_tunables("kyber", tree.root) == {"read_lat_nsec"}
    assert running_tunables("bfq", tree.root) is None  # listed, but running nowhere: its files are not known
    assert list(disk_schedulers(tree.root / "nothing")) == []
