"""A fill planned before anything is written (core/load/fill.py): its size in whole MiB within the level asked, its
time from the device's kind, the job fio reads through the allow-list, and a filesystem's level as found."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from iosched.core.kernel.devices import read_device
from iosched.core.load.fill import FillDoc, FillPlan, fill_job, found_fill, plan_fill
from iosched.core.load.jobs import parse_job_file
from iosched.core.load.targets import Target

GiB = 1 << 30


@given(st.integers(min_value=64 << 20, max_value=1 << 44), st.floats(min_value=0, max_value=100))
def test_the_bytes_written_are_within_a_mib_of_the_level(size: int, percent: float) -> None:
    plan = FillPlan("sdx", percent, size, True, 300.0)
    assert plan.bytes % (1 << 20) == 0 and 0 <= size * percent / 100 - plan.bytes < 1 << 20
    assert plan.seconds >= plan.bytes / 300e6 and plan.bound_s >= 60


def test_planned_from_the_device(tree) -> None:
    tree.add_disk("nvme0n1", "259:0", size_sectors=2 * GiB // 512, extra={"queue/discard_max_bytes": "2199023255040"})
    tree.add_disk("sda", "8:0", size_sectors=GiB // 512, rotational=True, extra={"queue/discard_max_bytes": "0"})
    nvme = plan_fill(read_device("nvme0n1", tree.root), 50, tree.root)
    assert (nvme.bytes, nvme.discards, nvme.rate_mb_s) == (GiB, True, 1000.0)
    assert nvme.words() == ("fill nvme0n1 to 50% before the first run: trim it whole, then write 1.0G of "
                            "incompressible data: about 3 s (at an assumed 1000 MB/s)")
    hdd = plan_fill(read_device("sda", tree.root), 0, tree.root)
    assert (hdd.bytes, hdd.discards) == (0, False)
    assert "not trimmed" in hdd.words() and "write nothing" in hdd.words()


def test_the_fill_job_passes_the_job_file_allow_list() -> None:
    job = parse_job_file(fill_job(FillPlan("loop3", 50, 256 << 20, True, 500.0)), "the fill")
    opts = dict(job.sections[0][1])
    assert (opts["rw"], opts["size"], opts["refill_buffers"], opts["direct"]) == ("write", str(128 << 20), "1", "1")
    assert job.writes and job.runtime is None  # a cap, not a time-based run: it ends when written


def test_a_scratch_files_filesystem_is_found_as_it_is(tmp_path: Path) -> None:
    got = found_fill(Target("sda", str(tmp_path / "iosched.dat"), "file", str(tmp_path)))
    assert got is not None and got.how == "found" and got.asked is None and 0 <= (got.level or 0) <= 100
    assert got.words().endswith("full (as found)")
    assert found_fill(Target("loop3", "/dev/loop3", "device")) is None


def test_what_a_fill_says() -> None:
    doc = FillDoc(asked=50, level=50.0, how="written", of="loop3 (256.0M)", trimmed=True, bytes_written=128 << 20,
                  seconds=1.24)
    assert doc.words() == "loop3 (256.0M) filled to 50.0% (trimmed first; 128.0M of incompressible data in 1.2 s)"
    short = FillDoc(asked=80, level=31.0, how="written", of="sdb (1.0T)", trimmed=False, bytes_written=5, seconds=9,
                    short=True)
    assert "not trimmed" in short.words() and "short of the 80% asked" in short.words()


def test_the_fill_is_said_of_the_runs_range_too() -> None:
    """The fill writes the target's first bytes; the runs address their own range: what they exercise is the share
    of that range written, "at least" where nothing was trimmed (older data may lie beyond what was written)."""
    half = FillDoc(asked=50, level=50.0, how="written", of="sdb (1.0T)", trimmed=True, bytes_written=512 << 30,
                   seconds=600)
    inside = half.over(64 << 30)  # a 64 GiB job inside the written half
    assert (inside.range_bytes, inside.range_level) == (64 << 30, 100.0)
    assert inside.words().endswith("; the runs' range, the first 64.0G, was 100% written before the runs")
    whole = replace(half, trimmed=False).over(1 << 40)  # a job over the whole disk: half of it written
    assert whole.range_level == 50.0
    assert whole.words().endswith("; the runs' range, the first 1.0T, was at least 50% written before the runs")
    assert half.over(0) == half and "runs' range" not in half.words()  # not known: not said
    found = FillDoc(asked=None, level=12.0, how="found", of="the filesystem holding /x (1.0T)")
    assert found.over(1 << 30) == found
