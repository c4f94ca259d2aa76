"""A start-up as a workload: the capture it names, what it is called and judged on, the job fio replays it in (one
request at a time, folded into the device), and its time against the cap, from fio's JSON without running fio."""

import pytest
from startup_support import replay_entry

from iosched.core.base.errors import BadInput
from iosched.core.load.bundled import startup_path
from iosched.core.load.fio_result import parse_result
from iosched.core.load.jobs import CATALOG, GROUPS, resolve_jobs
from iosched.core.load.startup_replay import BUNDLED, capture_of, prepare_foreground, startup_job
from iosched.core.load.startup_timing import CAP_FLOOR_S, cap_of, requests_time_s, timing_of


def test_bundled_names_the_capture_iosched_ships_and_a_file_names_itself(tmp_path):
    assert capture_of(BUNDLED) == capture_of("python-imports") == str(startup_path())
    assert capture_of(str(tmp_path / "lo.iolog.meta.json")) == str(tmp_path / "lo.iolog")  # its metadata names it
    with pytest.raises(BadInput, match="names no capture"):
        capture_of("  ")


def test_a_startup_is_named_by_its_capture_and_background_and_judged_on_its_time():
    alone = startup_job(BUNDLED)
    beside = startup_job(BUNDLED, CATALOG["seq-writers-1"])
    assert alone.name == "python-imports alone" and beside.name == "python-imports beside seq-writers-1"
    assert alone.role_names == ["fg"] and beside.role_names == ["fg", "bg"]
    assert alone.primary == beside.primary == "startup_s"
    assert alone.tradeoff is None and beside.tradeoff == "bg:mb_s"
    assert not alone.writes and beside.writes  # the flood writes; the start-up's own writes are known once read
    assert alone.runtime is None and alone.max_extent() is None and alone.cap_s is None  # no time alone yet


@pytest.mark.parametrize("multiple", [1.9, 0, -5, 1001, float("nan")])
def test_a_cap_that_is_no_multiple_of_the_time_alone_is_refused(multiple):
    with pytest.raises(BadInput, match="--startup-cap"):
        startup_job(BUNDLED, None, multiple)


def test_the_cap_is_a_multiple_of_the_time_alone_and_never_under_the_floor():
    assert cap_of(0.15, 50) == pytest.approx(7.5)
    assert cap_of(0.01, 50) == CAP_FLOOR_S


def test_the_foreground_replays_the_bundled_capture_one_request_at_a_time_folded_into_the_device():
    fg = prepare_foreground(str(startup_path()), "loop9", 256 << 20)
    try:
        text = fg.render(7.5, "/dev/loop9")
        assert "[fg]" in text and "iodepth=1" in text and "ioengine=psync" in text and "replay_no_stall=1" in text
        assert "direct=1" in text and "runtime=7500ms" in text and "replay_redirect=/dev/loop9" in text
        assert fg.fitted and not fg.writes  # a capture of a 256 GiB disk, folded into 256 MiB
        with open(fg.iolog) as f:
            offsets = [int(line.split()[3]) + int(line.split()[4]) for line in f if " read " in line]
        assert len(offsets) == 1563 and max(offsets) <= 256 << 20
    finally:
        fg.release()


def test_a_whole_replay_is_the_sum_of_its_latencies_at_depth_one():
    r = parse_result({"jobs": [replay_entry(1563, 95_000.0, 149)]})
    assert requests_time_s(r.raw) == pytest.approx(1563 * 95e-6)
    timing, why = timing_of(r, 0.15, 7.5, 1563)
    assert why is None and not timing.over_cap and timing.startup_s == pytest.approx(0.148485)
    assert timing.sentence() == "0.15 s"


def test_a_replay_still_going_at_its_cap_is_kept_at_the_cap():
    r = parse_result({"jobs": [replay_entry(907, 1_100_000.0, 7500)]})
    timing, why = timing_of(r, 0.15, 7.5, 1563)
    assert why is None and timing.over_cap and timing.startup_s == 7.5 and (timing.requests, timing.of) == (907, 1563)
    assert timing.sentence() == "over the cap (7.50 s, 50 x its 0.15 s alone): 907 of 1563 requests"


def test_a_replay_cut_short_before_its_cap_is_no_sample():
    r = parse_result({"jobs": [replay_entry(907, 95_000.0, 90)]})
    timing, why = timing_of(r, 0.15, 7.5, 1563)
    assert not timing.over_cap and why == "the start-up replay completed 907 of the capture's 1563 requests"


def test_the_s_suite_group_is_the_backgrounds_of_a_startup_and_needs_one():
    group = GROUPS["startup-under-load"]
    assert group.startup and group.drop_caches
    assert group.jobs == ("seq-readers-1", "seq-readers-5", "seq-readers-10", "seq-writers-1", "seq-writers-5",
                         "rand-readers-5", "rand-writers-5")
    readers = CATALOG["seq-readers-10"]
    assert (readers.numjobs, readers.iodepth, readers.ioengine, readers.extra) == (10, 1, "psync",
                                                                                   {"offset_increment": "10%"})
    assert not readers.writes and CATALOG["seq-writers-5"].writes and CATALOG["rand-writers-5"].writes
    with pytest.raises(BadInput, match="give --startup FILE"):
        resolve_jobs("startup-under-load")
    jobs, got = resolve_jobs("startup-under-load", startup=True)
    assert got is group and [j.name for j in jobs] == list(group.jobs)
