"""bpftrace's JSON output (``-f json``, one object a line) -> typed per-interval samples. Pure: no IO.

The tracer's script keeps the per-device maps cumulative and prints them each interval, then a tick line;
the per-process maps are printed and cleared each interval. So a frame is the maps printed before one tick,
and an interval sample is the difference of two frames (exact counts: no event falls between a print and a
clear). Map keys print as "dev,cpu,rwbs" or "dev,cpu,pid" where dev is the kernel's dev_t
(major << 20 | minor); the CPUs are added up here.

One module: every bpftrace frame kind is parsed here, pure, beside the others it must agree with (~410 lines).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from iosched.core.base.errors import IoschedError
from iosched.core.trace.histograms import MAX_BUCKETS, Log2Hist, merge

TICK = "iosched-tick"
CUMULATIVE_MAPS = frozenset({"ios", "bytes", "total_ns", "sched", "device", "total"})
OPS = ("read", "write", "flush", "discard", "other")
# Operations that move no data: a discard names a range to forget, a flush none. They count as requests and
# have latencies, but their sectors are not throughput (iostat keeps them out of rkB/s and wkB/s too).
NO_DATA_OPS = frozenset({"discard", "flush"})


class TraceOutputError(IoschedError):
    """A line of tracer output that is not what the script prints."""


@dataclass(frozen=True)
class MapRecord:
    name: str  # without the "@"
    values: Mapping[str, int]  # key text -> value


@dataclass(frozen=True)
class HistRecord:
    name: str
    values: Mapping[str, Log2Hist]


@dataclass(frozen=True)
class TickRecord:
    ns: int  # CLOCK_MONOTONIC, the same clock as time.monotonic()


@dataclass(frozen=True)
class InfoRecord:
    """Anything bpftrace prints that carries no data for us (attached_probes, lost_events, time ...)."""

    kind: str
    text: str = ""


Record = MapRecord | HistRecord | TickRecord | InfoRecord


def _int(v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TraceOutputError(f"expected an integer, got {str(v)[:40]!r}")
    return v


def _hist(buckets: object) -> Log2Hist:
    if not isinstance(buckets, list):
        raise TraceOutputError("a histogram is not a list of buckets")
    counts = [0] * MAX_BUCKETS
    for b in buckets:
        if not isinstance(b, dict) or "count" not in b:
            raise TraceOutputError("a histogram bucket has no count")
        count = _int(b["count"])
        if "min" not in b:
            continue  # bpftrace's bucket of negative values: never produced by monotonic differences
        low = _int(b["min"])
        if low < 0 or count < 0:
            raise TraceOutputError("a histogram bucket is negative")
        counts[min(low.bit_length(), MAX_BUCKETS - 1)] += count
    return Log2Hist.of(counts)


def _merge_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object whose repeated keys are added up rather than overwritten.

    The kernel's rwbs is a char[10]: bytes after its NUL differ between requests, so one printed key such as
    "7340072,R" can stand for several map entries, each holding part of the count.
    """
    out: dict[str, object] = {}
    for k, v in pairs:
        have = out.get(k)
        if isinstance(have, int) and isinstance(v, int) and not isinstance(v, bool):
            out[k] = have + v
        elif isinstance(have, list) and isinstance(v, list):
            out[k] = have + v  # histogram buckets: _hist adds counts of equal buckets
        else:
            out[k] = v
    return out


def parse_line(line: str) -> Record:
    """One line of ``bpftrace -f json`` output; TraceOutputError for anything else (truncated, garbage)."""
    try:
        obj = json.loads(line, object_pairs_hook=_merge_duplicates)
    except (ValueError, RecursionError):
        raise TraceOutputError(f"not JSON: {line[:60]!r}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise TraceOutputError(f"not a bpftrace record: {line[:60]!r}")
    kind, data = obj["type"], obj.get("data")
    if kind in ("map", "hist"):
        if not isinstance(data, dict) or len(data) != 1:
            raise TraceOutputError(f"a {kind} record without one map")
        (name, values), = data.items()
        if not isinstance(name, str) or not name.startswith("@"):
            raise TraceOutputError(f"a {kind} record with a bad map name")
        if not isinstance(values, dict):
            # An empty map may print as a bare value in some versions; it holds nothing.
            values = {}
        if kind == "map":
            return MapRecord(name[1:], {str(k): _int(v) for k, v in values.items()})
        return HistRecord(name[1:], {str(k): _hist(v) for k, v in values.items()})
    if kind == "printf":
        if not isinstance(data, str):
            raise TraceOutputError("a printf record without text")
        parts = data.split()
        if len(parts) == 2 and parts[0] == TICK:
            try:
                return TickRecord(int(parts[1]))
            except ValueError:
                raise TraceOutputError(f"a bad tick: {data[:60]!r}") from None
        return InfoRecord("printf", data)
    return InfoRecord(kind, json.dumps(data)[:200])


@dataclass(frozen=True)
class TraceFrame:
    """The maps printed before one tick."""

    ns: int
    maps: Mapping[str, Mapping[str, int]]
    hists: Mapping[str, Mapping[str, Log2Hist]]


@dataclass
class FrameBuilder:
    """Collects records into frames; bad lines are counted and skipped, never fatal."""

    maps: dict[str, Mapping[str, int]] = field(default_factory=dict)
    hists: dict[str, Mapping[str, Log2Hist]] = field(default_factory=dict)
    last_maps: dict[str, Mapping[str, int]] = field(default_factory=dict)
    last_hists: dict[str, Mapping[str, Log2Hist]] = field(default_factory=dict)
    bad_lines: int = 0
    last_bad: str = ""
    lost_events: int = 0  # records saying bpftrace dropped output events

    def feed(self, line: str) -> TraceFrame | None:
        line = line.strip()
        if not line:
            return None
        try:
            rec = parse_line(line)
        except TraceOutputError as e:
            self.bad_lines += 1
            self.last_bad = str(e)
            return None
        if isinstance(rec, MapRecord):
            self.maps[rec.name] = rec.values
        elif isinstance(rec, HistRecord):
            self.hists[rec.name] = rec.values
        elif isinstance(rec, TickRecord):
            # A cumulative map whose print was lost (bpftrace drops events when its reader falls behind) keeps
            # its last value, so the next interval's difference is still right.
            maps = {**{m: v for m, v in self.last_maps.items() if m in CUMULATIVE_MAPS}, **self.maps}
            hists = {**{h: v for h, v in self.last_hists.items() if h in CUMULATIVE_MAPS}, **self.hists}
            frame = TraceFrame(rec.ns, maps, hists)
            self.last_maps, self.last_hists = maps, hists
            self.maps, self.hists = {}, {}
            return frame
        elif rec.kind == "lost_events":
            self.lost_events += 1
        return None


def op_of(rwbs: str) -> str:
    """The operation of a request from the kernel's rwbs text (blk_fill_rwbs: F=preflush, then the op)."""
    for ch in rwbs:
        if ch == "R":
            return "read"
        if ch == "W":
            return "write"
        if ch == "D":
            return "discard"
    if "F" in rwbs:
        return "flush"
    return "other"


def split_key(key: str) -> tuple[int, str] | None:
    """'7340072,1,WS' (dev, cpu, rest) -> (7340072, 'WS'), the CPU dropped; None when malformed.

    The script keys its counters by CPU too, so that CPUs never update one hash bucket (its lock would
    bounce between them at every IO); the parser adds the CPUs up.
    """
    parts = key.split(",", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    try:
        return int(parts[0]), parts[2]
    except ValueError:
        return None


def dev_numbers(dev: int) -> tuple[int, int]:
    """The kernel's internal dev_t (tracepoints) -> (major, minor)."""
    return dev >> 20, dev & 0xFFFFF


def kernel_dev(major: int, minor: int) -> int:
    return (major << 20) | minor


@dataclass(frozen=True)
class OpLatency:
    """One operation on one device over an interval. Times are log2 histograms in µs."""

    ios: int
    bytes: int  # data moved: 0 for discards and flushes
    sched: Log2Hist  # insert -> issue (0 for requests issued without an insert)
    device: Log2Hist  # issue -> complete
    total: Log2Hist  # accounting start (what await measures from) -> complete
    total_ns: int  # exact sum of total time, for the mean (compare with await)
    extent_bytes: int = 0  # the range discards covered (iostat's dkB): no data moved

    def to_json(self) -> dict[str, Any]:
        return {"ios": self.ios, "bytes": self.bytes, "extent_bytes": self.extent_bytes,
                "sched_us": self.sched.to_json(),
                "device_us": self.device.to_json(), "total_us": self.total.to_json(),
                "total_mean_us": None if not self.total.total else round(self.total_ns / self.total.total / 1e3, 1)}


@dataclass(frozen=True)
class DeviceLatency:
    name: str
    ops: Mapping[str, OpLatency]

    def _sum(self, attr: str) -> Log2Hist:
        return merge([getattr(o, attr) for o in self.ops.values()])

    @property
    def ios(self) -> int:
        return sum(o.ios for o in self.ops.values())

    @property
    def bytes(self) -> int:
        """Data moved (reads, writes and other data ops); discards and flushes move none."""
        return sum(o.bytes for o in self.ops.values())

    @property
    def sched(self) -> Log2Hist:
        return self._sum("sched")

    @property
    def device(self) -> Log2Hist:
        return self._sum("device")

    @property
    def total(self) -> Log2Hist:
        return self._sum("total")

    @property
    def total_ns(self) -> int:
        return sum(o.total_ns for o in self.ops.values())

    def to_json(self) -> dict[str, Any]:
        n = self.total.total
        return {"ios": self.ios, "bytes": self.bytes, "sched_us": self.sched.to_json(),
                "device_us": self.device.to_json(), "total_us": self.total.to_json(),
                "total_mean_us": round(self.total_ns / n / 1e3, 1) if n else None,
                "ops": {op: o.to_json() for op, o in self.ops.items()}}


@dataclass(frozen=True)
class ProcessIO:
    """IO one process submitted to one device over an interval (pid and command at submission)."""

    device: str
    pid: int
    comm: str
    ios: int
    bytes: int
    total: Log2Hist

    def to_json(self, interval: float) -> dict[str, Any]:
        return {"device": self.device, "pid": self.pid, "comm": self.comm, "ios": self.ios, "bytes": self.bytes,
                "iops": round(self.ios / interval, 1), "mb_s": round(self.bytes / interval / 1e6, 3),
                "p99_us": _r(self.total.percentile(0.99))}


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 1)


@dataclass(frozen=True)
class TraceSample:
    """One interval of block-layer tracing: per device (by name) and per process."""

    mono: float  # CLOCK_MONOTONIC seconds at the end of the interval
    interval: float  # seconds
    devices: Mapping[str, DeviceLatency]
    processes: tuple[ProcessIO, ...] = ()
    tracer_cpu: float | None = None  # the tracer process's own CPU over the interval, % of one CPU
    # Requests the tracer could not time, all devices, this interval. bpftrace: those the periodic reset of its
    # per-request maps dropped (stale ones whose completion was missed, and those in flight at that instant).
    # The CO-RE program: completions seen without their request, and requests its map refused.
    dropped_requests: int = 0
    tracer: str = "bpftrace"  # which tracer ran: "libbpf" (the CO-RE program) or "bpftrace"
    # CPU the tracer spent per request issued on the machine (its BPF programs' run time and its process's CPU),
    # µs; None where it is not measured (bpftrace: its programs' run time is not known).
    cost_us_per_io: float | None = None

    def cost_text(self) -> str:
        """Which tracer runs and what it costs, for a header: "CO-RE tracer 1.3 µs/IO", "bpftrace 0.4% of a CPU"
        (bpftrace's process alone: the time its programs run in the kernel is not known)."""
        if self.tracer == "libbpf":
            return "CO-RE tracer" + ("" if self.cost_us_per_io is None else f" {self.cost_us_per_io:.1f} µs/IO")
        return "bpftrace" + ("" if self.tracer_cpu is None else f" {self.tracer_cpu:.1f}% of a CPU")

    def to_json(self, wall_time: float, only: set[str] | None = None) -> dict[str, Any]:
        return {"time": round(wall_time, 3), "interval": round(self.interval, 4), "tracer": self.tracer,
                "tracer_cpu": self.tracer_cpu, "tracer_us_per_io": self.cost_us_per_io,
                "dropped_requests": self.dropped_requests,
                "devices": {n: d.to_json() for n, d in sorted(self.devices.items()) if only is None or n in only}}


def device_name(dev: int, names: Mapping[int, str]) -> str:
    """The whole disk's name, or MAJOR:MINOR for a device not (or no longer) in /sys/block."""
    if dev in names:
        return names[dev]
    major, minor = dev_numbers(dev)
    return f"{major}:{minor}"


def _delta(cur: int, prev: int) -> int:
    return cur - prev if cur >= prev else cur  # went down: the map was reset


@dataclass
class _OpSums:
    """One (device, operation)'s sums over an interval: counts (ios, bytes, total_ns) and histograms apart."""

    counts: dict[str, int] = field(default_factory=dict)
    hists: dict[str, Log2Hist] = field(default_factory=dict)


def interval_sample(prev: TraceFrame, cur: TraceFrame, names: Mapping[int, str]) -> TraceSample | None:
    """The interval between two frames; None when the ticks are not in order."""
    if cur.ns <= prev.ns:
        return None
    acc: dict[tuple[int, str], _OpSums] = {}

    def slot(key: str) -> _OpSums | None:
        parsed = split_key(key)
        if parsed is None:
            return None
        dev, rwbs = parsed
        return acc.setdefault((dev, op_of(rwbs)), _OpSums())

    for m in ("ios", "bytes", "total_ns"):
        before = prev.maps.get(m, {})
        for key, value in cur.maps.get(m, {}).items():
            s = slot(key)
            if s is not None:
                s.counts[m] = s.counts.get(m, 0) + _delta(value, before.get(key, 0))
    for h in ("sched", "device", "total"):
        before_h = prev.hists.get(h, {})
        for key, hist in cur.hists.get(h, {}).items():
            s = slot(key)
            if s is not None:
                d = hist.since(before_h.get(key, Log2Hist()))
                s.hists[h] = s.hists.get(h, Log2Hist()) + d
    per_dev: dict[str, dict[str, OpLatency]] = {}
    for (dev, op), s in acc.items():
        size = s.counts.get("bytes", 0)
        moved = 0 if op in NO_DATA_OPS else size
        o = OpLatency(ios=s.counts.get("ios", 0), bytes=moved,
                      sched=s.hists.get("sched", Log2Hist()), device=s.hists.get("device", Log2Hist()),
                      total=s.hists.get("total", Log2Hist()), total_ns=s.counts.get("total_ns", 0),
                      extent_bytes=size - moved)
        if o.ios or o.sched.total or o.device.total or o.total.total:
            per_dev.setdefault(device_name(dev, names), {})[op] = o
    devices = {n: DeviceLatency(n, dict(sorted(ops.items(), key=lambda kv: OPS.index(kv[0]))))
               for n, ops in per_dev.items()}
    return TraceSample(cur.ns / 1e9, (cur.ns - prev.ns) / 1e9, devices, _processes(cur, names),
                       dropped_requests=dropped_requests(cur))


def dropped_requests(frame: TraceFrame) -> int:
    """Requests a clear of the idle request-map set dropped: entries added to its @start, less those deleted
    while it was current and those found while it was idle (counters printed per CPU just before the clear);
    0 in a frame without a clear."""
    out = 0
    for n in ("0", "1"):
        added = frame.maps.get(f"sadd{n}")
        if added:
            done = sum(frame.maps.get(f"sdel{n}", {}).values()) + sum(frame.maps.get(f"shit{n}", {}).values())
            out += max(0, sum(added.values()) - done)
    return out


def _processes(cur: TraceFrame, names: Mapping[int, str]) -> tuple[ProcessIO, ...]:
    comm_by_pid = _comm_map(cur)
    acc: dict[tuple[int, int], tuple[int, int, Log2Hist]] = {}
    lat = cur.hists.get("plat", {})
    byts = cur.maps.get("pbytes", {})
    for key, ios in cur.maps.get("pios", {}).items():
        parsed = split_key(key)
        if parsed is None or not parsed[1].isdigit():
            continue
        k = (parsed[0], int(parsed[1]))
        n, b, h = acc.get(k, (0, 0, Log2Hist()))
        acc[k] = (n + ios, b + byts.get(key, 0), h + lat.get(key, Log2Hist()))
    out = [ProcessIO(device_name(dev, names), pid, comm_by_pid.get(pid, "?"), n, b, h)
           for (dev, pid), (n, b, h) in acc.items()]
    out.sort(key=lambda p: (-p.ios, p.pid))
    return tuple(out)


def _comm_map(cur: TraceFrame) -> dict[int, str]:
    out: dict[int, str] = {}
    for key in cur.maps.get("comm", {}):
        # @comm[pid, cpu, comm] = count(): the command (which may hold a comma) is the rest of the key.
        parsed = split_key(key)
        if parsed is not None:
            out[parsed[0]] = parsed[1]
    return out
