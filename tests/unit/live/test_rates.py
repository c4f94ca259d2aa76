import pytest

from iosched.core.kernel.procfs import CpuCounters, DiskCounters
from iosched.core.live.rates import counter_delta, cpu_rates, disk_rates


def disk(**kw) -> DiskCounters:
    base = dict.fromkeys(DiskCounters._fields, 0)
    base.update(kw)
    return DiskCounters(**base)


def test_iostat_formulas_over_two_seconds():
    prev = disk(reads=100, reads_merged=10, sectors_read=800, ms_reading=50, writes=40, writes_merged=0,
                sectors_written=320, ms_writing=80, io_ticks=1000, time_in_queue=2000,
                discards=2, sectors_discarded=16, ms_discarding=4, flushes=1, ms_flushing=1)
    cur = disk(reads=300, reads_merged=60, sectors_read=2400, ms_reading=450, writes=140, writes_merged=100,
               sectors_written=1920, ms_writing=580, io_ticks=2500, time_in_queue=5000, in_flight=3,
               discards=6, discards_merged=4, sectors_discarded=48, ms_discarding=12, flushes=5,
               ms_flushing=9)
    r = disk_rates(prev, cur, 2.0)
    assert r is not None
    s = r.sysstat()
    assert s["r/s"] == 100.0 and s["w/s"] == 50.0 and s["d/s"] == 2.0 and s["f/s"] == 2.0
    assert s["rkB/s"] == 400.0  # 1600 sectors of 512 bytes over 2 s
    assert s["wkB/s"] == 400.0
    assert s["dkB/s"] == 8.0
    assert s["rrqm/s"] == 25.0 and s["wrqm/s"] == 50.0
    assert s["rrqm"] == 20.0  # 50 merged / (50 + 200)
    assert s["wrqm"] == 50.0  # 100 / (100 + 100)
    assert s["drqm"] == 50.0
    assert s["r_await"] == 2.0  # 400 ms over 200 reads
    assert s["w_await"] == 5.0
    assert s["d_await"] == 2.0 and s["f_await"] == 2.0
    assert s["rareq-sz"] == 4.0 and s["wareq-sz"] == 8.0 and s["dareq-sz"] == 4.0
    assert s["aqu-sz"] == 1.5  # 3000 ms in queue over 2000 ms
    assert s["util"] == 75.0
    assert r.in_flight == 3


def test_no_io_gives_zero_not_division_error():
    r = disk_rates(disk(), disk(), 1.0)
    assert r is not None and all(v == 0 for v in r.sysstat().values())


def test_util_is_capped_at_100():
    r = disk_rates(disk(io_ticks=0), disk(io_ticks=1010), 1.0)
    assert r is not None and r.util == 100.0


def test_32bit_wrap_is_an_increase():
    prev = disk(reads=2**32 - 10, ms_reading=5)
    cur = disk(reads=5, ms_reading=20)
    r = disk_rates(prev, cur, 1.0)
    assert r is not None and r.r_s == 15.0 and r.r_await == 1.0


def test_64bit_wrap_is_an_increase():
    assert counter_delta(2**64 - 1, 4) == 5


def test_reset_counter_gives_no_rate():
    # A loop device detached and attached again under the same name starts from zero.
    assert disk_rates(disk(reads=5000, sectors_read=40000), disk(reads=3, sectors_read=24), 1.0) is None


def test_non_positive_interval_gives_no_rate():
    assert disk_rates(disk(), disk(reads=1), 0.0) is None


def test_mpstat_takes_guest_out_of_user_and_guest_nice_out_of_nice():
    prev = CpuCounters(0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    cur = CpuCounters(user=50, nice=20, system=10, idle=100, iowait=10, irq=2, softirq=3, steal=5,
                      guest=30, guest_nice=10)
    r = cpu_rates(prev, cur)
    total = 50 + 20 + 10 + 100 + 10 + 2 + 3 + 5  # guest is not counted again
    assert r.usr == pytest.approx(20 / total * 100)
    assert r.nice == pytest.approx(10 / total * 100)
    assert r.guest == pytest.approx(30 / total * 100)
    assert r.gnice == pytest.approx(10 / total * 100)
    assert r.sys == pytest.approx(10 / total * 100)
    assert r.idle == pytest.approx(100 / total * 100)
    parts = r.usr + r.nice + r.sys + r.iowait + r.irq + r.soft + r.steal + r.guest + r.gnice + r.idle
    assert parts == pytest.approx(100.0)


def test_iowait_going_backwards_counts_as_zero():
    prev = CpuCounters(10, 0, 10, 100, 50)
    cur = CpuCounters(20, 0, 20, 180, 45)
    r = cpu_rates(prev, cur)
    assert r.iowait == 0.0
    assert r.usr == pytest.approx(10.0) and r.idle == pytest.approx(80.0)


def test_cpu_without_ticks_is_idle():
    c = CpuCounters(1, 1, 1, 1)
    assert cpu_rates(c, c).idle == 100.0
