"""The schedulers' tunables the kernel starts with, and the few tunings worth testing for a class of device, each
with why and the kernel document that says so.

Defaults are what each scheduler's source sets and sysfs shows (in ms where the kernel keeps jiffies; only those
that read the same at every HZ): block/mq-deadline.c, block/kyber-iosched.c (kyber_latency_targets),
block/bfq-iosched.c.
"""

from __future__ import annotations

from dataclasses import dataclass

from iosched.core.advice.device_class import DeviceClass
from iosched.core.statistics.advice_rule import Goal

DOCS = {
    "mq-deadline": "Documentation/block/deadline-iosched.rst",
    "kyber": "Documentation/block/kyber-iosched.rst",
    "bfq": "Documentation/block/bfq-iosched.rst",
}

DEFAULTS: dict[str, dict[str, str]] = {
    "mq-deadline": {"read_expire": "500", "write_expire": "5000", "writes_starved": "2", "fifo_batch": "16",
                    "front_merges": "1", "prio_aging_expire": "10000"},
    "kyber": {"read_lat_nsec": "2000000", "write_lat_nsec": "10000000"},
    "bfq": {"slice_idle": "8", "slice_idle_us": "8000", "low_latency": "1", "strict_guarantees": "0",
            "back_seek_max": "16384", "back_seek_penalty": "2", "max_budget": "0"},
}


MAINLINE = ("none", "mq-deadline", "kyber", "bfq")


def defaults_why(scheduler: str) -> str:
    """Why ``scheduler`` with its defaults is a candidate; one outside the mainline kernel (adios, kpp) is tested the
    same way, as it comes: iosched knows no tuning of its own for it, nor which of its values are its defaults."""
    if scheduler in MAINLINE:
        return "the scheduler with its defaults"
    return ("the scheduler with its defaults (not in the mainline kernel: tested as it comes, with no tunings of its "
            "own)")


def non_default(scheduler: str | None, tunables: dict[str, str]) -> list[tuple[str, str]]:
    """The tunables that differ from what ``scheduler`` starts with (those iosched knows the default of)."""
    known = DEFAULTS.get(scheduler or "", {})
    return sorted((k, v) for k, v in tunables.items() if k in known and known[k] != v)


@dataclass(frozen=True)
class Tuning:
    """A scheduler with settings worth testing beside its defaults."""

    scheduler: str
    settings: tuple[tuple[str, str], ...]
    goals: tuple[Goal, ...]  # the goals whose tests include it
    why: str
    source: str  # the kernel document
    keep: int  # when the budget is short, the tuning with the lowest keep goes first

    @property
    def label(self) -> str:
        """As `--schedulers` writes a variant: "kyber:read_lat_nsec=500000:write_lat_nsec=2500000"."""
        return ":".join([self.scheduler, *(f"{k}={v}" for k, v in self.settings)])


def class_tunings(dev: DeviceClass, schedulers: list[str] | tuple[str, ...]) -> list[Tuning]:
    """The tunings that matter for ``dev``'s class, among the schedulers it offers."""
    out: list[Tuning] = []
    offered = set(schedulers)
    nonrot = dev.non_rotational and dev.kind != "hdd"
    if "kyber" in offered:
        # kyber throttles the depth of a kind of request (read, write) whose observed latency misses its target
        # (kyber-iosched.rst: "Kyber will throttle requests in order to meet these target latencies"): a target a
        # quarter of the default (2 ms reads, 10 ms writes) leaves writes less of a fast device to protect reads;
        # four times the default lets the queue run deeper, for throughput. On a rotational disk one seek exceeds
        # the tight target, which would then only throttle: that one is for non-rotational devices.
        if nonrot:
            out.append(Tuning("kyber", (("read_lat_nsec", "500000"), ("write_lat_nsec", "2500000")),
                              ("latency", "interactive"),
                              "a tighter read target (0.5 ms, writes 2.5 ms): reads kept fast under writes",
                              DOCS["kyber"], 3))
        out.append(Tuning("kyber", (("read_lat_nsec", "8000000"), ("write_lat_nsec", "40000000")), ("throughput",),
                          "a looser target (8 ms, writes 40 ms): a deeper queue for throughput", DOCS["kyber"], 1))
    if "mq-deadline" in offered:
        # read_expire is the deadline after which a read is served first (deadline-iosched.rst, read_expire: "the
        # goal … is to attempt to guarantee a start service time for a request"); the default 500 ms lets reads
        # wait half a second behind a batch of writes, which is what an interactive reader feels.
        out.append(Tuning("mq-deadline", (("read_expire", "100"),), ("latency", "interactive"),
                          "reads served within 100 ms instead of 500 ms behind writes", DOCS["mq-deadline"], 4))
    if "bfq" in offered:
        # bfq-iosched.rst (low_latency): "DISABLE this mode if your only goal is to achieve a high throughput …
        # To achieve the highest-possible throughput on a non-rotational device, setting slice_idle to 0 may be
        # needed too"; and (slice_idle) idling "can severely impact throughput" on random workloads, while on flash
        # with internal queueing slice_idle=0 "might end up in better throughput and acceptable latencies".
        if nonrot:
            out.append(Tuning("bfq", (("slice_idle", "0"),), ("throughput", "latency"),
                              "no idling: a device with internal queueing is kept busy", DOCS["bfq"], 5))
            out.append(Tuning("bfq", (("low_latency", "0"), ("slice_idle", "0")), ("throughput",),
                              "low-latency heuristics and idling off: bfq's highest throughput on flash",
                              DOCS["bfq"], 2))
        else:
            out.append(Tuning("bfq", (("low_latency", "0"),), ("throughput",),
                              "low-latency heuristics off: no application's weight is raised", DOCS["bfq"], 2))
    return out
