"""`advise --observe`: a capture summed up as the figures advise plans from, and the thin call that takes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from iosched.core.advice import workload
from iosched.core.advice.workload import capture_workload, summary_of
from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.kernel.procio import ProcessRate
from iosched.core.load.capture_summary import summarize
from iosched.core.load.iolog import CaptureWriter, read_capture, write_meta

T0 = 10**12


def make_capture(path: Path, records: list[tuple[int, int, int, int, int]], seconds: float = 10.0) -> Path:
    """A capture as `iosched capture` writes one, from (t_ns, op, sector, bytes, depth) records."""
    with open(path, "w") as out:
        w = CaptureWriter(out, "/dev/loop7", T0)
        for r in records:
            w.add(*r)
        w.flush()
        end_us = w.finish(T0 + int(seconds * 1e9))
    dev = DeviceDoc(name="loop7", maj_min="7:7", size_bytes=1 << 30, rotational=False, removable=False,
                    read_only=False, scheduler="none", schedulers=["none", "bfq"], nr_requests=128, read_ahead_kb=128)
    write_meta(w.meta(iolog=path.name, device=dev, kernel="6.18.0", started="2026-11-25T00:00:00+00:00",
                      duration_s=end_us / 1e6, ended="duration", timestamps="begin", lost=3, untracked=0), path)
    return path


def records() -> list[tuple[int, int, int, int, int]]:
    """300 random 4 KiB reads at depth 1-2, then 100 sequential 128 KiB writes at depth 8."""
    reads = [(T0 + i * 10_000_000, 0, (i * 7919) % 100_000 * 8, 4096, 1 + i % 2) for i in range(300)]
    writes = [(T0 + 3_000_000_000 + i * 1_000_000, 1, 500_000 + i * 256, 131072, 8) for i in range(100)]
    return reads + writes


def test_summary_of_a_capture(tmp_path):
    cap = read_capture(make_capture(tmp_path / "w.iolog", records()))
    procs = (ProcessRate(42, "postgres", 1e6, 2e6),)
    s = summary_of(cap.meta, summarize(cap), procs)
    assert (s.requests, s.reads, s.writes, s.flushes, s.discards) == (400, 300, 100, 0, 0)
    assert s.read_share == 0.75 and s.read_size == 4096 and s.write_size == 131072
    assert s.sequential_reads < 0.05 and s.sequential_writes == 0.99  # each write but the first follows the last
    assert (s.depth_p50, s.depth_max) == (2, 8) and s.lost == 3
    assert s.duration_s == pytest.approx(10.0) and s.iops == pytest.approx(40.0)
    assert s.kind() == "mixed read/write, partly sequential, moderate queue (p95 depth 8)"
    lines = s.lines()
    assert lines[0] == "workload over 10 s: mixed read/write, partly sequential, moderate queue (p95 depth 8)"
    assert lines[1].endswith(": 75% reads, 25% writes")  # not "75% reads of reads and writes" (#48 item 9)
    assert "reads typically 4.0K, 0% sequential; writes typically 128.0K, 99% sequential" in lines[2]
    assert any("postgres (42) 2.9M/s" in line for line in lines)
    assert any("3 requests were lost" in line for line in lines)


def test_an_empty_capture(tmp_path):
    cap = read_capture(make_capture(tmp_path / "e.iolog", []))
    s = summary_of(cap.meta, summarize(cap))
    assert s.requests == 0 and s.read_size is None and s.kind() == "no reads or writes"


def test_capture_workload_is_a_thin_call(tmp_path, monkeypatch):
    seen = {}

    class FakeRun:
        interrupted = None

        def __init__(self, device, out, duration, max_bytes, root, on_progress):
            seen.update(device=device, duration=duration, root=root)
            self.out = out

        def run(self):
            make_capture(self.out, records())
            return type("R", (), {"iolog": self.out, "meta_file": Path(str(self.out) + ".meta.json")})()

    monkeypatch.setattr(workload, "CaptureRun", FakeRun)
    got = capture_workload("loop7", 10.0, tmp_path / "live.iolog", root="/r")
    assert seen == {"device": "loop7", "duration": 10.0, "root": "/r"}
    assert got.iolog == tmp_path / "live.iolog" and got.meta_file.name == "live.iolog.meta.json"
    assert got.summary.requests == 400 and got.interrupted is None
    assert all(p.read_bytes_s >= 0 for p in got.summary.processes)
