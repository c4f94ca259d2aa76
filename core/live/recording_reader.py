"""Reading a recording of any length with bounded memory: one streaming pass builds an index, windows are read
on demand.

A recording's lines are deltas (a disk is written only when its counters changed), so the state at a sample
depends on every line before it. The pass (``scan``) keeps that state and, every ``every`` samples, a
checkpoint: the file offset of the sample's line and the counters and schedulers just before it. A
``Cursor`` starts at the checkpoint at or before the sample wanted and reads on from there, so a view
holds one window (the replay: ``HISTORY_POINTS``), never the whole recording. The checkpoints themselves
are held to a byte budget: past it every other one is dropped and the spacing doubles.

What the file may hold is bounded before it is believed: a line of at most ``MAX_LINE_BYTES``, at most
``MAX_DEVICES`` device names over the whole recording, ``MAX_CPUS`` CPUs a line. The header, setting events and
attached devices are decoded as their declared types (core/live/recording_lines.py, by core/base/decode.py);
the sample lines, millions of them, are checked by hand against the same type (``SampleLine``), counters in C.
Anything else is refused with one sentence that says what the file is not.

One module because the pass that indexes a recording and the cursor that reads its windows share one line
parser and one state (`_State`): split, they would drift apart (~500 lines).
"""

from __future__ import annotations

import json
import math
import os
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

from iosched.core.base.decode import DecodeError, decode
from iosched.core.base.errors import BadInput
from iosched.core.base.infile import open_regular
from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.kernel.procfs import CpuCounters, DiskCounters
from iosched.core.live.recording_lines import DeviceLine, EventLine, HeaderLine, SampleLine
from iosched.core.live.sampler import Rates, Sample, compute_rates

VERSION = 1
MAX_LINE_BYTES = 4 << 20  # a line of 4096 busy disks is about 1 MiB
MAX_DEVICES = 4096  # distinct device names over a whole recording (a large SAN host has a few thousand)
MAX_CPUS = 8193  # "cpu" and cpu0..cpu8191 (the kernel's largest NR_CPUS)
CHECKPOINT_EVERY = 256  # samples between checkpoints at first: a window read parses at most this many extra
CHECKPOINT_BUDGET = 24 << 20  # bytes the checkpoints may hold (estimated) before they are thinned
_BYTES_PER_DISK = 600  # a checkpoint's dict entry and, for a busy disk, its own counters tuple
PROGRESS_LINES = 4096  # lines between progress reports and looks at the cancel flag


class LoadCancelled(Exception):
    """The reader was asked to stop (the user quit while a recording was loading)."""


class _Damaged(ValueError):
    """A line does not hold what a recording line holds; the text says what (for the one sentence)."""


@dataclass(frozen=True)
class SettingEvent:
    time: float  # seconds since the recording started (same clock as the samples)
    device: str
    name: str  # "scheduler" or a tunable / knob name
    old: str | None
    new: str | None

    @property
    def label(self) -> str:
        return (self.new or "?") if self.name == "scheduler" else f"{self.name}={self.new}"


@dataclass(frozen=True)
class _Checkpoint:
    index: int  # the sample whose line starts at ``offset``
    offset: int
    line: int  # its line number, for messages
    disks: dict[str, DiskCounters]  # the counters as of the sample before it
    schedulers: dict[str, str | None]  # scheduler events seen before it (known devices only)
    last_time: float  # the previous sample's time (times must grow)


def refuse(path: str | Path, why: str) -> BadInput:
    return BadInput(f"{path} is not an iosched recording: {why}")


# ---- one line --------------------------------------------------------------------------------------
def _num(x: object, what: str) -> float:
    # abs() first: an int too large for a float makes isfinite() raise.
    # JSON gives exact ints and floats; a bool is not a number here.
    if not isinstance(x, (int, float)) or isinstance(x, bool) or abs(x) > 1e12 or not math.isfinite(x):
        raise _Damaged(f"{what} is not a number")
    return float(x)


def _text(x: object, what: str) -> str:
    if not isinstance(x, str):
        raise _Damaged(f"{what} is not text")
    return x


def _counters(values: object, n: int) -> list[int]:
    if type(values) is not list or not 4 <= len(values) <= n:
        raise _Damaged("has the wrong number of counters")
    try:
        array("Q", values)  # whole numbers 0 .. 2^64 - 1, checked in C: the pass makes millions of these checks
    except (TypeError, OverflowError):
        raise _Damaged("has a counter that is not a whole number") from None
    return values


_DISK_N = len(DiskCounters._fields)
_CPU_N = len(CpuCounters._fields)
_SAMPLE_KEYS = frozenset(SampleLine.__dataclass_fields__)


def _event(obj: dict[str, Any]) -> SettingEvent:
    e = decode(EventLine, obj, max_depth=2)
    return SettingEvent(_num(e.m, "the time"), e.dev, e.name, e.old, e.new)


def check_header(h: object, path: str | Path) -> HeaderLine:
    """The header (first line) as its declared type, or the sentence that says why the file is not a recording."""
    if not isinstance(h, dict) or h.get("t") != "header":
        raise refuse(path, "its first line is no recording header")
    if h.get("version") != VERSION:
        raise refuse(path, f"it is of a version this iosched does not read (it reads version {VERSION})")
    try:
        inventory = h.get("inventory")
        if isinstance(inventory, list) and len(inventory) > MAX_DEVICES:  # counted before it is decoded
            raise _Damaged(f"the header lists more than {MAX_DEVICES} devices")
        header = decode(HeaderLine, h, max_depth=4)
        _num(header.interval, "the interval")
        _num(header.start_wall, "the start time")
    except (_Damaged, DecodeError) as e:
        raise refuse(path, str(e)) from None
    return header


def _open(path: str | Path) -> BinaryIO:
    return os.fdopen(open_regular(path, "recording"), "rb", buffering=1 << 20)


_decode = json.JSONDecoder().decode


def _kind_of(obj: object) -> tuple[dict[str, Any], object]:
    """A line's object and its kind ("t"); TypeError, said as any field of the wrong kind, for one not an object."""
    if not isinstance(obj, dict):
        raise TypeError("a line that is not an object")
    return obj, obj.get("t")


def _lines(f: BinaryIO, path: str | Path, line_no: int, stop: int | None = None, only: bytes | None = None
           ) -> Iterator[tuple[int, int, int, object]]:
    """(offset, end, line number, parsed JSON) of each non-empty line from where ``f`` stands; None for a
    cut-off last line (a crash mid-write). Lines are read with a bound: a file of one huge line costs no
    memory. ``only``: lines without these bytes are skipped unparsed (a second pass over checked lines)."""
    offset = f.tell()
    while stop is None or offset < stop:
        try:
            raw = f.readline(MAX_LINE_BYTES + 1)
        except OSError as e:
            raise BadInput(f"cannot read {path}: {e.strerror}") from None
        if not raw:
            return
        line_no += 1
        here, offset = offset, offset + len(raw)
        if len(raw) > MAX_LINE_BYTES:
            raise refuse(path, f"line {line_no} is longer than {MAX_LINE_BYTES >> 20} MiB")
        if not raw.strip() or (only is not None and only not in raw):
            continue
        try:
            obj = _decode(raw.decode())
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError; RecursionError: deep nesting
            if not raw.endswith(b"\n") or not f.read(1):  # the last line: cut off while it was written
                yield here, offset, line_no, None
                return
            raise refuse(path, f"line {line_no} is not a recording line") from None
        yield here, offset, line_no, obj


class _State:
    """The counters and schedulers as the lines are applied in order; shared by the pass and the cursor."""

    def __init__(self, path: str | Path, disks: dict[str, DiskCounters], schedulers: dict[str, str | None],
                 last_time: float, names: set[str]) -> None:
        self.path = path
        self.disks = disks
        self.schedulers = schedulers
        self.last_time = last_time
        self.names = names  # every device name seen so far (bounded by MAX_DEVICES)

    def sample(self, obj: dict[str, Any], build: bool) -> Sample:
        """Apply a sample line; ``build``: a Sample of its own (a copy of the counters, the CPUs), else one that
        only tells the time (the pass needs no more)."""
        m = _num(obj["m"], "the time")
        if m <= self.last_time:
            raise _Damaged("goes back in time")
        self.last_time = m
        disks = self.disks
        gone = obj.get("gone")
        if gone is not None:
            if type(gone) is not list:
                raise _Damaged("has a damaged list of gone devices")
            for name in gone:
                disks.pop(_text(name, "a gone device"), None)
        d = obj["d"]
        if type(d) is not dict:
            raise _Damaged("has no disks object")
        if len(d) > MAX_DEVICES:
            raise _Damaged(f"names more than {MAX_DEVICES} devices")
        for name, values in d.items():
            if name not in disks:
                self.know(name)
            disks[name] = DiskCounters(*_counters(values, _DISK_N))
        c = obj["c"]
        if type(c) is not dict or len(c) > MAX_CPUS:
            raise _Damaged(f"has no CPU object of at most {MAX_CPUS} CPUs")
        if build:
            return Sample(m, dict(disks), {k: CpuCounters(*_counters(v, _CPU_N)) for k, v in c.items()})
        for v in c.values():
            _counters(v, _CPU_N)
        return Sample(m, disks, {})

    def know(self, name: str) -> None:
        if name not in self.names:
            if len(self.names) >= MAX_DEVICES:
                raise refuse(self.path, f"it names more than {MAX_DEVICES} devices")
            self.names.add(name)

    def event(self, obj: dict[str, Any]) -> SettingEvent:
        e = _event(obj)
        if e.name == "scheduler" and e.device in self.names:
            self.schedulers[e.device] = e.new
        return e


def _damaged(path: str | Path, line_no: int, e: Exception) -> BadInput:
    if isinstance(e, DecodeError):
        return refuse(path, f"line {line_no}: {e}")
    if isinstance(e, _Damaged):
        return refuse(path, f"line {line_no} {e}")
    return refuse(path, f"line {line_no} lacks a field or has one of the wrong kind")


# ---- the index --------------------------------------------------------------------------------------
@dataclass
class Recording:
    """A recording as its header, what the pass learnt (count, times, devices attached) and its checkpoints.

    ``samples``, ``events`` and ``rates()`` read the file again; the views read windows through ``read``.
    """

    path: Path
    header: HeaderLine
    count: int = 0  # samples
    t0: float = 0.0  # the first sample's time
    t_end: float = 0.0  # the last sample's
    truncated: bool = False
    attached: list[DeviceDoc] = field(default_factory=list)  # devices attached while recording, as first seen
    end: int = 0  # bytes of whole lines read: reads never go further (the file may still be growing)
    every: int = CHECKPOINT_EVERY
    checkpoints: list[_Checkpoint] = field(default_factory=list)
    header_line: int = 1
    held: tuple[list[Sample], list[SettingEvent]] | None = None  # what ``load`` read into memory

    @property
    def inventory(self) -> list[DeviceDoc]:
        """The devices at the start and those attached later (one row per name, the first one seen)."""
        out: dict[str, DeviceDoc] = {}
        for d in [*self.header.inventory, *self.attached]:
            out.setdefault(d.name, d)
        return list(out.values())

    @property
    def span(self) -> float:
        return self.t_end - self.t0 if self.count > 1 else 0.0

    def snapshot(self) -> Recording:
        """A copy that the pass, going on, does not change: the part read so far, for a view to show."""
        return replace(self, attached=list(self.attached), checkpoints=list(self.checkpoints))

    def read(self, start: int = 0) -> Cursor:
        """A cursor whose first ``next()`` is sample ``start`` (0 .. count - 1)."""
        return Cursor(self, start)

    @property
    def samples(self) -> list[Sample]:
        """Every sample in memory: for small recordings (tests, tools). Views read windows."""
        if self.held is not None:
            return self.held[0]
        return list(self.read(0)) if self.count else []

    @property
    def events(self) -> list[SettingEvent]:
        return self.held[1] if self.held is not None else list(self.iter_events())

    def iter_events(self) -> Iterator[SettingEvent]:
        """The setting changes in order, read again from the file without building any sample."""
        with _open(self.path) as f:
            f.seek(0)
            # The pass checked every line: only those that can be events are parsed again.
            for _offset, _end, line_no, obj in _lines(f, self.path, 0, self.end, only=b'"e"'):
                if isinstance(obj, dict) and obj.get("t") == "e":
                    try:
                        yield _event(obj)
                    except (KeyError, TypeError, ValueError, AttributeError, DecodeError) as e:
                        raise _damaged(self.path, line_no, e) from None

    def rates(self) -> Iterator[Rates]:
        prev = None
        for s in self.samples if self.held is not None else self.read(0) if self.count else ():
            if prev is not None:
                yield compute_rates(prev, s)
            prev = s


class Cursor:
    """Samples from ``start`` on, read from the checkpoint before it. After each ``next()``, ``events`` holds the
    setting changes recorded with that sample and ``schedulers`` the scheduler events so far."""

    def __init__(self, rec: Recording, start: int) -> None:
        self.rec = rec
        cp = rec.checkpoints[0]
        for c in rec.checkpoints:  # a few hundred at most
            if c.index > start:
                break
            cp = c
        self.state = _State(rec.path, dict(cp.disks), dict(cp.schedulers), cp.last_time,
                            {d.name for d in rec.inventory})
        self.events: list[SettingEvent] = []
        self.index = cp.index  # of the next sample line
        self._f = _open(rec.path)
        self._f.seek(cp.offset)
        self._lines = _lines(self._f, rec.path, cp.line - 1, rec.end)
        self._pending: Sample | None = None
        self._read_to_next(start)

    @property
    def schedulers(self) -> dict[str, str | None]:
        return self.state.schedulers

    def _read_to_next(self, start: int | None = None) -> None:
        """Apply lines up to the next sample at or after ``start`` and hold it; events on the way are kept."""
        self._pending = None
        for _offset, _end, line_no, obj in self._lines:
            if obj is None:
                break
            try:
                obj, kind = _kind_of(obj)
                if kind == "s":
                    if self.index >= self.rec.count:
                        break
                    skip = start is not None and self.index < start
                    sample = self.state.sample(obj, build=not skip)
                    self.index += 1
                    if not skip:
                        self._pending = sample
                        return
                elif kind == "e":
                    e = self.state.event(obj)
                    if start is None or self.index > start:
                        self.events.append(e)
            except (KeyError, TypeError, ValueError, AttributeError, DecodeError) as e:
                raise _damaged(self.rec.path, line_no, e) from None

    def __iter__(self) -> Cursor:
        return self

    def __next__(self) -> Sample:
        sample = self._pending
        if sample is None:
            self.close()
            raise StopIteration
        self.events = []
        # The events written after this sample's line belong to it: read up to the next sample.
        self._read_to_next()
        return sample

    def close(self) -> None:
        self._f.close()


# ---- the pass ---------------------------------------------------------------------------------------
def is_recording(path: str | Path) -> bool:
    try:
        if not Path(path).is_file():
            return False
        with open(path, "rb") as f:
            return f.read(32).startswith(b'{"t":"header"')
    except OSError:
        return False


def read_header(path: str | Path) -> HeaderLine:
    """The header alone (the first line), checked: what `replay` looks at before it opens the TUI."""
    with _open(path) as f:
        for _offset, _end, _line_no, obj in _lines(f, path, 0):
            return check_header(obj, path)
    raise refuse(path, "it is empty")


def scan(path: str | Path, progress: Callable[[int, int, Recording], None] | None = None,
         cancelled: Callable[[], bool] | None = None,
         on_sample: Callable[[Sample], None] | None = None, every: int = CHECKPOINT_EVERY,
         budget: int = CHECKPOINT_BUDGET) -> Recording:
    """One streaming pass: the index of a recording, every line checked. Every few thousand lines
    ``progress(bytes, size, so_far)`` is called (``so_far.snapshot()``: a Recording of the part read) and
    ``cancelled()`` asked (``LoadCancelled`` when it says so); ``on_sample`` gets each sample in order (with its
    CPU counters), for a report made in the same pass."""
    f = _open(path)
    with f:
        size = os.fstat(f.fileno()).st_size
        rec: Recording | None = None
        state: _State | None = None
        held = 0  # estimated bytes in checkpoints
        for offset, end, line_no, obj in _lines(f, path, 0):
            if line_no % PROGRESS_LINES == 0:
                if cancelled is not None and cancelled():
                    raise LoadCancelled
                if progress is not None and rec is not None:
                    progress(offset, size, rec)
            if rec is None or state is None:
                if obj is None:
                    raise refuse(path, "its first line is cut off")
                rec = Recording(Path(path), check_header(obj, path), header_line=line_no, every=every)
                state = _State(path, {}, {}, -math.inf, set())
                for d in rec.header.inventory:
                    state.know(d.name)
                rec.end = end
                continue
            if obj is None:
                rec.truncated = True
                break
            try:
                obj, kind = _kind_of(obj)
                if kind == "s":
                    if not obj.keys() <= _SAMPLE_KEYS:
                        raise _Damaged("holds a key no sample line holds")
                    if rec.count % rec.every == 0:
                        rec.checkpoints.append(_Checkpoint(rec.count, offset, line_no, dict(state.disks),
                                                           dict(state.schedulers), state.last_time))
                        held += 200 + _BYTES_PER_DISK * len(state.disks)
                        if held > budget and len(rec.checkpoints) > 2:
                            # Thin: the kept ones are multiples of the doubled spacing (they started at 0).
                            rec.checkpoints = rec.checkpoints[::2]
                            rec.every *= 2
                            held //= 2
                    sample = state.sample(obj, build=on_sample is not None)
                    if rec.count == 0:
                        rec.t0 = sample.time
                    rec.t_end = sample.time
                    rec.count += 1
                    if on_sample is not None:
                        on_sample(sample)
                elif kind == "e":
                    state.event(obj)
                elif kind == "dev":
                    line = decode(DeviceLine, obj, max_depth=3)
                    _num(line.m, "the time")
                    if line.device.name not in state.names or len(rec.attached) < MAX_DEVICES:
                        state.know(line.device.name)
                        rec.attached.append(line.device)
            except (KeyError, TypeError, ValueError, AttributeError, DecodeError) as e:
                raise _damaged(path, line_no, e) from None
            rec.end = end
        if rec is None:
            raise refuse(path, "it is empty")
        if progress is not None:
            progress(size, size, rec)
        if not rec.checkpoints:  # no sample: a cursor still needs a place to start
            rec.checkpoints.append(_Checkpoint(0, rec.end, rec.header_line + 1, {}, {}, -math.inf))
        return rec


def load(path: str | Path) -> Recording:
    """A recording with every sample and event in memory, as it was when read: for small ones (tests, tools;
    the views and `report` use ``scan`` and read windows). A cut-off last line is ignored and flagged."""
    rec = scan(path)
    rec.held = (rec.samples, rec.events)
    return rec
