"""The lines of a recording (core/live/recording.py writes them, core/live/recording_reader.py reads them), as
declared types: one per kind, told apart by ``t``. Its JSON Schema is made from them (core/base/schema.py).

Every line is one JSON object. The first is the header; a reader skips a kind it does not know. As in every
declared document (core/base/schema.py), a field without a default is one the writer always writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from iosched.core.base.schema import Keywords
from iosched.core.kernel.device_doc import DeviceDoc

# The header's "version": the reader's VERSION (kept apart so the reader need not import these types;
# tests/test_schema.py holds the two equal).
RECORDING_VERSION = 1

# Raw counters as /proc/diskstats and /proc/stat give them (fields missing from older kernels are left out).
Counter = Annotated[int, Keywords(minimum=0)]
DiskCounters = Annotated[list[Counter], Keywords(minItems=4, maxItems=20)]
CpuCounters = Annotated[list[Counter], Keywords(minItems=4, maxItems=10)]


@dataclass(frozen=True, kw_only=True)
class HeaderLine:
    """The first line: when and how often the counters were read, and the devices there at the start."""

    t: Literal["header"]
    version: Annotated[int, Keywords(const=RECORDING_VERSION)]
    start_wall: float = field(metadata={"doc": "the wall clock at the start (Unix seconds)"})
    interval: Annotated[float, Keywords(exclusiveMinimum=0)]
    devices: list[str] | None = field(metadata={"doc": "the devices recorded; null: all of them"})
    kernel: str
    host: str
    inventory: list[DeviceDoc] = field(metadata={"item": "device"})


@dataclass(frozen=True, kw_only=True)
class SampleLine:
    """One interval's raw counters: the disks whose counters changed since the previous line, every CPU."""

    t: Literal["s"]
    m: float = field(metadata={"doc": "seconds since the start (monotonic)"})
    d: dict[str, DiskCounters] = field(metadata={"doc": "disk name -> its /proc/diskstats fields from major on"})
    c: dict[str, CpuCounters] = field(metadata={"doc": '"all" and each CPU -> its /proc/stat ticks'})
    gone: list[str] = field(default_factory=list, metadata={"doc": "disks no longer in /proc/diskstats"})


@dataclass(frozen=True, kw_only=True)
class EventLine:
    """A setting that changed (by anyone): the scheduler, a tunable or a queue knob."""

    t: Literal["e"]
    m: float
    dev: str
    name: str = field(metadata={"doc": '"scheduler", or the tunable\'s or knob\'s name'})
    old: str | None
    new: str | None


@dataclass(frozen=True, kw_only=True)
class DeviceLine:
    """A device attached while recording (or a new device under a known name)."""

    t: Literal["dev"]
    m: float
    device: DeviceDoc


RecordingLine = HeaderLine | SampleLine | EventLine | DeviceLine
