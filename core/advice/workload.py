"""`advise --observe DURATION`: the disk's live workload captured for DURATION (core/trace/capture.py, a replayable
capture) and summed up (core/load/capture_summary.py): the mix, the request sizes, how sequential, the depth, and
the processes doing IO meanwhile. A thin call: the capture and its checks are the capture's own.

The processes come from /proc/PID/io (core/kernel/procio.py) read before and after: what each caused to be read from
or written to storage over the capture, on every disk (the kernel keeps no per-disk split there), busiest first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from iosched.core.base.units import human_size
from iosched.core.kernel.procio import ProcessRate, process_rates, read_process_io
from iosched.core.load.capture_summary import CaptureSummary, summarize
from iosched.core.load.iolog import CaptureDoc, read_capture
from iosched.core.trace.capture import CaptureProgress, CaptureRun

MAX_CAPTURE_BYTES = 1 << 30  # the capture's own bound on its iolog
TOP_PROCESSES = 5


@dataclass(frozen=True)
class WorkloadSummary:
    """What kind of workload a capture holds: what decides which scheduler can help."""

    duration_s: float
    requests: int
    reads: int
    writes: int
    flushes: int
    discards: int
    read_share: float  # of reads and writes
    read_size: int | None  # bytes: the typical request (the median's log2 bucket), None without any
    write_size: int | None
    sequential_reads: float  # share of reads starting where the last read ended
    sequential_writes: float
    depth_p50: int
    depth_p95: int
    depth_max: int
    iops: float
    mb_s: float
    lost: int  # requests the tracer had no room for
    processes: tuple[ProcessRate, ...]  # busiest first, on every disk

    def kind(self) -> str:
        """"read-mostly, random, shallow queue (p95 depth 1)"."""
        rw = self.reads + self.writes
        if not rw:
            return "no reads or writes"
        mix = ("read-mostly" if self.read_share >= 0.8 else "write-mostly" if self.read_share <= 0.2 else
               "mixed read/write")
        seq = (self.sequential_reads * self.reads + self.sequential_writes * self.writes) / rw
        pattern = "sequential" if seq >= 0.6 else "random" if seq <= 0.2 else "partly sequential"
        depth = "deep" if self.depth_p95 >= 16 else "shallow" if self.depth_p95 <= 2 else "moderate"
        return f"{mix}, {pattern}, {depth} queue (p95 depth {self.depth_p95})"

    def mix_words(self) -> str:
        """"84% reads, 16% writes": the two shares add up to 100 as printed."""
        if not self.reads + self.writes:
            return "no reads or writes"
        reads = round(100 * self.read_share)
        return f"{reads}% reads, {100 - reads}% writes"

    def lines(self) -> list[str]:
        out = [f"workload over {self.duration_s:.0f} s: {self.kind()}",
               f"  {self.requests} requests ({self.iops:.0f}/s, {self.mb_s:.1f} MB/s): {self.mix_words()}"
               + (f", {self.flushes} flushes" if self.flushes else "")
               + (f", {self.discards} discards" if self.discards else "")]
        sizes = [f"{what} typically {human_size(size)}, {seq:.0%} sequential" for what, size, seq in
                 (("reads", self.read_size, self.sequential_reads), ("writes", self.write_size,
                                                                      self.sequential_writes)) if size]
        if sizes:
            out.append("  " + "; ".join(sizes))
        out.append(f"  depth: median {self.depth_p50}, p95 {self.depth_p95}, max {self.depth_max}")
        if self.processes:
            out.append("  busiest processes (all disks): " + ", ".join(
                f"{p.comm} ({p.pid}) {human_size(p.read_bytes_s + p.write_bytes_s)}/s" for p in self.processes))
        if self.lost:
            out.append(f"  {self.lost} requests were lost by the tracer: the capture is missing them")
        return out


def _typical(buckets: dict[int, int]) -> int | None:
    """The log2 bucket holding the median request: its lower bound, in bytes."""
    total = sum(buckets.values())
    if not total:
        return None
    seen = 0
    for k in sorted(buckets):
        seen += buckets[k]
        if 2 * seen >= total:
            return 1 << k
    return None  # pragma: no cover - the loop always reaches the median


def summary_of(meta: CaptureDoc, s: CaptureSummary, processes: tuple[ProcessRate, ...] = ()) -> WorkloadSummary:
    """Pure: a checked capture's metadata and summary as the figures `advise` shows and plans from."""
    rw = s.counts["read"] + s.counts["write"]
    duration = meta.duration_s
    moved = meta.read_bytes + meta.write_bytes
    return WorkloadSummary(
        duration_s=duration, requests=s.requests, reads=s.counts["read"], writes=s.counts["write"],
        flushes=s.counts["sync"], discards=s.counts["trim"], read_share=s.counts["read"] / rw if rw else 0.0,
        read_size=_typical(s.sizes["read"]), write_size=_typical(s.sizes["write"]),
        sequential_reads=s.sequential_share("read"), sequential_writes=s.sequential_share("write"),
        depth_p50=meta.depth_p50, depth_p95=meta.depth_p95, depth_max=meta.depth_max,
        iops=meta.requests / duration if duration else 0.0, mb_s=moved / duration / 1e6 if duration else 0.0,
        lost=meta.lost, processes=processes)


@dataclass(frozen=True)
class ObservedWorkload:
    iolog: Path  # the capture, replayable (`compare --replay`)
    meta_file: Path
    summary: WorkloadSummary
    interrupted: BaseException | None  # a Ctrl-C or signal that ended it early: the files are whole


def capture_workload(device: str, duration_s: float, out: Path, root: str | Path = "/",
                     on_progress: Callable[[CaptureProgress], object] | None = None,
                     max_bytes: int = MAX_CAPTURE_BYTES) -> ObservedWorkload:
    """Capture ``device``'s requests for ``duration_s`` into ``out`` (a new file) and sum them up. Raises what
    CaptureRun raises (BadInput, CaptureFailed) before or instead of a capture."""
    before = read_process_io()
    t0 = time.monotonic()
    run = CaptureRun(device, out, duration_s, max_bytes, root, on_progress)
    result = run.run()
    rates = process_rates(before, read_process_io(), time.monotonic() - t0, top=TOP_PROCESSES)
    capture = read_capture(result.iolog)
    summary = summary_of(capture.meta, summarize(capture), tuple(rates))
    return ObservedWorkload(result.iolog, result.meta_file, summary, run.interrupted)
