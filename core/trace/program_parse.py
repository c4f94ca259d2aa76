"""The CO-RE block tracer's output (one JSON object a line, see bpf/blktrace.c) -> typed samples. Pure: no IO.

Per device and operation the loader prints cumulative totals, so an interval is the difference of two frames;
per process it prints what the interval added (it reads and deletes each entry). The BPF programs' own run
time and the requests issued on the whole machine are cumulative too: their differences give the tracer's cost
per IO.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from iosched.core.trace.histograms import MAX_BUCKETS, Log2Hist
from iosched.core.trace.parse import (
    NO_DATA_OPS,
    OPS,
    DeviceLatency,
    OpLatency,
    ProcessIO,
    TraceOutputError,
    TraceSample,
    device_name,
)

PROGRAM = "libbpf"
# Slots of the program's histograms (BT_SLOTS in bpf/blktrace.h); never more than a Log2Hist holds.
SLOTS = 32
MAX_COUNT = 1 << 63


@dataclass(frozen=True)
class Ready:
    """Every program is attached."""

    ns: int
    io_start: bool  # block_io_start is traced: total time runs from the accounting start, as await's does
    stats: bool  # the kernel keeps the programs' run time: the cost per IO is measured


@dataclass(frozen=True)
class OpTotals:
    """One (device, operation) since the tracer started."""

    ios: int
    bytes: int
    total_ns: int
    sched: Log2Hist
    device: Log2Hist
    total: Log2Hist


@dataclass(frozen=True)
class ProgramFrame:
    ns: int
    ops: Mapping[tuple[int, str], OpTotals]
    processes: tuple[tuple[int, int, str, int, int, Log2Hist], ...]  # dev, pid, comm, ios, bytes, latency
    untimed: int  # completions seen without their request (in flight when tracing began, or evicted)
    full: int  # requests the per-request map refused
    swept: int  # stale entries the loader removed (a completion never seen)
    issued: int  # requests issued on the whole machine, traced or not
    # The programs' run time and runs while the kernel timed them (one interval in ten), and the requests issued
    # meanwhile; None where the kernel does not time BPF programs.
    timed: int | None
    prog_ns: int | None
    prog_runs: int | None


def _int(v: object, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < MAX_COUNT:
        raise TraceOutputError(f"{what} is not a count: {str(v)[:40]!r}")
    return v


def _hist(v: object, what: str) -> Log2Hist:
    if not isinstance(v, list) or len(v) > min(SLOTS, MAX_BUCKETS):
        raise TraceOutputError(f"{what} is not a histogram")
    return Log2Hist.of(_int(c, what) for c in v)


def _list(v: object, what: str, length: int | None = None) -> list[object]:
    if not isinstance(v, list) or (length is not None and len(v) != length):
        raise TraceOutputError(f"{what} is not a list" + (f" of {length}" if length is not None else ""))
    return v


def _op(row: object) -> tuple[tuple[int, str], OpTotals]:
    dev, op, ios, size, total_ns, sched, device, total = _list(row, "an operation's row", 8)
    index = _int(op, "an operation")
    if index >= len(OPS):
        raise TraceOutputError(f"operation {index} is unknown")
    return (_int(dev, "a device"), OPS[index]), OpTotals(
        _int(ios, "ios"), _int(size, "bytes"), _int(total_ns, "total_ns"), _hist(sched, "sched"),
        _hist(device, "device"), _hist(total, "total"))


def _process(row: object) -> tuple[int, int, str, int, int, Log2Hist]:
    dev, pid, comm, ios, size, lat = _list(row, "a process's row", 6)
    if not isinstance(comm, str) or len(comm) > 16:
        raise TraceOutputError("a process's command is not a short string")
    return (_int(dev, "a device"), _int(pid, "a pid"), comm, _int(ios, "ios"), _int(size, "bytes"),
            _hist(lat, "latency"))


def _optional(obj: Mapping[str, object], key: str) -> int | None:
    v = obj.get(key)
    return None if v is None else _int(v, key)


def parse_line(line: str) -> Ready | ProgramFrame:
    """One line of the loader's output; TraceOutputError for anything else (truncated, garbage)."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        raise TraceOutputError(f"not JSON: {line[:60]!r}") from None
    if not isinstance(obj, dict):
        raise TraceOutputError(f"not a tracer record: {line[:60]!r}")
    ns = _int(obj.get("t"), "the time")
    if obj.get("ready") == 1:
        io_start, stats = obj.get("io_start"), obj.get("stats")
        if not isinstance(io_start, bool) or not isinstance(stats, bool):
            raise TraceOutputError("a ready record without its flags")
        return Ready(ns, io_start, stats)
    ops = dict(_op(row) for row in _list(obj.get("ops"), "ops"))
    procs = tuple(_process(row) for row in _list(obj.get("procs"), "procs"))
    return ProgramFrame(ns, ops, procs, _int(obj.get("untimed"), "untimed"), _int(obj.get("full"), "full"),
                        _int(obj.get("swept"), "swept"), _int(obj.get("issued"), "issued"),
                        _optional(obj, "timed"), _optional(obj, "prog_ns"), _optional(obj, "prog_runs"))


def _delta(cur: int, prev: int) -> int:
    return cur - prev if cur >= prev else cur


def program_sample(prev: ProgramFrame, cur: ProgramFrame, names: Mapping[int, str],
                   loader_cpu_s: float | None = None, programs_us: float | None = None) -> TraceSample | None:
    """The interval between two frames; None when they are not in order.

    ``loader_cpu_s``: the loader's own CPU over the interval; ``programs_us``: the programs' µs per IO when last
    timed, for an interval the kernel did not time. Both go into the cost per IO.
    """
    if cur.ns <= prev.ns:
        return None
    per_dev: dict[str, dict[str, OpLatency]] = {}
    for (dev, op), now in cur.ops.items():
        was = prev.ops.get((dev, op))
        if was is None:
            was = OpTotals(0, 0, 0, Log2Hist(), Log2Hist(), Log2Hist())
        size = _delta(now.bytes, was.bytes)
        moved = 0 if op in NO_DATA_OPS else size
        o = OpLatency(ios=_delta(now.ios, was.ios), bytes=moved, sched=now.sched.since(was.sched),
                      device=now.device.since(was.device), total=now.total.since(was.total),
                      total_ns=_delta(now.total_ns, was.total_ns), extent_bytes=size - moved)
        if o.ios or o.sched.total or o.device.total or o.total.total:
            per_dev.setdefault(device_name(dev, names), {})[op] = o
    devices = {n: DeviceLatency(n, dict(sorted(ops.items(), key=lambda kv: OPS.index(kv[0]))))
               for n, ops in per_dev.items()}
    procs = [ProcessIO(device_name(dev, names), pid, comm, ios, size, lat)
             for dev, pid, comm, ios, size, lat in cur.processes if ios]
    procs.sort(key=lambda p: (-p.ios, p.pid))
    dropped = sum(_delta(c, p) for c, p in ((cur.untimed, prev.untimed), (cur.full, prev.full),
                                            (cur.swept, prev.swept)))
    return TraceSample(cur.ns / 1e9, (cur.ns - prev.ns) / 1e9, devices, tuple(procs), dropped_requests=dropped,
                       tracer=PROGRAM, cost_us_per_io=cost_per_io(prev, cur, loader_cpu_s, programs_us))


def programs_cost(prev: ProgramFrame, cur: ProgramFrame) -> float | None:
    """µs the programs ran per request issued while the kernel timed them between two frames (the timing's own
    two clock reads a run included); None when it did not time them then."""
    if None in (cur.timed, prev.timed, cur.prog_ns, prev.prog_ns):
        return None
    timed = _delta(cur.timed or 0, prev.timed or 0)
    return _delta(cur.prog_ns or 0, prev.prog_ns or 0) / timed / 1e3 if timed else None


def cost_per_io(prev: ProgramFrame, cur: ProgramFrame, loader_cpu_s: float | None,
                programs_us: float | None = None) -> float | None:
    """µs of CPU the tracer spent per request issued on the machine: its programs' run time per IO (this
    interval's if the kernel timed it, else ``programs_us``) plus the loader's CPU over the requests issued.
    None until the programs have been timed, or without requests."""
    programs = programs_cost(prev, cur)
    if programs is None:
        programs = programs_us
    issued = _delta(cur.issued, prev.issued)
    if programs is None or not issued:
        return None
    return round(programs + (loader_cpu_s or 0.0) * 1e6 / issued, 3)
