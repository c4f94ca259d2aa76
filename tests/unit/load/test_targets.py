"""Safe targets: what a write workload may touch, on fixture trees."""

import os
from pathlib import Path

import pytest
from link_support import plant

from iosched.core.base.errors import BadInput
from iosched.core.load.targets import Refused, choose_target, clean_stale_scratch, scratch_target


def test_reads_always_allowed_on_a_device_in_use(tree):
    tree.add_disk("sda", "8:0", size_sectors=1 << 21)
    tree.add_partition("sda", "sda1", "8:1")
    t = choose_target("sda", writes=False, root=tree.root)
    assert (t.kind, t.path) == ("device", "/dev/sda")


def test_writes_refused_on_partitions_holders_and_udev_signatures(tree):
    tree.add_disk("sda", "8:0")
    tree.add_partition("sda", "sda1", "8:1")
    tree.add_disk("sdb", "8:16", extra={"holders/dm-0": ""})
    tree.add_disk("sdc", "8:32")
    tree.write("run/udev/data/b8:32", "E:ID_FS_TYPE=xfs\n")
    for name, why in (("sda", "holds partitions"), ("sdb", "in use by dm-0"), ("sdc", "xfs signature")):
        with pytest.raises(Refused, match=why) as e:
            choose_target(name, writes=True, root=tree.root)
        assert f"--destroy-data {name}" in str(e.value)
    t = choose_target("sdc", writes=True, destroy_data="sdc", root=tree.root)
    assert t.kind == "device" and "confirmed" in t.note
    with pytest.raises(BadInput, match="must match"):
        choose_target("sdc", writes=True, destroy_data="sda", root=tree.root)


def test_unknown_signature_is_not_blank(tree):
    tree.add_disk("sdd", "8:48")  # no /dev node under the fixture root: the probe cannot tell
    with pytest.raises(Exception, match="cannot probe"):
        choose_target("sdd", writes=True, root=tree.root)
    tree.write("dev/sdd", "\0" * 65536)
    assert choose_target("sdd", writes=True, root=tree.root).kind == "device"


def test_scratch_space_checked_and_stale_scratch_cleaned(tree, tmp_path):
    tree.add_disk("sda", "8:0")
    with pytest.raises(BadInput, match="not enough space"):
        scratch_target("sda", tmp_path, size=1 << 60, root=tree.root)
    t = scratch_target("sda", tmp_path, size=1 << 20, root=tree.root)
    assert t.kind == "file" and Path(t.scratch_dir).is_dir() and "not on sda" in t.note
    # A scratch dir whose owner died is removed by restore; a live owner's is left alone.
    (reg,) = (Path(os.environ["IOSCHED_RUN_DIR"]) / "scratch").glob("*.json")
    assert clean_stale_scratch(tree.root) == [] and Path(t.scratch_dir).is_dir()
    reg.write_text(reg.read_text().replace(str(os.getpid()), "999999999"))
    assert clean_stale_scratch(tree.root) == [t.scratch_dir]
    assert not Path(t.scratch_dir).exists() and not reg.exists()


def test_a_scratch_registration_never_goes_through_a_link_another_user_planted(tree, tmp_path, others_dir,
                                                                               monkeypatch):
    tree.add_disk("sda", "8:0")
    run = others_dir / "run"  # a run folder others may write, as a careless setup might leave it
    run.mkdir(mode=0o777)
    run.chmod(0o777)
    monkeypatch.setenv("IOSCHED_RUN_DIR", str(run))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    plant(run / "scratch", elsewhere)
    with pytest.raises(BadInput, match="reached through the link scratch"):
        scratch_target("sda", tmp_path, size=1 << 20, root=tree.root)
    assert list(elsewhere.iterdir()) == [] and not list(tmp_path.glob("iosched-scratch-*"))


@pytest.mark.parametrize("how", ["writable by others", "another user's"])
def test_a_scratch_folder_another_user_may_change_is_refused_before_anything_is_made(tree, tmp_path, how):
    # fio opens the scratch file by name: a folder on the way that someone else may rename entries in could be
    # swapped for a link between iosched's check and fio's open, so such a folder is refused, nothing created.
    tree.add_disk("sda", "8:0")
    shared = tmp_path / "shared"
    shared.mkdir()
    if how == "writable by others":
        shared.chmod(0o777)
    else:
        os.chown(shared, 65534, 65534)
    inner = shared / "inner"
    inner.mkdir()
    with pytest.raises(BadInput, match=f"scratch directory {inner}: {shared} may be changed by another user"):
        scratch_target("sda", inner, size=1 << 20, root=tree.root)
    assert list(inner.iterdir()) == []
    shared.chmod(0o1777)  # sticky and root's: others may add entries, not rename root's
    os.chown(shared, 0, 0)
    t = scratch_target("sda", inner, size=1 << 20, root=tree.root)
    assert Path(t.scratch_dir).parent == inner
    t.release(tree.root)
