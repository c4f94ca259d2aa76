from iosched.core.kernel.procfs import CpuCounters, DiskCounters, parse_diskstats, parse_proc_stat

LINE_20 = "   7       3 loop3 10 1 80 5 20 2 160 7 0 12 12 3 0 24 1 4 2"
LINE_18 = " 253       0 dm-0 10 1 80 5 20 2 160 7 1 12 12 3 0 24 1"
LINE_14 = "   8       0 sda 10 1 80 5 20 2 160 7 0 12 12"  # before kernel 4.18: no discard fields


def test_twenty_columns_parse_every_field():
    c = parse_diskstats(LINE_20)["loop3"]
    assert c == DiskCounters(7, 3, 10, 1, 80, 5, 20, 2, 160, 7, 0, 12, 12, 3, 0, 24, 1, 4, 2)


def test_eighteen_columns_have_no_flushes():
    c = parse_diskstats(LINE_18)["dm-0"]
    assert (c.discards, c.sectors_discarded, c.ms_discarding) == (3, 24, 1)
    assert (c.flushes, c.ms_flushing) == (0, 0)
    assert c.in_flight == 1


def test_fourteen_columns_old_kernel():
    c = parse_diskstats(LINE_14)["sda"]
    assert (c.reads, c.sectors_written, c.time_in_queue) == (10, 160, 12)
    assert (c.discards, c.flushes) == (0, 0)


def test_malformed_lines_are_ignored():
    text = "\n".join([LINE_20, "garbage", "   1 2 bad x y z 1 2 3 4 5 6 7 8", "", "7 4 short 1 2 3"])
    assert list(parse_diskstats(text)) == ["loop3"]


def test_proc_stat_all_and_per_cpu_with_offline_cpu_missing():
    text = ("cpu  100 5 50 1000 10 1 2 3 4 1\n"
            "cpu0 60 5 30 500 5 1 1 2 4 1\n"
            "cpu2 40 0 20 500 5 0 1 1 0 0\n"
            "intr 123\nctxt 5\ncpu9 1 1 1 1\n")
    cpus = parse_proc_stat(text)
    assert list(cpus) == ["all", "0", "2"]  # cpu1 offline; lines after intr are not CPUs
    assert cpus["all"] == CpuCounters(100, 5, 50, 1000, 10, 1, 2, 3, 4, 1)


def test_proc_stat_old_kernel_with_four_fields():
    assert parse_proc_stat("cpu  1 2 3 4\n")["all"] == CpuCounters(1, 2, 3, 4)
