"""A disk's class and the kernel's own scheduler for it, on fixture trees for what this machine cannot be: an
NVMe drive, an HDD behind a SCSI queue, a SAS HBA sharing its tags, a stacked device, a device with no elevator."""

from __future__ import annotations

import pytest

from iosched.core.advice.device_class import kernel_default, read_device_class
from iosched.core.base.errors import BadInput, UnknownDevice

SCHEDS = ("none", "mq-deadline", "kyber", "bfq")


def queues(tree, name: str, n: int, tags: int = 1023) -> None:
    for i in range(n):
        tree.write(f"sys/block/{name}/mq/{i}/nr_tags", f"{tags}\n")


def test_nvme_with_many_queues_gets_none_from_the_kernel(tree):
    tree.add_disk("nvme0n1", "259:0", size_sectors=2 * 10**9, scheduler="[none] mq-deadline kyber bfq")
    queues(tree, "nvme0n1", 8)
    tree.write("run/udev/data/b259:0", "E:ID_MODEL=Samsung SSD 980\nE:ID_SERIAL_SHORT=S1\n")
    dev = read_device_class("nvme0n1", tree.root)
    assert dev.kind == "nvme" and dev.non_rotational
    assert dev.hw_queues == 8 and dev.hw_depth == 1023 and dev.nr_requests == 64
    assert dev.model == "Samsung SSD 980"
    kd = kernel_default(dev, SCHEDS, tree.root)
    assert kd.scheduler == "none" and "8 hardware queues" in kd.why and "elevator_set_default" in kd.why
    assert dev.words().startswith("nvme0n1: NVMe drive (Samsung SSD 980, 953.7G, nvme)")
    assert "8 hardware queues of depth 1023" in dev.words()


def test_hdd_on_one_queue_gets_mq_deadline_and_its_ncq_depth(tree):
    tree.add_disk("sda", "8:0", rotational=True, scheduler="none [mq-deadline] kyber bfq",
                  extra={"device/queue_depth": "32"})
    queues(tree, "sda", 1, tags=64)
    dev = read_device_class("sda", tree.root)
    assert dev.kind == "hdd" and dev.rotational
    assert dev.hw_queues == 1 and dev.hw_depth == 32  # the device's own queue before the tags
    kd = kernel_default(dev, SCHEDS, tree.root)
    assert kd.scheduler == "mq-deadline" and "one hardware queue" in kd.why


def test_shared_tags_count_as_one_queue_and_no_sched_flag_means_none(tree):
    tree.add_disk("sdb", "8:16", rotational=True)
    queues(tree, "sdb", 16)
    tree.write("sys/kernel/debug/block/sdb/hctx0/flags", "alloc_policy=FIFO SHOULD_MERGE|TAG_HCTX_SHARED\n")
    assert kernel_default(read_device_class("sdb", tree.root), SCHEDS, tree.root).scheduler == "mq-deadline"
    tree.add_disk("ublkb0", "259:9")
    queues(tree, "ublkb0", 1)
    tree.write("sys/kernel/debug/block/ublkb0/hctx0/flags", "alloc_policy=FIFO NO_SCHED_BY_DEFAULT\n")
    kd = kernel_default(read_device_class("ublkb0", tree.root), SCHEDS, tree.root)
    assert kd.scheduler == "none" and "BLK_MQ_F_NO_SCHED_BY_DEFAULT" in kd.why


def test_a_loop_device_gets_none_whatever_its_queues(tree):
    tree.add_disk("loop3", "7:3", rotational=True, extra={"loop/backing_file": "/var/tmp/disk.img"})
    queues(tree, "loop3", 1, tags=128)
    dev = read_device_class("loop3", tree.root)
    assert dev.kind == "loop" and dev.backing_file == "/var/tmp/disk.img"
    assert any("backing file" in n for n in dev.notes)
    kd = kernel_default(dev, SCHEDS, tree.root)
    assert kd.scheduler == "none" and "loop driver" in kd.why and "5.15" in kd.why
    assert dev.stack_words() == ["backed by /var/tmp/disk.img"]


def test_without_mq_deadline_or_any_scheduler(tree):
    tree.add_disk("sdc", "8:32", scheduler="[none] kyber")
    queues(tree, "sdc", 1)
    dev = read_device_class("sdc", tree.root)
    assert kernel_default(dev, ("none", "kyber"), tree.root).scheduler == "none"
    tree.add_disk("zram0", "252:0", scheduler=None, mq=False)
    z = read_device_class("zram0", tree.root)
    assert z.kind == "zram" and z.hw_queues is None
    assert kernel_default(z, (), tree.root).scheduler is None


def test_queues_not_listed_read_as_one(tree):
    tree.add_disk("sdd", "8:48", mq=False)
    kd = kernel_default(read_device_class("sdd", tree.root), SCHEDS, tree.root)
    assert kd.scheduler == "mq-deadline" and "read as one" in kd.why


def test_stacked_devices_say_where_the_scheduler_works(tree):
    tree.add_disk("sdb", "8:16", extra={"holders/dm-0": ""})
    tree.add_partition("sdb", "sdb1", "8:17")
    tree.add_disk("dm-0", "253:0", scheduler=None, extra={"slaves/sdb": "", "dm/name": "vg-data"})
    disk = read_device_class("sdb", tree.root)
    assert disk.holders == ("dm-0",) and disk.partitions == ("sdb1",)
    assert any("dm-0 sits on it" in n for n in disk.notes)
    dm = read_device_class("dm-0", tree.root)
    assert dm.kind == "dm" and dm.sits_on == ("sdb",) and dm.model == "vg-data"
    assert any("the scheduler that orders requests is on sdb (it has none of its own)" in n for n in dm.notes)


def test_virtio_disks_that_say_rotational_are_a_guess(tree):
    tree.add_disk("vda", "254:0", rotational=True)
    dev = read_device_class("vda", tree.root)
    assert dev.kind == "virtual" and any("guess" in n for n in dev.notes)


def test_not_a_whole_disk(tree):
    tree.add_disk("sda", "8:0")
    tree.add_partition("sda", "sda1", "8:1")
    with pytest.raises(BadInput, match="partition"):
        read_device_class("sda1", tree.root)
    with pytest.raises(UnknownDevice):
        read_device_class("sdz", tree.root)
