"""Captures as files: the writer's iolog and metadata, read back and checked line by line; hostile captures
give one typed sentence; the replay's own copy and job."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path

import pytest
from capture_support import DEV_SIZE, T0, device, make_capture, mixed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from link_support import digest, make_victim, plant, temporaries
from schema_support import problems

from iosched.core.base.errors import BadInput
from iosched.core.load.capture_summary import summarize
from iosched.core.load.iolog import (
    MAX_SERIES,
    BadCapture,
    CaptureWriter,
    CommandDoc,
    check_iolog,
    copy_for_replay,
    fitted,
    meta_path,
    read_capture,
    write_meta,
)
from iosched.core.load.jobfile import JobFileError, parse_job_file
from iosched.core.load.replay import prepare_replay

from conftest import one_sentence_exit_2


def test_a_capture_reads_back_whole(tmp_path):
    more = [(T0 + 300_000_000, 2, 0, 0, 1), (T0 + 301_000_000, 3, 64, 1 << 20, 2)]  # a flush, a discard
    log = make_capture(tmp_path / "c.iolog", [*mixed(), *more])
    cap = read_capture(log)
    m = cap.meta
    assert (m.reads, m.writes, m.flushes, m.discards, m.requests) == (100, 100, 1, 1, 202)
    assert m.read_bytes == 100 * 4096 and m.discard_bytes == 1 << 20 and m.max_extent == 64 * 512 + (1 << 20)
    assert (m.depth_p50, m.depth_max) == (2, 4)
    assert check_iolog(cap) == 202
    lines = log.read_text().splitlines()
    assert lines[:3] == ["fio version 3 iolog", "0 /dev/loop7 add", "0 /dev/loop7 open"]
    assert lines[3] == "0 /dev/loop7 read 0 4096" and lines[4] == "1000 /dev/loop7 write 4096 4096"
    assert "300000 /dev/loop7 sync 0 0" in lines and "301000 /dev/loop7 trim 32768 1048576" in lines
    assert lines[-1].endswith("/dev/loop7 close")
    assert read_capture(meta_path(log)).iolog == log  # named by its metadata file too
    s = summarize(cap)
    assert s.counts == {"read": 100, "write": 100, "trim": 1, "sync": 1} and s.share("read") == pytest.approx(100 / 202)


def test_records_are_written_in_order_of_their_begin_within_the_window():
    out = io.StringIO()
    w = CaptureWriter(out, "/dev/loop7", T0, reorder_s=0.5)
    # Issued in this order; the second began first (the scheduler let it pass), the last began long before.
    for t in (T0 + 10_000_000, T0 + 5_000_000, T0 + 2_000_000_000, T0 + 1_000_000):
        w.add(t, 0, 0, 4096, 1)
        w.flush()
    w.finish(T0 + 3_000_000_000)
    times = [int(line.split()[0]) for line in out.getvalue().splitlines()[3:-1]]
    assert times == [5000, 10000, 10000, 2_000_000] and w.late == 1  # the late one is clamped, counted


def test_other_operations_are_counted_not_written_and_the_series_stays_bounded():
    out = io.StringIO()
    w = CaptureWriter(out, "/dev/loop7", T0)
    w.add(T0, 4, 0, 0, 1)
    for k in range(5000):
        w.add(T0 + k * 1_000_000_000, 0, 0, 4096, 1)  # 5000 s of one request a second
    w.flush(final=True)
    assert w.counts[4] == 1 and w.requests == 5000
    doc = w.series.doc(5000.0)
    assert len(doc.iops) <= MAX_SERIES and doc.interval_s > 1
    assert sum(doc.iops) * doc.interval_s == pytest.approx(5000, rel=1e-3)  # rates kept to 3 decimals


# --- hostile captures ---------------------------------------------------------------------------------------


def replace_line(log: Path, n: int, text: str) -> None:
    lines = log.read_text().splitlines(keepends=True)
    lines[n - 1] = text
    log.write_text("".join(lines))


@pytest.mark.parametrize(("line", "text", "why"), [
    (1, "fio version 2 iolog\n", "expected 'fio version 3 iolog'"),
    (5, "1000 /dev/loop7 read 67108864 4096\n", "past the device's"),
    (5, "1000 /dev/loop7 read 4096 -4096\n", "whole numbers"),
    (5, "1000 /dev/loop7 read 4097 4096\n", "whole sectors"),
    (5, "1000 /etc/passwd read 0 4096\n", "is not the capture's device /dev/loop7"),
    (5, "1000 /dev/loop7 wait 0 4096\n", "not read, write, sync or trim"),
    (5, "1000 /dev/loop7 read 0 4096 extra\n", "TIME FILE ACTION"),
    (5, "-5 /dev/loop7 read 0 4096\n", "a time in microseconds"),
    (6, "0 /dev/loop7 read 0 4096\n", "time goes back"),
    (5, "99999999999 /dev/loop7 read 0 4096\n", "past the capture's"),
    (2, "0 /dev/loop7 open\n", "expected the add line"),
    (5, "1000 /dev/loop7 read 0 4096" + " " * 200 + "\n", "longer than"),
    (5, "1000 /dev/loop7 re\xe4d 0 4096\n", "not text"),
])
def test_a_hostile_line_is_refused_naming_it(tmp_path, line, text, why):
    log = make_capture(tmp_path / "c.iolog", mixed(10))
    replace_line(log, line, text)
    with pytest.raises(BadCapture, match=why) as e:
        check_iolog(read_capture(log))
    assert f"line {line}" in str(e.value)


def test_lines_beyond_the_metadata_and_a_cut_short_file_are_refused(tmp_path):
    log = make_capture(tmp_path / "c.iolog", mixed(10))
    text = log.read_text()
    log.write_text(text.replace("/dev/loop7 close", "/dev/loop7 read 0 512\n9999999 /dev/loop7 close"))
    with pytest.raises(BadCapture, match="more requests than the metadata's 10"):
        check_iolog(read_capture(log))
    log.write_text("".join(text.splitlines(keepends=True)[:-1]))
    with pytest.raises(BadCapture, match="without its close line"):
        check_iolog(read_capture(log))


def lying_extent(log: Path, max_extent: int, device_size: int | None = None) -> None:
    doc = json.loads(meta_path(log).read_text())
    doc["max_extent"] = max_extent
    if device_size is not None:
        doc["device"]["size_bytes"] = device_size
    meta_path(log).write_text(json.dumps(doc))


def test_lines_are_held_to_the_extent_their_metadata_gives(tmp_path):
    """A replay's size check reads the metadata's max_extent: lines past it, or short of it, are a lie."""
    far = 500 << 30  # lines at 500 GiB, the metadata saying 1 MiB of a 1 TiB device
    log = make_capture(tmp_path / "c.iolog", [(T0 + i * 1_000_000, 0, far // 512 + i * 8, 4096, 1) for i in range(5)])
    lying_extent(log, 1 << 20, 1 << 40)
    with pytest.raises(BadCapture, match=rf"line 4: the request ends at byte {far + 4096}, past the 1048576 bytes"):
        check_iolog(read_capture(log))
    short = make_capture(tmp_path / "s.iolog", mixed(10))
    lying_extent(short, DEV_SIZE)  # more than its lines reach: the metadata is not this iolog's
    with pytest.raises(BadCapture, match=rf"its requests reach byte {9 * 8 * 512 + 4096}, not the {DEV_SIZE}"):
        check_iolog(read_capture(short))


def test_a_line_past_the_targets_end_refuses_the_replay_naming_both(tmp_path):
    log = make_capture(tmp_path / "c.iolog", mixed(10))
    cap = read_capture(log)
    with pytest.raises(BadCapture, match=r"line 5: the request ends at byte 8192 .*past the end of loop9 \(4096 "
                                         r"bytes\): it cannot be replayed there"):
        check_iolog(cap, target=("loop9", 4096))
    before = set(Path(tempfile.gettempdir()).glob("iosched-fio-*"))
    dest = tmp_path / "copy.iolog"
    with pytest.raises(BadCapture, match="past the end of loop9"):
        copy_for_replay(cap, dest, "/dev/loop9", target_size=4096)
    assert not dest.exists() and set(Path(tempfile.gettempdir()).glob("iosched-fio-*")) == before
    assert copy_for_replay(cap, dest, "/dev/loop9", fit_into=4096, target_size=4096) == 10  # folded: it fits


def test_ten_million_lines_stop_at_the_metadata_count():
    d = Path(tempfile.mkdtemp(dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    try:
        log = make_capture(d / "big.iolog", mixed(10))
        head = "".join(log.read_text().splitlines(keepends=True)[:3])
        with open(log, "w") as f:
            f.write(head)
            chunk = "1 /dev/loop7 read 0 512\n" * 100_000
            for _ in range(100):
                f.write(chunk)
        with pytest.raises(BadCapture, match="line 14: more requests"):
            check_iolog(read_capture(log))
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("change", [
    lambda d: d.update(iolog="other.iolog"),
    lambda d: d.update(path="/dev/../etc/passwd"),
    lambda d: d["device"].update(name="../x"),
    lambda d: d.update(requests=5),
    lambda d: d.update(max_extent=DEV_SIZE + 1),
    lambda d: d.update(reads=-1),
    lambda d: d.update(kind="matrix"),
    lambda d: d.update(extra=1),
    lambda d: d["series"].update(iops=[1.0] * (MAX_SERIES + 1)),
])
def test_hostile_metadata_is_refused(tmp_path, change):
    log = make_capture(tmp_path / "c.iolog", mixed(10))
    doc = json.loads(meta_path(log).read_text())
    change(doc)
    meta_path(log).write_text(json.dumps(doc))
    with pytest.raises(BadInput):
        read_capture(log)


def test_a_capture_without_metadata_or_junk_is_refused(tmp_path):
    bare = tmp_path / "bare.iolog"
    bare.write_text("fio version 3 iolog\n")
    with pytest.raises(BadCapture, match="no metadata beside it"):
        read_capture(bare)
    junk = tmp_path / "junk.iolog"
    junk.write_bytes(b"\x00\xff" * 1000)
    meta_path(junk).write_bytes(b"\x89PNG\x00\xff")
    with pytest.raises(BadCapture, match="not JSON"):
        read_capture(junk)


def test_metadata_nested_thousands_deep_is_refused_in_one_sentence(tmp_path):
    log = tmp_path / "deep.iolog"
    log.write_text("fio version 3 iolog\n")
    for deep in ("[" * 100_000 + "]" * 100_000, '{"a":' * 50_000 + "1" + "}" * 50_000):
        meta_path(log).write_text(deep)
        with pytest.raises(BadCapture, match=r"it nests too deeply$"):
            read_capture(log)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.text(max_size=60), st.binary(max_size=60).map(lambda b: b.decode("latin-1"))),
                max_size=8), st.integers(min_value=2, max_value=20))
def test_random_lines_are_accepted_or_refused_with_a_typed_error(tmp_path, junk, at):
    log = make_capture(tmp_path / "h.iolog", mixed(10))
    lines = log.read_bytes().splitlines(keepends=True)
    lines[at:at] = [(j + "\n").encode("latin-1", "replace") for j in junk]
    log.write_bytes(b"".join(lines))
    with contextlib.suppress(BadInput):
        check_iolog(read_capture(log))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_random_metadata_bytes_give_a_typed_error(tmp_path, data):
    log = make_capture(tmp_path / "m.iolog", mixed(3))
    meta_path(log).write_bytes(data)
    with pytest.raises(BadInput):
        read_capture(log)


def test_report_on_a_hostile_capture_is_one_sentence(tmp_path):
    log = make_capture(tmp_path / "c.iolog", mixed(10))
    replace_line(log, 5, "1000 /etc/shadow read 0 4096\n")
    err = one_sentence_exit_2("report", str(log))
    assert "line 5" in err and "/etc/shadow" in err


# --- the replay ---------------------------------------------------------------------------------------------


def test_the_replay_reads_only_its_own_checked_copy(tmp_path):
    log = make_capture(tmp_path / "c.iolog", mixed(10))
    job = prepare_replay(log, "timed", "loop9", DEV_SIZE)
    try:
        copy = Path(job.iolog)
        assert copy.parent == Path(job.workdir) and copy.is_file()
        lines = copy.read_text().splitlines()
        assert all(" /dev/loop9 " in line for line in lines[1:]) and len(lines) == 10 + 4
        text = job.render(None, "/dev/loop9")
        assert f"read_iolog={copy}" in text and "replay_redirect=/dev/loop9" in text
        assert "replay_no_stall" not in text and "iodepth=4" in text  # timed: the deepest the capture went
        assert str(copy) not in job.to_json()["text"] and str(log) in job.to_json()["text"]
        assert job.primary == "total_p99_us" and job.writes and "replay (timed)" in job.name
        assert job.short_of(10) is None and "issued 9 of the capture's 10" in (job.short_of(9) or "")
        assert job.expected_s(5.0) is None  # --runtime caps a replay: ending sooner is no failure
        assert "runtime=5" in job.render(5.0) and "time_based" not in job.render(5.0)
    finally:
        job.release()
    assert not Path(job.workdir).exists()
    fast = prepare_replay(log, "fast", "loop9", DEV_SIZE)
    fast.release()
    assert "replay_no_stall=1" in fast.render(None) and fast.primary == "mb_s"


def test_a_bad_capture_leaves_no_copy_and_a_large_one_names_the_sizes(tmp_path):
    log = make_capture(tmp_path / "c.iolog", mixed(10))
    before = set(Path(tempfile.gettempdir()).glob("iosched-fio-*"))
    with pytest.raises(BadInput, match="holds 4096 bytes"):
        prepare_replay(log, "fast", "loop9", 4096)
    with pytest.raises(BadInput, match="fast or timed"):
        prepare_replay(log, "slow", "loop9", DEV_SIZE)
    replace_line(log, 6, "1000 /dev/loop7 read 0 4096 9\n")
    with pytest.raises(BadCapture):
        prepare_replay(log, "fast", "loop9", DEV_SIZE)
    assert set(Path(tempfile.gettempdir()).glob("iosched-fio-*")) == before


@pytest.mark.parametrize("option", ["read_iolog=/tmp/x", "replay_redirect=/dev/sda", "iolog=/tmp/x"])
def test_user_job_files_still_may_not_replay(option):
    with pytest.raises(JobFileError, match="replays IO against paths"):
        parse_job_file(f"[j]\nrw=read\n{option}\n")


def test_the_metadata_roundtrips_through_its_type_and_meets_its_schema(tmp_path):
    log = make_capture(tmp_path / "c.iolog", mixed(4))
    cap = read_capture(log)
    doc = json.loads(meta_path(log).read_text())
    assert doc == asdict(cap.meta)
    assert problems("capture-meta.schema.json", doc) == []


def test_fitted_folds_offsets_keeping_runs_sequential_and_within_the_device():
    size = 1 << 20
    run = [fitted(off, 4096, size) for off in range(3 << 20, (3 << 20) + 5 * 4096, 4096)]
    assert run == [0, 4096, 8192, 12288, 16384]  # a run stays a run
    assert fitted(size - 2048, 4096, size) == size - 4096  # one that would cross the end ends there
    assert fitted(5 * 512, 1024, size) == 2560  # a sector-aligned request keeps its sectors
    for off in range(0, 8 << 20, 12345 * 512):
        f = fitted(off, 8192, size)
        assert f >= 0 and f + 8192 <= size and f % 512 == 0


def test_replay_fit_folds_a_large_capture_into_a_small_device(tmp_path):
    log = make_capture(tmp_path / "c.iolog", [(T0 + i * 1_000_000, 0, (32 << 20) // 512 + i * 8, 4096, 1)
                                              for i in range(10)])
    with pytest.raises(BadInput, match="--replay-fit"):
        prepare_replay(log, "fast", "loop9", 16 << 20)
    job = prepare_replay(log, "fast", "loop9", 16 << 20, fit=True)
    try:
        offsets = [int(line.split()[3]) for line in Path(job.iolog).read_text().splitlines()[3:-1]]
        assert offsets == [i * 4096 for i in range(10)] and job.describe()["fitted"]
    finally:
        job.release()


def test_metadata_never_goes_through_a_link_another_user_planted(others_dir, tmp_path):
    victim = make_victim(tmp_path)
    before = digest(victim)
    # The name the metadata went through before (predictable: NAME.meta.json.PID.tmp) is no door any more.
    plant(others_dir / f".c.iolog.meta.json.{os.getpid()}.tmp", victim)
    make_capture(others_dir / "c.iolog", mixed(10))
    assert read_capture(others_dir / "c.iolog").meta.requests == 10
    # A link where the metadata goes, planted after the capture began: refused, nothing written.
    log = others_dir / "d.iolog"
    log.write_text("")
    plant(meta_path(log), victim)
    with pytest.raises(BadInput, match=r"d\.iolog\.meta\.json is a symlink, not a regular file"):
        make_capture(log, mixed(10))
    assert digest(victim) == before
    assert temporaries(others_dir) == [f".c.iolog.meta.json.{os.getpid()}.tmp"]


def test_the_replays_copy_is_made_new_never_through_a_link(others_dir, tmp_path):
    victim = make_victim(tmp_path)
    before = digest(victim)
    cap = read_capture(make_capture(tmp_path / "c.iolog", mixed(10)))
    dest = others_dir / "replay.iolog"
    plant(dest, victim)
    with pytest.raises(BadInput, match="is a symlink, not a regular file"):
        copy_for_replay(cap, dest, "/dev/loop9")
    assert digest(victim) == before and os.path.islink(dest)
    os.unlink(dest)
    assert copy_for_replay(cap, dest, "/dev/loop9") == 10 and not dest.is_symlink()


# --- a command's capture: several devices, laid end to end on one target ---------------------------------------

LOOP8 = 8 << 20 | 8


def devices_capture(path: Path, records: list[tuple[int, int, int, int, int, int]],
                    names: dict[int, str | None] | None = None) -> Path:
    """A capture written as `capture --cmd` writes it, from (t_ns, op, sector, bytes, depth, dev) records: dev 7:7
    is loop7 (64 MiB), 8:8 loop8 (3 MiB and a sector); the lines wait in a body until every device is known."""
    names = names if names is not None else {7 << 20 | 7: "/dev/loop7", LOOP8: "/dev/loop8"}
    docs = {"/dev/loop7": device(), "/dev/loop8": device("loop8", (3 << 20) + 512)}
    body = io.StringIO()
    w = CaptureWriter(body, None, T0, name_of=names.get)
    for r in records:
        w.add(*r)
    with open(path, "w") as out:
        end_us = w.finish(max(r[0] for r in records) + 10**6, dest=out)
    write_meta(w.meta(iolog=path.name, kernel="6.1.0", started="2026-11-25T00:00:00+00:00", duration_s=end_us / 1e6,
                      ended="command", timestamps="submit", lost=0, untracked=0,
                      devices={p: docs[p] for p in {f.path for f in w.files}},
                      command=CommandDoc(cmd="cat a b", uid=1000, gid=1000, cold=True, wall_s=end_us / 1e6,
                                         exit_status=0, ios=len(records), accounted_read_bytes=0,
                                         accounted_write_bytes=0)), path)
    return path


TWO = [(T0 - 5, 0, 0, 4096, 1, 7 << 20 | 7),  # before the start (the command's wrapper): left out
       (T0 + 1_000, 0, 8, 4096, 1, LOOP8), (T0 + 2_000, 0, 16, 8192, 2, LOOP8),
       (T0 + 3_000, 0, 0, 4096, 1, 7 << 20 | 7), (T0 + 4_000, 1, 6144, 512, 1, LOOP8),
       (T0 + 5_000, 2, 0, 0, 1, 7 << 20 | 7), (T0 + 6_000, 0, 100, 4096, 1, 9 << 20)]  # 9:0 is gone: not written


def test_a_capture_of_several_devices_names_each_and_lays_them_end_to_end(tmp_path):
    log = devices_capture(tmp_path / "c.iolog", TWO, {7 << 20 | 7: "/dev/loop7", LOOP8: "/dev/loop8", 9 << 20: None})
    lines = log.read_text().splitlines()
    # The device most bytes went to first: fio's add and open lines for each, then the lines, then each closed.
    assert lines[:5] == ["fio version 3 iolog", "0 /dev/loop8 add", "0 /dev/loop7 add", "0 /dev/loop8 open",
                         "0 /dev/loop7 open"]
    assert lines[5:10] == ["1 /dev/loop8 read 4096 4096", "2 /dev/loop8 read 8192 8192", "3 /dev/loop7 read 0 4096",
                           "4 /dev/loop8 write 3145728 512", "5 /dev/loop7 sync 0 0"]
    assert lines[10:] == ["1006 /dev/loop8 close", "1006 /dev/loop7 close"]
    m = read_capture(log).meta
    assert m.path == "/dev/loop8" and m.device.name == "loop8" and m.command is not None
    (b, a) = m.files
    assert (b.base, b.max_extent, b.requests, b.read_bytes, b.write_bytes) == (0, (3 << 20) + 512, 3, 12288, 512)
    assert (a.base, a.max_extent, a.requests) == (4 << 20, 4096, 2)  # the MiB after loop8's end
    assert m.max_extent == (4 << 20) + 4096 and (m.requests, m.reads, m.writes, m.flushes) == (5, 3, 1, 1)
    assert check_iolog(read_capture(log)) == 5
    s = summarize(read_capture(log))
    assert s.sequential["read"] == 1  # loop8's second read follows its first; loop7's 0 is another device's


def test_a_replay_of_several_devices_puts_each_at_its_base_on_the_one_target(tmp_path):
    cap = read_capture(devices_capture(tmp_path / "c.iolog", TWO[1:6]))
    dest = tmp_path / "copy.iolog"
    assert copy_for_replay(cap, dest, "/dev/loop9", target_size=8 << 20) == 5
    body = dest.read_text().splitlines()
    assert body[:3] == ["fio version 3 iolog", "0 /dev/loop9 add", "0 /dev/loop9 open"]
    assert [line.split()[2:] for line in body[3:-1]] == [["read", "4096", "4096"], ["read", "8192", "8192"],
                                                          ["read", str(4 << 20), "4096"], ["write", "3145728", "512"],
                                                          ["sync", "0", "0"]]
    dest.unlink()
    # Too small for the layout: refused naming the target; folded into it with --replay-fit.
    with pytest.raises(BadCapture, match="past the end of loop9"):
        copy_for_replay(cap, dest, "/dev/loop9", target_size=4 << 20)
    assert copy_for_replay(cap, dest, "/dev/loop9", fit_into=4 << 20, target_size=4 << 20) == 5
    assert [int(line.split()[3]) for line in dest.read_text().splitlines()[3:6]] == [4096, 8192, 0]


def test_a_replay_refuses_a_capture_of_several_disks_naming_the_command_that_captures_one(tmp_path):
    """A start-up or a replay is one disk's requests, laid where they were: two disks' on one target is neither."""
    from iosched.core.load.replay import prepare_replay

    log = devices_capture(tmp_path / "c.iolog", TWO[1:6])
    with pytest.raises(BadInput) as refused:
        prepare_replay(log, "fast", "loop9", 8 << 20)
    assert str(refused.value) == ("c.iolog holds the IO of 2 disks (loop8 12.5K, loop7 4.0K): a replay is of one "
                                  "disk's requests; capture it on the one its files are on: iosched capture loop8 "
                                  "--cmd 'cat a b' --cold -o FILE")


@pytest.mark.parametrize(("change", "why"), [
    (lambda d: d["devices"][1].update(base=0), "laid end to end"),
    (lambda d: d["devices"][0].update(path="/dev/loop7"), "first device is not its device"),
    (lambda d: d["devices"].append(d["devices"][1]), "names a device twice"),
    (lambda d: d["devices"][1]["device"].update(size_bytes=512), "past that device's"),
    (lambda d: d["devices"][1].update(requests=9), "request counts"),
    (lambda d: d["devices"][1].update(read_bytes=1), "bytes do not add up"),
    (lambda d: d.update(max_extent=1 << 20), "where its last device ends"),
    (lambda d: d.update(devices=[]), "names 0 devices"),
    (lambda d: d["command"].update(exit_status=256), "exit_status"),
    (lambda d: d["command"].update(uid=-1), "uid"),
])
def test_hostile_metadata_of_several_devices_is_refused(tmp_path, change, why):
    log = devices_capture(tmp_path / "c.iolog", TWO[1:6])
    doc = json.loads(meta_path(log).read_text())
    change(doc)
    meta_path(log).write_text(json.dumps(doc))
    with pytest.raises(BadInput, match=why):
        read_capture(log)


@pytest.mark.parametrize(("line", "text", "why"), [
    (2, "0 /dev/loop7 add\n", "expected the add line of /dev/loop8"),
    (5, "0 /dev/loop8 open\n", "expected the open line of /dev/loop7"),
    (6, "1 /dev/loop9 read 4096 4096\n", r"not the capture's devices \(/dev/loop8, /dev/loop7\)"),
    (8, "3 /dev/loop7 read 8192 4096\n", "past the 4096 bytes its metadata says its requests on /dev/loop7 reach"),
    (12, "1006 /dev/loop8 read 0 512\n", "a request among the close lines"),
])
def test_a_hostile_line_of_several_devices_is_refused_naming_it(tmp_path, line, text, why):
    log = devices_capture(tmp_path / "c.iolog", TWO[1:6])
    replace_line(log, line, text)
    with pytest.raises(BadCapture, match=why) as e:
        check_iolog(read_capture(log))
    assert f"line {line}" in str(e.value)


def test_lines_moved_between_devices_do_not_match_their_metadata(tmp_path):
    log = devices_capture(tmp_path / "c.iolog", TWO[1:6])
    replace_line(log, 8, "3 /dev/loop8 read 0 4096\n")  # loop7's read said to be loop8's
    with pytest.raises(BadCapture, match="its lines on /dev/loop8 do not match its metadata"):
        check_iolog(read_capture(log))
    cut = devices_capture(tmp_path / "d.iolog", TWO[1:6])
    cut.write_text("".join(cut.read_text().splitlines(keepends=True)[:-1]))
    with pytest.raises(BadCapture, match="without its close lines"):
        check_iolog(read_capture(cut))


def test_a_command_capture_meets_its_schema(tmp_path):
    log = devices_capture(tmp_path / "c.iolog", TWO[1:6])
    doc = json.loads(meta_path(log).read_text())
    assert doc == asdict(read_capture(log).meta) and doc["command"]["cmd"] == "cat a b"
    assert problems("capture-meta.schema.json", doc) == []


# --- a capture's bound, exact -------------------------------------------------------------------------------------

records_st = st.lists(st.tuples(st.integers(0, 3 * 10**9), st.integers(0, 4), st.integers(0, 10**6),
                                st.sampled_from([0, 512, 4096, 131072]), st.integers(1, 32),
                                st.sampled_from([7 << 20 | 7, LOOP8])), max_size=120)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=records_st, limit=st.integers(200, 6000), several=st.booleans(), flushes=st.integers(1, 5))
def test_a_captures_bound_holds_exactly_whatever_comes_between_two_looks(records, limit, several, flushes):
    """`capture --cmd --max-size 4k` let a 5.9 kB iolog be written: the bound was looked at now and then. The writer
    holds it: the finished iolog is never larger, the lines written are the requests counted, and a record left out
    says the capture is full."""
    names = {7 << 20 | 7: "/dev/loop7", LOOP8: "/dev/loop8"}
    body, dest = io.StringIO(), io.StringIO()
    w = (CaptureWriter(body, None, T0, name_of=names.get, limit=limit) if several else
         CaptureWriter(body, "/dev/loop7", T0, limit=limit))
    for i, (t, op, sector, nbytes, depth, dev) in enumerate(records):
        w.add(T0 + t, op, sector, nbytes, depth, dev if several else 0)
        if i % flushes == 0:
            w.flush(now_ns=T0 + t)
    w.flush(final=True)
    end_ns = T0 + 4 * 10**9
    size = w.size(w.end_us(end_ns))
    if several and not w.files:
        return  # nothing named: no iolog (the command's capture says it did no IO)
    w.finish(end_ns, dest=dest if several else None)
    text = dest.getvalue() if several else body.getvalue()
    assert len(text) == size
    writable = sum(1 for r in records if r[1] <= 3)
    if not w.full:
        assert w.requests == writable  # nothing left out: every line there
    # Every byte of it, the lines finish adds included; a command's capture (several devices) past it only when a
    # device first seen once the room was gone adds its own lines, and then it is full: refused whole.
    assert size <= limit or (several and w.full), (size, limit)
    lines = [line for line in text.splitlines() if len(line.split()) == 5]  # requests, not the framing
    assert len(lines) == w.requests  # what is counted is what is written
