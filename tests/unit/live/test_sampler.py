from iosched.core.kernel.procfs import parse_diskstats
from iosched.core.live.rates import CpuRates, DiskRates
from iosched.core.live.sampler import History, Rates, Sample, Sampler, compute_rates, fold_multipath

from fixtree import diskstats_line


def zeros(n: int = 17) -> list[int]:
    return [0] * n


def test_sample_keeps_whole_disks_only(tree):
    tree.add_disk("sda", "8:0", rotational=True)
    tree.add_partition("sda", "sda1", "8:1")
    tree.set_diskstats([diskstats_line(8, 0, "sda", zeros()), diskstats_line(8, 1, "sda1", zeros())])
    sample = Sampler(tree.root).take()
    assert list(sample.disks) == ["sda"]  # a partition is never counted beside its disk


def test_rates_between_fixture_samples(tree):
    tree.add_disk("sda", "8:0")
    tree.set_stat({"all": [100, 0, 100, 800], "0": [100, 0, 100, 800]})
    tree.set_diskstats([diskstats_line(8, 0, "sda", zeros(11))])  # 14-column kernel
    sampler = Sampler(tree.root)
    a = sampler.take()
    tree.set_stat({"all": [150, 0, 150, 900], "0": [150, 0, 150, 900]})
    tree.set_diskstats([diskstats_line(8, 0, "sda", [100, 0, 800, 50, 0, 0, 0, 0, 0, 40, 50])])
    b = sampler.take()
    b = Sample(time=a.time + 2.0, disks=b.disks, cpus=b.cpus)  # a fixed interval for exact numbers
    r = compute_rates(a, b)
    assert r.interval == 2.0
    assert r.disks["sda"].r_s == 50.0 and r.disks["sda"].rkB_s == 200.0 and r.disks["sda"].r_await == 0.5
    assert r.cpus["all"].usr == 25.0 and r.cpus["all"].idle == 50.0


def test_device_in_only_one_sample_has_no_rate(tree):
    tree.add_disk("sda", "8:0")
    tree.add_disk("sdb", "8:16")
    tree.set_diskstats([diskstats_line(8, 0, "sda", zeros()), diskstats_line(8, 16, "sdb", zeros())])
    sampler = Sampler(tree.root)
    a = sampler.take()
    tree.set_diskstats([diskstats_line(8, 0, "sda", zeros()), diskstats_line(8, 32, "sdc", zeros())])
    tree.add_disk("sdc", "8:32")
    b = sampler.take()
    r = compute_rates(a, b)
    assert set(r.disks) == {"sda"}  # sdb vanished, sdc appeared: neither gets a rate this interval
    c = sampler.take()
    assert set(compute_rates(b, c).disks) == {"sda", "sdc"}


def test_cpu_going_offline_between_samples(tree):
    tree.set_stat({"all": [10, 0, 10, 80], "0": [5, 0, 5, 40], "1": [5, 0, 5, 40]})
    sampler = Sampler(tree.root)
    a = sampler.take()
    tree.set_stat({"all": [20, 0, 20, 160], "0": [15, 0, 15, 120]})
    b = sampler.take()
    r = compute_rates(a, b)
    assert set(r.cpus) == {"all", "0"}


def test_unchanged_lines_reuse_parsed_counters(tree):
    tree.add_disk("sda", "8:0")
    tree.set_diskstats([diskstats_line(8, 0, "sda", zeros())])
    sampler = Sampler(tree.root)
    assert sampler.take().disks["sda"] is sampler.take().disks["sda"]


def test_hidden_nvme_paths_fold_into_their_namespace():
    text = "\n".join([
        diskstats_line(259, 0, "nvme0n1", zeros()),
        diskstats_line(259, 1, "nvme0c0n1", [10, 0, 80, 5] + zeros(13)),
        diskstats_line(259, 2, "nvme0c1n1", [30, 0, 240, 15] + zeros(13)),
    ])
    disks = fold_multipath(parse_diskstats(text))
    assert list(disks) == ["nvme0n1"]
    assert disks["nvme0n1"].reads == 40 and disks["nvme0n1"].sectors_read == 320
    assert disks["nvme0n1"].minor == 0


def test_namespace_with_own_accounting_keeps_its_counters():
    text = "\n".join([
        diskstats_line(259, 0, "nvme0n1", [7] + zeros(16)),
        diskstats_line(259, 1, "nvme0c0n1", [10] + zeros(16)),
    ])
    assert fold_multipath(parse_diskstats(text))["nvme0n1"].reads == 7


def _rates(t: float, names: list[str]) -> Rates:
    zero = DiskRates(*([0.0] * 22), in_flight=0)
    return Rates(time=t, interval=1.0, disks={n: zero._replace(r_s=t) for n in names}, cpus={})


def test_history_is_bounded_and_aligned():
    h = History(capacity=5)
    for t in range(8):
        h.append(_rates(float(t), ["a"] if t < 6 else ["a", "b"]))
    assert list(h.times) == [3.0, 4.0, 5.0, 6.0, 7.0]
    assert h.disk_series("a", "r_s") == [3.0, 4.0, 5.0, 6.0, 7.0]
    assert h.disk_series("b", "r_s") == [None, None, None, 6.0, 7.0]
    assert h.disk_series("a", "r_s", last=2) == [6.0, 7.0]
    assert h.recent_times(2) == [6.0, 7.0] and h.recent_times(99) == list(h.times)


def test_history_holds_a_repeated_point_once_and_never_across_a_gap():
    h = History(capacity=10)
    idle = DiskRates(*([0.0] * 22), in_flight=0)
    busy = idle._replace(r_s=5.0, in_flight=3)
    for t, disks in enumerate([{"a": idle}, {"a": idle}, {"a": idle}, {}, {"a": idle}, {"a": busy}, {"a": busy}]):
        h.append(Rates(time=float(t), interval=1.0, disks=disks, cpus={}))
    rows = list(h.disks["a"])
    assert rows[0] is rows[1] is rows[2]  # an idle device's repeats: one row
    assert rows[3] is None and rows[4] is not rows[2] and rows[4] == rows[2]  # after a gap: a row of its own
    assert rows[5] is rows[6] and rows[5] != rows[4]
    assert h.disk_series("a", "r_s") == [0.0, 0.0, 0.0, None, 0.0, 5.0, 5.0]
    assert h.disk_series("a", "in_flight", last=1) == [3.0]


def test_history_forgets_devices_gone_for_the_whole_window():
    h = History(capacity=3)
    h.append(_rates(0.0, ["a", "gone"]))
    for t in range(1, 5):
        h.append(_rates(float(t), ["a"]))
    assert "gone" not in h.disks
    h.append(_rates(5.0, ["a", "gone"]))  # back: a new series, aligned with the others
    assert h.disk_series("gone", "r_s") == [None, None, 5.0] and h.disk_series("a", "r_s") == [3.0, 4.0, 5.0]


def test_history_keeps_the_cpu_series_views_draw_only():
    zero_cpu = CpuRates(*([0.0] * len(CpuRates._fields)))
    h = History(capacity=4)
    for t in range(6):
        h.append(Rates(time=float(t), interval=1.0, disks={}, cpus={"all": zero_cpu, "0": zero_cpu, "1": zero_cpu}))
    assert list(h.cpus) == ["all"] and len(h.cpu_rates("all")) == 4 and h.cpu_rates("0") == []
