"""Finding the block-IO cgroup controller: cgroup v2's io, else v1's blkio, from mountinfo (fixture trees)."""

import pytest

from iosched.core.kernel.cgroupfs import CgroupsUnavailable, io_hierarchy, parse_cgroup_mounts, parse_weight

# This machine's kind: v1 controllers beside a cgroup2 mount that holds none of them (a hybrid system).
HYBRID = """31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
V2 = """22 1 0:21 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate
23 1 8:1 / /mnt/my\\040disk rw - ext4 /dev/sda1 rw
"""


def test_mounts_are_read_from_mountinfo():
    mounts = parse_cgroup_mounts(HYBRID + V2 + "garbage line\n")
    assert [(m.path, m.fstype) for m in mounts] == [
        ("/sys/fs/cgroup/memory", "cgroup"), ("/sys/fs/cgroup/blkio", "cgroup"),
        ("/sys/fs/cgroup/unified", "cgroup2"), ("/sys/fs/cgroup", "cgroup2")]
    assert "blkio" in mounts[1].options and "nsdelegate" in mounts[3].options


def test_v2_with_the_io_controller_handed_down(tree):
    tree.write("proc/self/mountinfo", V2)
    tree.write("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n")
    tree.write("sys/fs/cgroup/cgroup.subtree_control", "cpu io memory\n")
    h = io_hierarchy(tree.root)
    assert (h.version, h.mount, h.weight_file) == (2, tree.root / "sys/fs/cgroup", "io.bfq.weight")
    assert h.base == tree.root / "sys/fs/cgroup/iosched"


def test_v2_whose_root_does_not_hand_io_down_is_refused_not_changed(tree):
    tree.write("proc/self/mountinfo", V2)
    tree.write("sys/fs/cgroup/cgroup.controllers", "cpu io memory\n")
    tree.write("sys/fs/cgroup/cgroup.subtree_control", "cpu memory\n")
    with pytest.raises(CgroupsUnavailable, match=r"not enabled below the cgroup root .*echo \+io"):
        io_hierarchy(tree.root)
    assert (tree.root / "sys/fs/cgroup/cgroup.subtree_control").read_text() == "cpu memory\n"


def test_a_hybrid_system_uses_v1_blkio(tree):
    tree.write("proc/self/mountinfo", HYBRID)
    tree.write("sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n")
    h = io_hierarchy(tree.root)
    assert (h.version, h.mount, h.weight_file) == (1, tree.root / "sys/fs/cgroup/blkio", "blkio.bfq.weight")


def test_no_io_controller_anywhere_is_one_sentence(tree):
    tree.write("proc/self/mountinfo", V2)
    tree.write("sys/fs/cgroup/cgroup.controllers", "cpu memory pids\n")
    with pytest.raises(CgroupsUnavailable, match="neither cgroup v2's io controller nor cgroup v1's blkio"):
        io_hierarchy(tree.root)
    tree.write("proc/self/mountinfo", "")
    with pytest.raises(CgroupsUnavailable, match="no cgroup file system is mounted"):
        io_hierarchy(tree.root)


def test_weight_files_of_both_versions():
    assert parse_weight("default 500\n8:0 200\n") == 500
    assert parse_weight("100\n") == 100
    assert parse_weight("") is None and parse_weight("default x") is None
