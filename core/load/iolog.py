"""A capture: what a device did, request by request, as fio's iolog version 3 (which fio replays), with a small
metadata file beside it (``FILE.meta.json``, a ``CaptureDoc``).

The iolog holds one line per request, ``T /dev/NAME ACTION OFFSET LENGTH`` (T in microseconds from the start,
ACTION read, write, sync or trim), between fio's file lines (add, open, close). The metadata says which device,
kernel and scheduler it came from, how long it ran, what it holds (counts and bytes, checked on reading), what
was lost, and the load over time (requests, bytes and depth per interval), which the iolog cannot hold.

A command's capture (`capture --cmd`) may span several devices: fio's iolog v3 names each as a file (all added and
opened first, in the metadata's ``devices`` order, each closed at the end) and each line names its own. Replayed,
they all go to one target, laid end to end in that order: a device's offsets start at ``base``, the end of the one
before rounded up to a MiB (``layout``); ``max_extent`` is where the last ends, which a target must hold, else
``--replay-fit`` folds the whole layout into it modulo its size (``fitted``).

Writing (``CaptureWriter``) and checking (``check_iolog``) are pure: the tracer feeds the one, the replay and
``report`` read through the other. A capture is outside input when read back: every line is checked (the
header, the one device path, the actions, offsets and lengths within the device, times that never go back, the
counts the metadata gives) before fio sees a copy iosched writes itself.
"""

from __future__ import annotations

import bisect
import json
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Annotated, Literal

from iosched.core.base.decode import decode
from iosched.core.base.errors import BadInput
from iosched.core.base.infile import open_regular, read_bounded
from iosched.core.base.outfile import create_new, discard, write_file
from iosched.core.base.schema import Keywords
from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.kernel.sysfs import DEVICE_NAME

HEADER = "fio version 3 iolog"
CAPTURE_VERSION: Literal[1] = 1
META_SUFFIX = ".meta.json"
# The block tracer's operations (enum bt_op) as fio's iolog names them; other requests are counted, not written.
ACTIONS = {0: "read", 1: "write", 2: "sync", 3: "trim"}
READ, WRITE, FLUSH, DISCARD = 0, 1, 2, 3
MAX_REQUESTS = 100_000_000  # what a capture may hold, and a reader accept
MAX_LINE = 160  # bytes: a request's line is about 40
MAX_META = 1 << 20
MAX_SERIES = 1200  # points of the load over time: intervals widen to keep within it
REORDER_S = 1.0  # records come in issue order; the iolog is in order of when requests began, within this window
SECTOR = 512
MAX_DEVICES = 64  # devices one capture may name
LAYOUT_ALIGN = 1 << 20  # where each device of a capture starts on a replay's one target


class BadCapture(BadInput):
    """A capture file iosched cannot use; the sentence names the file and, for the iolog, the line."""


@dataclass(frozen=True, kw_only=True)
class SeriesDoc:
    """The load over time, per interval: what an iolog cannot hold (the depth) and what a chart shows."""

    interval_s: Annotated[float, Keywords(exclusiveMinimum=0)]
    iops: list[Annotated[float, Keywords(minimum=0)]]
    mb_s: list[Annotated[float, Keywords(minimum=0)]]
    depth: list[Annotated[float, Keywords(minimum=0)]] = field(
        metadata={"doc": "the mean number of requests begun and not completed, at each request's issue"})


Ended = Literal["duration", "interrupted", "max-size", "stopped", "command"]
Timestamps = Literal["begin", "issue", "submit"]


@dataclass(frozen=True, kw_only=True)
class CapturedDeviceDoc:
    """One device of a capture that spans several, and where a replay lays it on its one target."""

    path: str = field(metadata={"doc": "the device as the iolog names it: /dev/NAME"})
    device: DeviceDoc
    base: Annotated[int, Keywords(minimum=0)] = field(
        metadata={"doc": "bytes: where its offsets start on a replay's target (the device before it ends there, "
                         "rounded up to a MiB)"})
    max_extent: Annotated[int, Keywords(minimum=0)] = field(metadata={"doc": "bytes: its largest offset + length"})
    requests: Annotated[int, Keywords(minimum=0)] = field(metadata={"doc": "lines of IO naming it"})
    read_bytes: Annotated[int, Keywords(minimum=0)]
    write_bytes: Annotated[int, Keywords(minimum=0)]


@dataclass(frozen=True, kw_only=True)
class CommandDoc:
    """The command a capture recorded (`iosched capture --cmd`): only the IO its processes submitted themselves."""

    cmd: str = field(metadata={"doc": "the shell command line, as given"})
    uid: Annotated[int, Keywords(minimum=0)] = field(metadata={"doc": "the user it ran as (sudo's invoking user)"})
    gid: Annotated[int, Keywords(minimum=0)]
    cold: bool = field(metadata={"doc": "the page cache was dropped before it started"})
    wall_s: Annotated[float, Keywords(minimum=0)] = field(metadata={"doc": "from its start to its end"})
    exit_status: Annotated[int, Keywords(minimum=0, maximum=255)] = field(
        metadata={"doc": "as a shell reports it: 128 + N for a command a signal N ended"})
    ios: Annotated[int, Keywords(minimum=0)] = field(
        metadata={"doc": "its IO the tracer saw: the iolog's lines, requests of other kinds and those lost"})
    accounted_read_bytes: Annotated[int, Keywords(minimum=0)] = field(
        metadata={"doc": "what the kernel's IO accounting charged to the processes it waited for: bytes they had "
                         "read from storage (a network filesystem's included)"})
    accounted_write_bytes: Annotated[int, Keywords(minimum=0)] = field(
        metadata={"doc": "bytes they wrote or dirtied in the page cache; most reach the disk later from the "
                         "kernel's writeback threads, which the capture does not attribute to the command"})


@dataclass(frozen=True, kw_only=True)
class CaptureDoc:
    """A capture's metadata (`iosched capture DEV -o FILE` writes FILE and FILE.meta.json)."""

    version: Literal[1]
    kind: Literal["capture"]
    iolog: str = field(metadata={"doc": "the iolog's file name, in the same directory"})
    device: DeviceDoc
    path: str = field(metadata={"doc": "the device as the iolog names it: /dev/NAME"})
    kernel: str
    scheduler: str | None
    started: str = field(metadata={"doc": "wall-clock start, ISO 8601"})
    duration_s: Annotated[float, Keywords(minimum=0)]
    ended: Ended
    timestamps: Timestamps = field(
        metadata={"doc": "begin: when each request began (block_io_start); issue: when it went to the driver"})
    requests: Annotated[int, Keywords(minimum=0)] = field(metadata={"doc": "lines of IO in the iolog"})
    reads: Annotated[int, Keywords(minimum=0)]
    writes: Annotated[int, Keywords(minimum=0)]
    flushes: Annotated[int, Keywords(minimum=0)]
    discards: Annotated[int, Keywords(minimum=0)]
    read_bytes: Annotated[int, Keywords(minimum=0)]
    write_bytes: Annotated[int, Keywords(minimum=0)]
    discard_bytes: Annotated[int, Keywords(minimum=0)]
    other: Annotated[int, Keywords(minimum=0)] = field(metadata={"doc": "requests of other kinds: left out"})
    lost: Annotated[int, Keywords(minimum=0)] = field(
        metadata={"doc": "requests the tracer's ring buffer had no room for: not in the iolog"})
    untracked: Annotated[int, Keywords(minimum=0)] = field(
        metadata={"doc": "requests the tracer's map refused: written, but outside the depth"})
    max_extent: Annotated[int, Keywords(minimum=0)] = field(metadata={"doc": "bytes: the largest offset + length"})
    depth_p50: Annotated[int, Keywords(minimum=0)]
    depth_p95: Annotated[int, Keywords(minimum=0)]
    depth_max: Annotated[int, Keywords(minimum=0)]
    series: SeriesDoc
    devices: list[CapturedDeviceDoc] | None = field(
        default=None, metadata={"item": "device",
                                "doc": "a command's capture: every device its lines name, the first the one above; "
                                       "max_extent is then where the last ends on a replay's one target"})
    command: CommandDoc | None = field(default=None, metadata={"doc": "a command's capture: what ran"})

    @property
    def has_writes(self) -> bool:
        """Whether replaying it changes the target's data (writes or discards)."""
        return self.writes > 0 or self.discards > 0

    @property
    def files(self) -> list[CapturedDeviceDoc]:
        """The devices its lines name, in order, with where each is laid on a replay's target."""
        if self.devices is not None:
            return self.devices
        return [CapturedDeviceDoc(path=self.path, device=self.device, base=0, max_extent=self.max_extent,
                                  requests=self.requests, read_bytes=self.read_bytes, write_bytes=self.write_bytes)]


def layout(extents: list[int]) -> list[int]:
    """Where each device starts on one target: the first at 0, each next where the one before ends, rounded up to
    LAYOUT_ALIGN (so alignment and sequential runs survive, and devices never overlap)."""
    bases, at = [], 0
    for extent in extents:
        bases.append(at)
        at = -(-(at + extent) // LAYOUT_ALIGN) * LAYOUT_ALIGN
    return bases


@dataclass(frozen=True)
class Capture:
    """A capture's two files, its metadata read and checked (the iolog is checked as it is read)."""

    iolog: Path
    meta: CaptureDoc

    @property
    def name(self) -> str:
        return self.iolog.name


def meta_path(iolog: str | Path) -> Path:
    return Path(str(iolog) + META_SUFFIX)


def iolog_path(path: str | Path) -> Path:
    """The iolog a user names, by itself or by its metadata file."""
    p = str(path)
    return Path(p[: -len(META_SUFFIX)]) if p.endswith(META_SUFFIX) else Path(p)


def is_capture(path: str | Path) -> bool:
    """Whether ``path`` names a capture (its iolog with metadata beside it, or the metadata file)."""
    return meta_path(iolog_path(path)).is_file()


def read_capture(path: str | Path) -> Capture:
    """The capture at ``path`` (its iolog or its metadata file), metadata checked; BadCapture says why not."""
    log = iolog_path(path)
    meta = meta_path(log)
    if not meta.exists():
        raise BadCapture(f"{log} has no metadata beside it ({meta.name}): not a capture iosched wrote")
    try:
        raw = read_bounded(meta, MAX_META, "capture metadata")
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise BadCapture(f"{meta} is not JSON: not a capture's metadata ({str(e)[:60]})") from None
    except RecursionError:
        raise BadCapture(f"{meta} is not a capture's metadata: it nests too deeply") from None
    except BadInput as e:
        raise BadCapture(str(e)) from None
    meta_doc = decode(CaptureDoc, doc, where=str(meta))
    problems = _meta_problems(meta_doc, log)
    if problems:
        raise BadCapture(f"{meta}: {problems}")
    return Capture(log, meta_doc)


def _meta_problems(d: CaptureDoc, log: Path) -> str:
    if d.iolog != log.name:
        return f"it describes {d.iolog[:60]!r}, not {log.name}"
    if not DEVICE_NAME.fullmatch(d.device.name) or d.path != f"/dev/{d.device.name}":
        return f"its device path {d.path[:60]!r} is not /dev/ and its device's name"
    if d.requests != d.reads + d.writes + d.flushes + d.discards:
        return "its request count is not the sum of its reads, writes, flushes and discards"
    if d.requests > MAX_REQUESTS:
        return f"it holds more than {MAX_REQUESTS} requests"
    if d.devices is not None:
        return _devices_problems(d, d.devices)
    if d.max_extent > d.device.size_bytes:
        return f"its requests reach {d.max_extent} bytes, past its device's {d.device.size_bytes}"
    return _series_problems(d)


def _series_problems(d: CaptureDoc) -> str:
    if not (d.depth_p50 <= d.depth_p95 <= d.depth_max):
        return "its depth percentiles are out of order"
    s = d.series
    if not (len(s.iops) == len(s.mb_s) == len(s.depth) <= MAX_SERIES):
        return f"its series differ in length or hold more than {MAX_SERIES} points"
    return ""


def _devices_problems(d: CaptureDoc, devices: list[CapturedDeviceDoc]) -> str:
    if not 1 <= len(devices) <= MAX_DEVICES:
        return f"it names {len(devices)} devices (1 to {MAX_DEVICES})"
    if devices[0].path != d.path or devices[0].device != d.device:
        return "its first device is not its device"
    if len({f.path for f in devices}) != len(devices):
        return "it names a device twice"
    for i, f in enumerate(devices, 1):
        if not DEVICE_NAME.fullmatch(f.device.name) or f.path != f"/dev/{f.device.name}":
            return f"its device {i}'s path {f.path[:60]!r} is not /dev/ and that device's name"
        if f.max_extent > f.device.size_bytes:
            return f"its requests on {f.path} reach {f.max_extent} bytes, past that device's {f.device.size_bytes}"
    if [f.base for f in devices] != layout([f.max_extent for f in devices]):
        return "its devices are not laid end to end, each from the MiB after the one before"
    if d.max_extent != devices[-1].base + devices[-1].max_extent:
        return "its max_extent is not where its last device ends"
    if sum(f.requests for f in devices) != d.requests:
        return "its devices' request counts do not add up to its own"
    if (sum(f.read_bytes for f in devices), sum(f.write_bytes for f in devices)) != (d.read_bytes, d.write_bytes):
        return "its devices' bytes do not add up to its own"
    return _series_problems(d)


# Writing ---------------------------------------------------------------------------------------------------


@dataclass
class _Series:
    """Requests, bytes and depth per interval; intervals double (points merged in pairs) to stay within bounds."""

    interval_us: int = 100_000
    ios: list[int] = field(default_factory=list)
    nbytes: list[int] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)  # summed, over ios

    @property
    def interval_s(self) -> float:
        return self.interval_us / 1e6

    def add(self, t_us: int, nbytes: int, depth: int) -> None:
        i = t_us // self.interval_us
        while i >= MAX_SERIES:
            self._widen()
            i = t_us // self.interval_us
        while len(self.ios) <= i:
            self.ios.append(0)
            self.nbytes.append(0)
            self.depth.append(0)
        self.ios[i] += 1
        self.nbytes[i] += nbytes
        self.depth[i] += depth

    def _widen(self) -> None:
        self.interval_us *= 2
        for xs in (self.ios, self.nbytes, self.depth):
            xs[:] = [sum(xs[k:k + 2]) for k in range(0, len(xs), 2)]

    def doc(self, duration_s: float) -> SeriesDoc:
        n = max(len(self.ios), min(math.ceil(duration_s / self.interval_s), MAX_SERIES))
        ios = self.ios + [0] * (n - len(self.ios))
        nbytes = self.nbytes + [0] * (n - len(self.nbytes))
        depth = self.depth + [0] * (n - len(self.depth))
        return SeriesDoc(interval_s=self.interval_s, iops=[round(x / self.interval_s, 3) for x in ios],
                         mb_s=[round(b / self.interval_s / 1e6, 3) for b in nbytes],
                         depth=[round(d / x, 3) if x else 0.0 for d, x in zip(depth, ios, strict=True)])


@dataclass
class _File:
    """One device a capture's lines name, and what they hold."""

    path: str
    requests: int = 0
    read_bytes: int = 0
    write_bytes: int = 0
    extent: int = 0


Record = tuple[int, int, int, int, int, int]  # time ns, op, sector, bytes, depth, dev_t (0: the one device)


class CaptureWriter:
    """Writes records (time ns, op, sector, bytes, depth, and for several devices dev_t) as iolog lines, in order
    of the time each request began: the tracer sees them at issue, after the scheduler has reordered them, so they
    wait ``reorder_s`` before they are written (sorted in batches, ``flush``); one later than that is written at
    the time of the line before it (counted in ``late``).

    ``t0`` is the start (ns, CLOCK_MONOTONIC). One device (``path``): ``out`` is the open iolog, its header written
    at once. Several (``name_of``, a command's capture): each record's dev_t is named by ``name_of`` (its /dev
    path; None for a device gone, its records counted in ``unnamed``); ``out`` takes the lines as they come, and
    ``finish`` writes the whole iolog into ``dest`` once every device is known, and records that began before
    ``t0`` are left out (``early``). Per request this is a few microseconds of Python: records are parsed in
    batches and sorted once per flush (mostly in order already).

    ``limit``: the iolog's bytes at most, exactly, the lines ``finish`` adds included. A line that would pass it is
    not written, and neither is any after it (``over`` counts them, ``full`` says so): a capture stops there, a
    command's capture is refused (``size`` says what the whole iolog would take)."""

    def __init__(self, out: IO[str], path: str | None, t0: int, reorder_s: float = REORDER_S,
                 name_of: Callable[[int], str | None] | None = None, limit: int | None = None) -> None:
        self.out = out
        self.limit = limit
        self.over = 0  # records not written: the iolog would have passed its limit
        self.t0 = t0
        self.window = int(reorder_s * 1e9)
        self._pending: list[Record] = []
        self._last_us = 0
        self.late = 0
        self.early = 0
        self.unnamed = 0
        self.counts = [0] * 5
        self.op_bytes = [0] * 5
        self.depths: dict[int, int] = {}
        self.series = _Series()
        self.written = 0
        self.files: list[_File] = []
        self._index: dict[int, int | None] = {}
        self._name_of = name_of
        if name_of is None:
            if path is None:
                raise ValueError("a capture of one device names it")
            self.files.append(_File(path))
            self._index[0] = 0
            self._line(f"{HEADER}\n0 {path} add\n0 {path} open\n")

    @property
    def path(self) -> str:
        """The device, or the first of several (the one most bytes went to, once finished)."""
        return self.files[0].path

    @property
    def max_extent(self) -> int:
        """Where the requests end: on the one device, or on a replay's target with several laid end to end."""
        if len(self.files) == 1:
            return self.files[0].extent
        bases = layout([f.extent for f in self.files])
        return bases[-1] + self.files[-1].extent if bases else 0

    @property
    def full(self) -> bool:
        """Whether a line was left out at the limit."""
        return self.over > 0

    def _line(self, text: str) -> None:
        self.out.write(text)
        self.written += len(text)

    def _framing(self, end_us: int | None = None) -> int:
        """The bytes ``finish`` writes besides the lines so far (with ``end_us`` unknown, as many as it may take)."""
        end = len(str(end_us)) if end_us is not None else 20  # a 64-bit count of microseconds
        close = sum(end + len(f" {f.path} close\n") for f in self.files)
        if self._name_of is None:
            return close  # the header and the add and open lines are written already
        return len(HEADER) + 1 + sum(len(f"0 {f.path} add\n") + len(f"0 {f.path} open\n") for f in self.files) + close

    def end_us(self, end_ns: int) -> int:
        """The iolog's close time for an end at ``end_ns``: never before its last line."""
        return max((end_ns - self.t0) // 1000, self._last_us)

    def size(self, end_us: int | None = None) -> int:
        """The whole iolog's bytes once finished (with ``end_us`` unknown, at most)."""
        return self.written + self._framing(end_us)

    def add(self, t_ns: int, op: int, sector: int, nbytes: int, depth: int, dev: int = 0) -> None:
        self._pending.append((t_ns, op, sector, nbytes, depth, dev))

    def add_lines(self, lines: list[bytes]) -> None:
        """The loader's record lines (``T OP SECTOR BYTES DEPTH``, and ``DEV`` for several devices); ValueError for
        one that is not."""
        pend = self._pending
        want = 5 if self._name_of is None else 6
        for line in lines:
            a = line.split()
            if len(a) != want:
                raise ValueError(f"a record of {len(a)} fields")
            pend.append((int(a[0]), int(a[1]), int(a[2]), int(a[3]), int(a[4]), int(a[5]) if want == 6 else 0))

    def _file_of(self, dev: int) -> int | None:
        """The index of the device ``dev`` among the capture's files; None when it cannot be named."""
        if dev in self._index:
            return self._index[dev]
        path = self._name_of(dev) if self._name_of is not None else None
        known = next((k for k, f in enumerate(self.files) if f.path == path), None)
        if path is not None and known is None and len(self.files) < MAX_DEVICES:
            self.files.append(_File(path))
            known = len(self.files) - 1
        self._index[dev] = known
        return known

    def flush(self, final: bool = False, now_ns: int | None = None) -> None:
        """Write the records that began more than the window before the newest, or before ``now_ns`` (the tracer's
        clock: a burst then quiet is written within the window); all of them when final."""
        pend = self._pending
        if not pend:
            return
        pend.sort()
        newest = max(pend[-1][0], now_ns or 0)
        cut = len(pend) if final else bisect.bisect_left(pend, (newest - self.window,))
        if not cut:
            return
        ready, self._pending = pend[:cut], pend[cut:]
        t0, last, late = self.t0, self._last_us, 0
        skip_early = self._name_of is not None
        counts, op_bytes, depths, series, files = self.counts, self.op_bytes, self.depths, self.series, self.files
        index = self._index
        out: list[str] = []
        # Bytes the lines may still take: the limit less the iolog so far and what finish adds (again when a
        # device is added: its own lines). None: no limit.
        room = None if self.limit is None else self.limit - self.size()
        for t_ns, op, sector, nbytes, depth, dev in ready:
            if t_ns < t0 and skip_early:
                self.early += 1
                continue
            if op > DISCARD:
                counts[4] += 1
                continue
            if dev in index:
                k = index[dev]
            else:
                k = self._file_of(dev)
                if room is not None and self.limit is not None:
                    room = self.limit - self.size() - sum(map(len, out))
            if k is None:
                self.unnamed += 1
                continue
            f = files[k]
            us = (t_ns - t0) // 1000
            behind = us < last
            if behind:
                us = last
            if room is not None:  # the line's own bytes, before anything is counted: one past the limit is not
                need = len(f"{us} {f.path} ") + (len("sync 0 0\n") if op == FLUSH else
                                                  len(f"{ACTIONS[op]} {sector * SECTOR} {nbytes}\n"))
                if self.over or need > room:
                    self.over += 1
                    continue
                room -= need
            late += behind
            last = us
            counts[op] += 1
            f.requests += 1
            depths[depth] = depths.get(depth, 0) + 1
            if op == FLUSH:
                out.append(f"{us} {f.path} sync 0 0\n")
                series.add(us, 0, depth)
                continue
            op_bytes[op] += nbytes
            if op == READ:
                f.read_bytes += nbytes
            elif op == WRITE:
                f.write_bytes += nbytes
            end = sector * SECTOR + nbytes
            if end > f.extent:
                f.extent = end
            series.add(us, nbytes if op != DISCARD else 0, depth)
            out.append(f"{us} {f.path} {ACTIONS[op]} {sector * SECTOR} {nbytes}\n")
        self._last_us, self.late = last, self.late + late
        self._line("".join(out))

    @property
    def requests(self) -> int:
        return sum(self.counts[:4])

    @property
    def pending(self) -> list[Record]:
        return self._pending

    def finish(self, end_ns: int, dest: IO[str] | None = None) -> int:
        """Write what waits and the close lines (with several devices: the whole iolog into ``dest``, the device
        most bytes went to first); returns the duration in microseconds."""
        self.flush(final=True)
        end_us = self.end_us(end_ns)
        if self._name_of is None:
            self._line(f"{end_us} {self.path} close\n")
            return end_us
        if dest is None or not self.files:
            raise ValueError("a capture of several devices is written whole into its iolog, and names one at least")
        self.files.sort(key=lambda f: -(f.read_bytes + f.write_bytes))  # stable: first seen first among equals
        paths = [f.path for f in self.files]
        dest.write(HEADER + "\n" + "".join(f"0 {p} add\n" for p in paths) + "".join(f"0 {p} open\n" for p in paths))
        self.out.flush()
        self.out.seek(0)
        while chunk := self.out.read(1 << 20):
            dest.write(chunk)
        dest.write("".join(f"{end_us} {p} close\n" for p in paths))
        return end_us

    def percentile(self, q: float) -> int:
        total = sum(self.depths.values())
        if not total:
            return 0
        need, seen = q * total, 0
        for d in sorted(self.depths):
            seen += self.depths[d]
            if seen >= need:
                return d
        return max(self.depths)

    def meta(self, *, iolog: str, device: DeviceDoc | None = None, kernel: str, started: str, duration_s: float,
             ended: Ended, timestamps: Timestamps, lost: int, untracked: int,
             devices: dict[str, DeviceDoc] | None = None, command: CommandDoc | None = None) -> CaptureDoc:
        """The metadata: of the one ``device``, or (several) of each in ``devices`` by path, after ``finish``."""
        c, b = self.counts, self.op_bytes
        files: list[CapturedDeviceDoc] | None = None
        if devices is not None:
            bases = layout([f.extent for f in self.files])
            files = [CapturedDeviceDoc(path=f.path, device=devices[f.path], base=base, max_extent=f.extent,
                                       requests=f.requests, read_bytes=f.read_bytes, write_bytes=f.write_bytes)
                     for f, base in zip(self.files, bases, strict=True)]
            device = files[0].device
        if device is None:
            raise ValueError("a capture's metadata names its device")
        return CaptureDoc(
            version=CAPTURE_VERSION, kind="capture", iolog=iolog, device=device, path=self.path, kernel=kernel,
            scheduler=device.scheduler, started=started, duration_s=round(duration_s, 6), ended=ended,
            timestamps=timestamps, requests=self.requests, reads=c[READ], writes=c[WRITE],
            flushes=c[FLUSH], discards=c[DISCARD], read_bytes=b[READ], write_bytes=b[WRITE],
            discard_bytes=b[DISCARD], other=c[4], lost=lost, untracked=untracked, max_extent=self.max_extent,
            depth_p50=self.percentile(0.5), depth_p95=self.percentile(0.95),
            depth_max=max(self.depths) if self.depths else 0, series=self.series.doc(duration_s),
            devices=files, command=command)


def write_meta(doc: CaptureDoc, iolog: Path) -> Path:
    """The metadata beside its iolog, written whole as a new file (WriteRefused when anything is there by now)."""
    path = meta_path(iolog)
    write_file(path, json.dumps(asdict(doc), indent=1) + "\n", replace=False)
    return path


# Reading ---------------------------------------------------------------------------------------------------


@dataclass
class IologLine:
    """One IO line of a checked iolog: ``offset`` on its device, the capture's ``file``-th (0 for one device)."""

    t_us: int
    action: str
    offset: int
    length: int
    file: int = 0


def _lines(fd: int, log: Path) -> Iterator[tuple[int, bytes]]:
    """The iolog's lines with their numbers, each bounded: a line longer than MAX_LINE is refused."""
    with os.fdopen(fd, "rb") as f:
        n = 0
        while True:
            raw = f.readline(MAX_LINE + 1)
            if not raw:
                return
            n += 1
            if len(raw) > MAX_LINE:
                raise BadCapture(f"{log} line {n}: longer than {MAX_LINE} bytes: not a capture iosched wrote")
            yield n, raw


def _bad(log: Path, n: int, what: str) -> BadCapture:
    return BadCapture(f"{log} line {n}: {what}")


def check_iolog(capture: Capture, on_line: Callable[[IologLine], None] | None = None,
                target: tuple[str, int] | None = None) -> int:
    """Read the whole iolog, checking every line against its metadata (and, given ``target``, a device's name and
    size, against that device's end, each device at its ``base``); ``on_line`` hears each IO line once it is known
    good. Returns the number of IO lines; BadCapture names the first bad line.

    The metadata's ``max_extent`` is what a replay's size check reads, so the lines are held to it (each device's
    to its own): a line past it, or lines that end short of it, make the metadata a lie."""
    meta, log = capture.meta, capture.iolog
    files = meta.files
    paths = [f.path for f in files]
    which = {p: k for k, p in enumerate(paths)}
    many = len(paths)
    extents = [0] * many
    per_file = [[0, 0, 0] for _ in paths]  # requests, read bytes, write bytes
    end_us = math.ceil(meta.duration_s * 1e6) + 1
    last_us = 0
    counts = {"read": 0, "write": 0, "sync": 0, "trim": 0}
    nbytes = {"read": 0, "write": 0, "trim": 0}
    closed = 0
    fd = open_regular(log, "capture (the iolog iosched capture wrote)")
    for n, raw in _lines(fd, log):
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError:
            raise _bad(log, n, "bytes that are not text: not a capture iosched wrote") from None
        if n == 1:
            if text.rstrip("\n") != HEADER:
                raise _bad(log, n, f"expected {HEADER!r}: not a capture iosched wrote")
            continue
        if closed == many:
            raise _bad(log, n, "a line after the close line" + ("s" if many > 1 else ""))
        parts = text.split()
        if not parts or not parts[0].isdigit() or not parts[0].isascii():
            raise _bad(log, n, "expected a time in microseconds first")
        t_us = int(parts[0])
        k = which.get(parts[1]) if len(parts) >= 2 else 0
        if k is None:
            devices = f"device {paths[0]}" if many == 1 else f"devices ({', '.join(paths)})"
            raise _bad(log, n, f"the file {parts[1][:60]!r} is not the capture's {devices}")
        if t_us < last_us:
            raise _bad(log, n, f"time goes back ({t_us} µs after {last_us} µs)")
        if t_us > end_us:
            raise _bad(log, n, f"time {t_us} µs is past the capture's {meta.duration_s:g} s")
        last_us = t_us
        if len(parts) == 3:
            # Every device added, then every one opened, in the metadata's order; at the end each closed.
            if n <= 1 + many:
                want, of = "add", n - 2
            elif n <= 1 + 2 * many:
                want, of = "open", n - 2 - many
            else:
                want, of = "close", closed
            if parts[2] != want or k != of:
                named = f" of {paths[of]}" if many > 1 else ""
                raise _bad(log, n, f"expected the {want} line{named}, found {' '.join(parts[1:])[:80]!r}")
            closed += want == "close"
            continue
        if n <= 1 + 2 * many:
            raise _bad(log, n, "expected fio's add and open lines for the device" + ("s" if many > 1 else ""))
        if closed:
            raise _bad(log, n, "a request among the close lines")
        if len(parts) != 5:
            raise _bad(log, n, "expected TIME FILE ACTION OFFSET LENGTH")
        action = parts[2]
        if action not in counts:
            raise _bad(log, n, f"the action {action[:20]!r} is not read, write, sync or trim")
        if not (parts[3].isdigit() and parts[4].isdigit() and parts[3].isascii() and parts[4].isascii()):
            raise _bad(log, n, "the offset and length must be whole numbers of bytes")
        offset, length = int(parts[3]), int(parts[4])
        f = files[k]
        if action == "sync":
            if offset or length:
                raise _bad(log, n, "a sync has offset 0 and length 0")
        else:
            if length == 0 or offset % SECTOR or length % SECTOR:
                raise _bad(log, n, "offset and length must be whole sectors, the length not 0")
            end = offset + length
            if end > f.device.size_bytes:
                raise _bad(log, n, f"the request ends at byte {end}, past the device's {f.device.size_bytes}")
            if target is not None and f.base + end > target[1]:
                at = f.base + end
                raise _bad(log, n, f"the request ends at byte {at} ({at / 2**30:.2f} GiB), past the end of "
                                   f"{target[0]} ({target[1]} bytes): it cannot be replayed there")
            if end > f.max_extent:
                on = f" on {f.path}" if many > 1 else ""
                raise _bad(log, n, f"the request ends at byte {end}, past the {f.max_extent} bytes its metadata "
                                   f"says its requests{on} reach")
            extents[k] = max(extents[k], end)
            nbytes[action] += length
            if action != "trim":
                per_file[k][1 if action == "read" else 2] += length
        counts[action] += 1
        per_file[k][0] += 1
        if sum(counts.values()) > meta.requests:
            raise _bad(log, n, f"more requests than the metadata's {meta.requests}")
        if on_line is not None:
            on_line(IologLine(t_us, action, offset, length, k))
    if closed < many:
        raise BadCapture(f"{log}: it ends without its close line{'s' if many > 1 else ''}: cut short, not a whole "
                         "capture")
    said = {"read": meta.reads, "write": meta.writes, "sync": meta.flushes, "trim": meta.discards}
    if counts != said:
        raise BadCapture(f"{log}: its lines do not match its metadata ({_mix(counts)} against {_mix(said)})")
    if (nbytes["read"], nbytes["write"], nbytes["trim"]) != (meta.read_bytes, meta.write_bytes, meta.discard_bytes):
        raise BadCapture(f"{log}: its bytes do not match its metadata")
    for f, extent, (requests, read, written) in zip(files, extents, per_file, strict=True):
        on = f" on {f.path}" if many > 1 else ""
        if extent != f.max_extent:
            raise BadCapture(f"{log}: its requests{on} reach byte {extent}, not the {f.max_extent} its metadata says")
        if (requests, read, written) != (f.requests, f.read_bytes, f.write_bytes):
            raise BadCapture(f"{log}: its lines on {f.path} do not match its metadata")
    return sum(counts.values())


def _mix(c: dict[str, int]) -> str:
    return ", ".join(f"{v} {k}" for k, v in c.items())


def fitted(offset: int, length: int, size: int) -> int:
    """``offset`` folded into a device of ``size`` bytes: modulo its size, so a sequential run stays sequential
    and a request keeps its alignment (scaling would turn a run into strides); one that would cross the end
    ends there."""
    align = 4096 if offset % 4096 == 0 and length % 4096 == 0 else SECTOR
    folded = offset % (size // align * align)
    return folded if folded + length <= size else (size - length) // align * align


def copy_for_replay(capture: Capture, dest: Path, target: str, fit_into: int | None = None,
                    target_size: int | None = None) -> int:
    """Check the whole iolog and write the copy fio replays into ``dest``, every request on ``target``: fio never
    reads a file a user gave. A capture of several devices lays them end to end (each from its ``base``).
    ``fit_into``: the target's size, offsets folded into it (asked for: ``--replay-fit``); ``target_size``: its
    size, a line past it refused (when not folded). Returns the IO lines written; BadCapture (``dest`` removed)
    when a line is bad."""
    scale = fit_into is not None and capture.meta.max_extent > fit_into
    within = (target.removeprefix("/dev/"), target_size) if target_size is not None and not scale else None
    bases = [f.base for f in capture.meta.files]
    fd = create_new(dest)
    made = os.fstat(fd)
    with os.fdopen(fd, "w") as out:
        out.write(f"{HEADER}\n0 {target} add\n0 {target} open\n")

        def put(line: IologLine) -> None:
            offset = line.offset + bases[line.file] if line.action != "sync" else 0
            if scale and line.action != "sync":
                assert fit_into is not None
                if line.length > fit_into:
                    raise BadCapture(f"a request of {line.length} bytes cannot fit the target's {fit_into}")
                offset = fitted(offset, line.length, fit_into)
            out.write(f"{line.t_us} {target} {line.action} {offset} {line.length}\n")

        try:
            n = check_iolog(capture, put, within)
        except BaseException:
            out.close()
            discard(dest, made)
            raise
        out.write(f"{math.ceil(capture.meta.duration_s * 1e6)} {target} close\n")
    return n
