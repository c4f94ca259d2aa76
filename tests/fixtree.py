"""Build fake /proc + /sys trees for states this machine cannot produce (HDDs, old kernels, no scheduler)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CPU_HEADER = "cpu  {}\n"


def diskstats_line(major: int, minor: int, name: str, values: list[int]) -> str:
    return f"{major:4d} {minor:7d} {name} " + " ".join(str(v) for v in values)


class FixTree:
    """A temp root with proc/ and sys/block/ that core readers accept as ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "proc").mkdir(parents=True, exist_ok=True)
        (root / "sys/block").mkdir(parents=True, exist_ok=True)
        (root / "sys/class/block").mkdir(parents=True, exist_ok=True)
        self.write("proc/self/mountinfo", "")
        self.write("proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n")
        self.set_stat({"all": [0, 0, 0, 0]})
        self.set_diskstats([])

    def write(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def set_diskstats(self, lines: list[str]) -> None:
        self.write("proc/diskstats", "\n".join(lines) + ("\n" if lines else ""))

    def set_stat(self, cpus: dict[str, list[int]]) -> None:
        out = []
        for key, values in cpus.items():
            label = "cpu " if key == "all" else f"cpu{key}"
            out.append(f"{label} " + " ".join(str(v) for v in values))
        out.append("intr 0")
        out.append("ctxt 0")
        self.write("proc/stat", "\n".join(out) + "\n")

    def add_disk(self, name: str, maj_min: str, size_sectors: int = 2048, rotational: bool = False,
                 scheduler: str | None = "[none] mq-deadline kyber bfq", mq: bool = True,
                 extra: dict[str, str] | None = None) -> Path:
        d = self.root / "sys/block" / name
        files = {
            "dev": maj_min, "size": str(size_sectors), "removable": "0", "ro": "0",
            "queue/rotational": "1" if rotational else "0", "queue/nr_requests": "64",
            "queue/read_ahead_kb": "128", "queue/iostats": "1",
        }
        if scheduler is not None:
            files["queue/scheduler"] = scheduler
        files.update(extra or {})
        for rel, text in files.items():
            self.write(f"sys/block/{name}/{rel}", text + "\n")
        if mq:
            (d / "mq").mkdir(exist_ok=True)
        link = self.root / "sys/class/block" / name
        if not link.exists():
            link.symlink_to(d)
        return d

    def add_partition(self, disk: str, name: str, maj_min: str) -> None:
        part = self.root / "sys/block" / disk / name
        self.write(f"sys/block/{disk}/{name}/partition", "1\n")
        self.write(f"sys/block/{disk}/{name}/dev", maj_min + "\n")
        link = self.root / "sys/class/block" / name
        if not link.exists():
            link.symlink_to(part)


# --- kernel layouts -------------------------------------------------------------------------------------------------
# What queue/ holds of the files iosched reads or writes, and each scheduler's folder (queue/iosched/), as each kernel
# ships them: 6.1 (Debian 12), 6.12 (Debian 13, an LTS), 6.18 (this machine's), and "next": async_depth moved from
# mq-deadline's folder to queue/, shared by every scheduler (a 2025 series, merged in 2026). The values are the
# kernels' defaults where they have one; what a test does not look at is left out.

_QUEUE = {"nr_requests": "256", "read_ahead_kb": "128", "rq_affinity": "1", "nomerges": "0", "wbt_lat_usec": "2000",
          "max_sectors_kb": "1280", "max_hw_sectors_kb": "32767", "add_random": "0", "io_poll_delay": "-1",
          "rotational": "0", "iostats": "1", "logical_block_size": "512"}
_DEADLINE = {"fifo_batch": "16", "front_merges": "1", "read_expire": "500", "write_expire": "5000",
             "writes_starved": "2", "prio_aging_expire": "10000"}
_KYBER = {"read_lat_nsec": "2000000", "write_lat_nsec": "10000000"}
_BFQ = {"back_seek_max": "16384", "back_seek_penalty": "2", "fifo_expire_async": "250", "fifo_expire_sync": "125",
        "low_latency": "1", "max_budget": "0", "slice_idle": "8", "slice_idle_us": "8000", "strict_guarantees": "0",
        "timeout_sync": "125"}
# An out-of-tree scheduler: adios 3.3.0's folder. Besides its settings, a read-only version and statistics table, a
# two-line model (written as "BASE SLOPE"), and write-only triggers (mode 0200; sysfs refuses to read them).
ADIOS = {"bq_refill_below_ratio": "20", "global_latency_window": "16000000", "lat_model_latency_limit": "500000000",
         "batch_order": "0", "compliance_flags": "0", "batch_limit_read": "36", "batch_limit_write": "72",
         "batch_limit_discard": "1", "lat_target_read": "2000000", "lat_target_write": "2000000000",
         "lat_target_discard": "8000000000", "shrink_at_kreqs": "5000", "shrink_at_gbytes": "50", "shrink_resist": "2",
         "read_priority": "8"}
ADIOS_NOT_SETTINGS = {"adios_version": ("3.3.0", 0o444),
                      "batch_actual_max": ("Total  : 0\nDiscard: 0\nRead   : 0\nWrite  : 0", 0o444),
                      "lat_model_read": ("base : 0 ns\nslope: 0 ns/KiB", 0o644),
                      "reset_lat_model": ("", 0o200), "reset_bq_stats": ("", 0o200)}


@dataclass(frozen=True)
class Layout:
    """One kernel's files: queue/'s, and each in-tree scheduler's folder; ``in_queue``: the tunables it keeps in
    queue/ while a scheduler runs (reset by a switch)."""

    name: str
    queue: dict[str, str]
    tunables: dict[str, dict[str, str]]
    in_queue: tuple[str, ...] = ()

    def folder(self, scheduler: str) -> dict[str, str]:
        return ADIOS if scheduler == "adios" else self.tunables.get(scheduler, {})

    def async_depth_attr(self) -> str:
        """Where this kernel keeps async_depth (mq-deadline's, or every scheduler's)."""
        return "queue/async_depth" if "async_depth" in self.in_queue else "queue/iosched/async_depth"


LAYOUTS = {
    "6.1": Layout("6.1", _QUEUE, {"mq-deadline": {**_DEADLINE, "async_depth": "256"}, "kyber": _KYBER, "bfq": _BFQ}),
    "6.12": Layout("6.12", {**_QUEUE, "atomic_write_max_bytes": "0", "write_cache": "write back"},
                   {"mq-deadline": {**_DEADLINE, "async_depth": "256"}, "kyber": _KYBER, "bfq": _BFQ}),
    "6.18": Layout("6.18", {**_QUEUE, "atomic_write_max_bytes": "0", "write_cache": "write back",
                            "iostats_passthrough": "0"},
                   {"mq-deadline": {**_DEADLINE, "async_depth": "256"}, "kyber": _KYBER, "bfq": _BFQ}),
    "next": Layout("next", {**_QUEUE, "atomic_write_max_bytes": "0", "write_cache": "write back",
                            "iostats_passthrough": "0", "async_depth": "256"},
                   {"mq-deadline": _DEADLINE, "kyber": _KYBER, "bfq": _BFQ}, in_queue=("async_depth",)),
}
NONE_NR_REQUESTS = "128"  # what nr_requests reads with no scheduler (the device's depth); a scheduler's: 256


def add_kernel_disk(tree: FixTree, name: str, maj_min: str, layout: Layout, scheduler: str = "mq-deadline",
                    schedulers: tuple[str, ...] = ("none", "mq-deadline", "kyber", "bfq")) -> Path:
    """A disk as ``layout``'s kernel shows it, running ``scheduler`` among ``schedulers`` (add "adios" for the
    out-of-tree one), its folder and queue/ at their defaults."""
    listing = " ".join(f"[{s}]" if s == scheduler else s for s in schedulers)
    d = tree.add_disk(name, maj_min, scheduler=listing, extra={f"queue/{k}": v for k, v in layout.queue.items()})
    set_scheduler_files(tree, name, layout, scheduler)
    return d


def set_scheduler_files(tree: FixTree, name: str, layout: Layout, scheduler: str) -> None:
    """What a switch to ``scheduler`` leaves: its folder at its defaults (none has none), nr_requests reset, and the
    tunables kept in queue/ reset with it."""
    d = tree.root / "sys/block" / name / "queue"
    shutil.rmtree(d / "iosched", ignore_errors=True)
    if scheduler != "none":
        (d / "iosched").mkdir()
        for key, value in layout.folder(scheduler).items():
            (d / "iosched" / key).write_text(value + "\n")
        if scheduler == "adios":
            for key, (value, mode) in ADIOS_NOT_SETTINGS.items():
                (d / "iosched" / key).write_text(value + "\n" if value else "")
                (d / "iosched" / key).chmod(mode)
    nr = NONE_NR_REQUESTS if scheduler == "none" else "256"
    (d / "nr_requests").write_text(nr + "\n")
    for key in layout.in_queue:
        (d / key).write_text(nr + "\n")


def kernel_writes(monkeypatch: Any, tree: FixTree, layout: Layout) -> list[tuple[str, str, str]]:
    """After each write through the one door (core/settings/writes.py's writer process, into the fixture's file),
    the tree shows what ``layout``'s kernel would: a name it does not list refused (EINVAL), a switch's scheduler in
    brackets with its folder, nr_requests and queue/ tunables reset, any other value as written. Returns the writes
    made: (device, attribute, value)."""
    from iosched.core.base.errors import IoschedError
    from iosched.core.settings import writes

    real, made = writes._raw_write, []

    def raw(path: Path, value: str, device: str, attr: str, sending: object = None) -> float:
        before = path.read_text() if path.is_file() else ""
        seconds = real(path, value, device, attr, sending)
        made.append((device, attr, value))
        if attr == "queue/scheduler":
            listed = before.replace("[", "").replace("]", "").split()
            if value not in listed:
                path.write_text(before)
                raise IoschedError(f"the kernel refused {value!r} for {device} {attr} (invalid argument)")
            path.write_text(" ".join(f"[{s}]" if s == value else s for s in listed) + "\n")
            set_scheduler_files(tree, device, layout, value)
        else:
            path.write_text(value + "\n")
        return seconds

    monkeypatch.setattr(writes, "_raw_write", raw)
    return made
