"""Scheduler tunables (queue/iosched/*) and queue knobs: what each means, what values it takes, setting them.

Ranges are the ones the kernel enforces where it has one (and sane upper bounds where it only takes an
integer, or where what it stores reads back different); the kernel still has the last word: its refusal
comes back as a clear error, and a value it stores as something else is put back (core/settings/writes.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iosched.core.base.errors import BadInput
from iosched.core.kernel.sysfs import (
    MOVED_TO_QUEUE,
    WHOLE_NUMBER,
    check_device_name,
    moved_here,
    read_attr,
    read_int,
    running_tunables,
)
from iosched.core.settings.journal import Journal, default_run_dir
from iosched.core.settings.scheduler import available_schedulers, read_knobs, read_tunables, setting_attr
from iosched.core.settings.writes import QUEUE_KNOBS, WriteResult, is_tunable, write_attr

BIG = 2**31 - 1
# Milliseconds the kernel keeps in jiffies read back through an int: at HZ below 1000 values near BIG round up
# past it and read back negative (2147483647 reads -2147483648 at HZ=250). Whole seconds below BIG are safe
# at every HZ.
JIFFY_MS = 2_147_483_000


@dataclass(frozen=True)
class Info:
    meaning: str
    low: int = 0
    high: int = BIG
    unit: str = ""


# (scheduler or "queue") -> name -> Info
INFO: dict[str, dict[str, Info]] = {
    "mq-deadline": {
        "read_expire": Info("deadline for a read, after which it is served first", 0, JIFFY_MS, "ms"),
        "write_expire": Info("deadline for a write", 0, JIFFY_MS, "ms"),
        "fifo_batch": Info("requests dispatched in one sorted batch before deadlines are checked", 1, BIG),
        "writes_starved": Info("read batches allowed before a starved write batch must go", 0, BIG),
        "front_merges": Info("1: try merging a request in front of a queued one", 0, 1),
        "async_depth": Info("most requests async IO (writes) may take at once", 1, BIG),
        "prio_aging_expire": Info("after this, lower-priority requests are served ahead of higher", 0, JIFFY_MS, "ms"),
    },
    "bfq": {
        "slice_idle": Info("idle wait for the next request of a sync queue (0 disables idling)", 0, BIG, "ms"),
        "slice_idle_us": Info("the same idle wait in microseconds", 0, BIG, "µs"),
        "low_latency": Info("1: favour interactive and soft real-time tasks", 0, 1),
        "strict_guarantees": Info("1: strict service guarantees at some throughput cost", 0, 1),
        "timeout_sync": Info("longest time a sync queue may be served in one go", 1, JIFFY_MS, "ms"),
        "max_budget": Info("most sectors served per turn (0 = auto-tuned)", 0, BIG, "sectors"),
        "back_seek_max": Info("longest backward seek still treated as sequential", 0, BIG, "KiB"),
        "back_seek_penalty": Info("cost factor of a backward seek against a forward one", 1, BIG),
        "fifo_expire_sync": Info("deadline of a sync request", 1, BIG, "ms"),
        "fifo_expire_async": Info("deadline of an async request", 1, BIG, "ms"),
    },
    "kyber": {
        "read_lat_nsec": Info("target latency of reads; kyber throttles to meet it", 1, BIG * 1000, "ns"),
        "write_lat_nsec": Info("target latency of writes", 1, BIG * 1000, "ns"),
    },
    "queue": {
        "nr_requests": Info("requests the scheduler may hold (reset by a switch)", 4, 1 << 16),
        "read_ahead_kb": Info("read-ahead for buffered sequential reads", 0, 1 << 20, "KiB"),
        "rq_affinity": Info("complete IO on: 0 any CPU, 1 the submitting CPU's group, 2 the submitting CPU", 0, 2),
        "nomerges": Info("0 merge, 1 only simple one-hit merges, 2 never merge", 0, 2),
        "wbt_lat_usec": Info("writeback throttling latency target (0 off, -1 kernel default)", -1, BIG, "µs"),
        "max_sectors_kb": Info("largest request sent to the device (at most max_hw_sectors_kb)", 4, BIG, "KiB"),
        "add_random": Info("1: IO timing feeds the entropy pool", 0, 1),
        "io_poll_delay": Info("polled IO: -1 classic polling, 0 hybrid, >0 sleep µs before polling", -1, BIG, "µs"),
    },
}


# A moved tunable (async_depth in queue/ on newer kernels) is every scheduler's: the same meaning and range for each.
MOVED_INFO = {"async_depth": Info("most requests async IO (writes) may take at once", 1, BIG)}
# A tunable iosched has no entry for (an out-of-tree scheduler's): a whole number within what the kernel's integer
# parsers take; the kernel has the last word on its own range.
UNKNOWN = Info("", -(2**31), 2**63 - 1)


def info_of(scheduler: str, name: str) -> Info:
    """What iosched knows of ``scheduler``'s tunable ``name``: its entry, else the moved tunables', else UNKNOWN."""
    return INFO.get(scheduler, {}).get(name) or MOVED_INFO.get(name) or UNKNOWN


def tunable_names(device: str, scheduler: str, root: str | Path = "/") -> set[str] | None:
    """The tunables ``scheduler`` has on ``device``, whether it runs there or not: read from its folder where it runs
    (there, or on another disk of this machine: one module, one set of files), else iosched's table for the in-tree
    ones (with the moved ones where this kernel keeps them in queue/); None for an out-of-tree scheduler that runs
    nowhere, whose files iosched cannot know before a switch."""
    sysdir = check_device_name(device, root)
    running = running_tunables(scheduler, root, first=sysdir)
    if running is not None:
        return running
    if scheduler == "none":
        return set()
    if scheduler not in INFO:
        return None
    return set(INFO[scheduler]) | {k for k in MOVED_TO_QUEUE if (sysdir / "queue" / k).is_file()}


@dataclass(frozen=True)
class Setting:
    name: str
    value: str
    scope: str  # a scheduler name, or "queue"
    meaning: str
    unit: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "scope": self.scope, "meaning": self.meaning,
                "unit": self.unit}


def list_settings(device: str, root: str | Path = "/") -> list[Setting]:
    """The current scheduler's tunables, then the queue knobs, each with its value and meaning."""
    current, _ = available_schedulers(device, root)
    out: list[Setting] = []
    for name, value in read_tunables(device, root).items():
        info = info_of(current or "", name)
        out.append(Setting(name, value, current or "", info.meaning, info.unit))
    for name, value in read_knobs(device, root).items():
        knob = INFO["queue"].get(name)
        out.append(Setting(name, value, "queue", knob.meaning if knob else "", knob.unit if knob else ""))
    return out


def parse_assignments(items: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise BadInput(f"{item!r} is not KEY=VALUE")
        pairs.append((key.strip(), value.strip()))
    return pairs


def validate(device: str, pairs: list[tuple[str, str]], root: str | Path = "/",
             scheduler: str | None = None) -> None:
    """Every setting exists for ``scheduler`` (default: the current one) and its value is in range."""
    sysdir = check_device_name(device, root)
    current = scheduler or available_schedulers(device, root)[0] or "none"
    present = set(read_tunables(device, root)) if scheduler is None else tunable_names(device, current, root)
    if present is None:
        if any(key not in QUEUE_KNOBS for key, _ in pairs):
            raise BadInput(f"iosched reads {current}'s settings from its folder, and no disk here runs {current} "
                           f"now: switch one to it first (iosched set {device} {current}), then name them")
        present = set()
    _check_pairs(pairs, current, present, f"{device} with {current}")
    for key, value in pairs:
        if key == "max_sectors_kb":
            hw = read_int(sysdir / "queue/max_hw_sectors_kb")
            if hw is not None and int(value) > hw:
                raise BadInput(f"max_sectors_kb must not exceed max_hw_sectors_kb ({hw}) on {device}")


def validate_without_device(scheduler: str, pairs: list[tuple[str, str]], root: str | Path = "/") -> None:
    """For a rule reaching disks not at hand (a class of disks): every setting is one ``scheduler`` or the queue has
    (an in-tree scheduler's from iosched's table, with the moved ones where this kernel keeps them in queue/; another
    one's from the folder of a disk running it here) and its value is in range; each disk's kernel has the last word
    when udev applies it."""
    present = running_tunables(scheduler, root)
    if present is None and scheduler in INFO:
        present = set(INFO[scheduler]) | set(moved_here(root))
    if present is None:
        if any(key not in QUEUE_KNOBS for key, _ in pairs):
            raise BadInput(f"iosched reads {scheduler}'s settings from its folder, and no disk here runs {scheduler} "
                           f"now: switch one to it first, then name them")
        present = set()
    _check_pairs(pairs, scheduler, present, scheduler)


def _check_pairs(pairs: list[tuple[str, str]], current: str, present: set[str], owner: str) -> None:
    for key, value in pairs:
        if key in QUEUE_KNOBS:
            info = INFO["queue"].get(key)
        elif key in present:
            info = info_of(current, key)
        else:
            names = sorted(present) + sorted(QUEUE_KNOBS)
            raise BadInput(f"{owner} has no setting {key!r}; settings: {', '.join(names)}")
        if not WHOLE_NUMBER.match(value):
            raise BadInput(f"{key} takes an integer, not {value!r}")
        number = int(value)
        if info is not None and not info.low <= number <= info.high:
            raise BadInput(f"{key} must lie between {info.low} and {info.high}{' ' + info.unit if info.unit else ''}")


def apply(device: str, pairs: list[tuple[str, str]], root: str | Path = "/") -> list[WriteResult]:
    """Validate all, then write each through the one door (journaled, read back)."""
    validate(device, pairs, root)
    return [write_attr(device, setting_attr(key), value, root) for key, value in pairs]


def changed_here(device: str, root: str | Path = "/") -> list[tuple[str, str]]:
    """Settings iosched changed on ``device`` that now differ from their originals: what "make this
    permanent" keeps besides the scheduler. nr_requests is left out (a switch alone changes it)."""
    current = available_schedulers(device, root)[0]
    sysdir = check_device_name(device, root)
    out = []
    for e in Journal(default_run_dir(root)).entries().values():
        if e.device != device or e.attr in ("queue/scheduler", "queue/nr_requests"):
            continue
        if is_tunable(e.attr) and e.scheduler != current:
            continue
        value = read_attr(sysdir / e.attr)
        if value is not None and value != e.original:
            out.append((e.attr.rsplit("/", 1)[-1], value))
    return sorted(out)
