"""/proc/diskstats and /proc/stat: every column layout; random or mutated text gives plain counters, never a
traceback."""

from hypothesis import given, settings
from hypothesis import strategies as st

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


_token = st.one_of(st.integers(0, 2**64 - 1).map(str), st.sampled_from(["-5", "+5", "1_000", "٣", "x", "", "1e3"]),
                   st.text(max_size=6))


_line = st.lists(_token, min_size=0, max_size=22).map(" ".join)


@settings(max_examples=500, deadline=None)
@given(st.lists(_line, max_size=8).map("\n".join))
def test_random_diskstats_text_gives_plain_counters(text):
    for name, c in parse_diskstats(text).items():
        assert isinstance(c, DiskCounters) and name
        assert all(isinstance(v, int) and v >= 0 for v in c)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**63), min_size=19, max_size=19), st.sampled_from([14, 18, 20]))
def test_well_formed_diskstats_lines_parse_back(values, width):
    line = " ".join(map(str, [values[0], values[1], "sdq", *values[2:width - 1]]))
    (c,) = parse_diskstats(line).values()
    assert list(c)[:width - 1] == values[:width - 1] and not any(list(c)[width - 1:])


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(_line.map(lambda s: "cpu" + s), _line.map(lambda s: "cpu0 " + s), _line), max_size=8)
       .map("\n".join))
def test_random_proc_stat_text_gives_plain_counters(text):
    for key, c in parse_proc_stat(text).items():
        assert key and all(isinstance(v, int) and v >= 0 for v in c)
