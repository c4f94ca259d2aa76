from iosched.core.kernel.devices import device_order, disks_below, list_devices, parse_mountinfo, read_device


def test_rotational_disk_with_mounted_partition_and_udev_properties(tree):
    tree.add_disk("sda", "8:0", size_sectors=2 * 1024 * 1024, rotational=True, mq=False,
                  scheduler="mq-deadline kyber [bfq] none")
    tree.add_partition("sda", "sda1", "8:1")
    tree.add_partition("sda", "sda2", "8:2")
    tree.write("proc/self/mountinfo",
               "22 1 8:1 / /data\\040disk rw,relatime shared:1 - ext4 /dev/sda1 rw\n")
    tree.write("proc/swaps", "Filename Type Size Used Priority\n/dev/sda2 partition 1 0 -2\n")
    tree.write("run/udev/data/b8:0", "E:ID_MODEL=WDC_WD40EFRX\nE:ID_SERIAL_SHORT=WD-123\nE:ID_BUS=ata\n"
               "E:ID_PART_TABLE_TYPE=gpt\n")
    (d,) = list_devices(tree.root)
    assert d.name == "sda" and d.maj_min == "8:0" and d.size_bytes == 1024**3
    assert d.rotational and d.util_is_saturation
    assert d.scheduler == "bfq" and d.schedulers == ["mq-deadline", "kyber", "bfq", "none"]
    assert d.model == "WDC_WD40EFRX" and d.serial == "WD-123" and d.transport == "ata"
    assert d.partitions == ["sda1", "sda2"]
    assert d.mountpoints == ["/data disk", "[SWAP]"]
    assert d.part_table == "gpt" and d.in_use


def test_device_without_scheduler(tree):
    tree.add_disk("zram0", "252:0", scheduler=None, mq=False)
    (d,) = list_devices(tree.root)
    assert d.scheduler is None and d.schedulers == [] and not d.has_scheduler


def test_ssd_multiqueue_util_is_not_saturation_and_frozen_iostats_flagged(tree):
    tree.add_disk("nvme0n1", "259:0", extra={"queue/iostats": "0"})
    tree.add_disk("nvme0c0n1", "259:1", extra={"hidden": "1"})
    (d,) = list_devices(tree.root)  # the hidden path is not listed on its own
    assert d.name == "nvme0n1"
    assert not d.util_is_saturation
    assert d.iostats is False
    assert d.multipath_paths == ["nvme0c0n1"]


def test_stacked_devices_name_what_they_sit_on(tree):
    tree.add_disk("sdb", "8:16", extra={"holders/dm-0": ""})
    tree.add_disk("dm-0", "253:0", scheduler=None, extra={"slaves/sdb": "", "dm/name": "vg-data"})
    devices = {d.name: d for d in list_devices(tree.root)}
    assert devices["sdb"].holders == ["dm-0"] and devices["sdb"].in_use
    assert devices["dm-0"].sits_on == ["sdb"] and devices["dm-0"].model == "vg-data"


def test_zero_size_devices_hidden_unless_asked(tree):
    tree.add_disk("loop0", "7:0", size_sectors=0)
    assert list_devices(tree.root) == []
    assert [d.name for d in list_devices(tree.root, include_empty=True)] == ["loop0"]


def test_vanished_device_reads_as_none(tree):
    assert read_device("sdz", tree.root) is None


def test_mountinfo_unescapes_octal():
    assert parse_mountinfo("1 0 8:1 / /a\\011b rw - ext4 x rw\n") == {"8:1": ["/a\tb"]}


def test_devices_are_listed_in_natural_order(tree):
    """As lsblk lists them: loop10 after loop2, nvme10n1 after nvme2n1 (a string sort put loop10 between loop1 and
    loop2)."""
    for i, name in enumerate(["loop10", "loop2", "loop1", "nvme10n1", "nvme2n1", "sdaa", "sdb", "sda"]):
        tree.add_disk(name, f"7:{i}")
    assert [d.name for d in list_devices(tree.root)] == ["loop1", "loop2", "loop10", "nvme2n1", "nvme10n1", "sda",
                                                         "sdaa", "sdb"]
    assert sorted(["md127", "md9", "dm-10", "dm-1"], key=device_order) == ["dm-1", "dm-10", "md9", "md127"]


def link(tree, at: str, to: str) -> None:
    """A sysfs link as the kernel makes one (relative to the root of the tree)."""
    path = tree.root / at
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(tree.root / to)


def test_the_disks_below_a_partition_a_stack_or_nothing(tree):
    tree.add_disk("vda", "254:0")
    tree.add_partition("vda", "vda2", "254:2")
    tree.add_disk("sda", "8:0")
    tree.add_disk("sdb", "8:16")
    tree.add_disk("dm-0", "253:0", scheduler=None, mq=False)  # LVM on vda2
    tree.add_disk("md0", "9:0", scheduler=None, mq=False)  # a mirror of sda and sdb
    link(tree, "sys/block/dm-0/slaves/vda2", "sys/block/vda/vda2")
    for d in ("sda", "sdb"):
        link(tree, f"sys/block/md0/slaves/{d}", f"sys/block/{d}")
    for maj_min, at in (("254:0", "vda"), ("254:2", "vda/vda2"), ("253:0", "dm-0"), ("9:0", "md0")):
        link(tree, f"sys/dev/block/{maj_min}", f"sys/block/{at}")
    assert disks_below("254:2", tree.root) == ["vda"] and disks_below("254:0", tree.root) == ["vda"]
    assert disks_below("253:0", tree.root) == ["vda"]  # the disk below the stack: where its requests are
    assert disks_below("9:0", tree.root) == ["sda", "sdb"]
    # tmpfs and overlay files (an anonymous device), a device gone, a name that is no MAJ:MIN: no disk.
    assert disks_below("0:42", tree.root) == disks_below("8:99", tree.root) == disks_below("../x", tree.root) == []
    link(tree, "sys/block/dm-0/slaves/dm-0", "sys/block/dm-0")  # a stack that loops ends
    assert disks_below("253:0", tree.root) == ["vda"]
