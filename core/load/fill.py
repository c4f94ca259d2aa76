"""How full the test target is when the first run begins: prepared to a level (`--fill PCT`), or as found.

An SSD's speed depends on how much of it holds data: its controller moves valid pages to free a block, and the fewer
free blocks it has, the more it moves (the "write cliff"); a read of a never-written or trimmed block is answered
without touching flash. So a test on an empty SSD measures another device than the user's half-full one. `--fill`
prepares the raw device before the first run: the whole of it trimmed where it takes discards (blkdiscard, so that
what was written before counts for nothing), then its first PCT% written sequentially with incompressible data
(fio, ``refill_buffers``: fresh random bytes for every write, nothing a controller can compress or deduplicate). The
catalog's jobs start at offset 0, so a job within the filled part reads data, not holes.

The time is said before anything is written, from an assumed rate for the device's kind (a guess: the device is not
timed before the plan is accepted, which would write to it), and fio's own runtime bounds the write at three times
that: a slower device ends less full, and the level recorded is the one reached. A scratch file on a mounted
filesystem is not filled (that would fill the user's filesystem): its filesystem's own level is recorded as found.
"""

from __future__ import annotations

import math
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from iosched.core.base.errors import IoschedError
from iosched.core.base.schema import Keywords
from iosched.core.base.units import human_size
from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.kernel.devices import read_device
from iosched.core.kernel.sysfs import read_int
from iosched.core.load.jobfile import fio_seconds, parse_job_file
from iosched.core.load.targets import Target
from iosched.core.load.workdirs import workdir_prefix

if TYPE_CHECKING:  # the documents import FillDoc: a TUI start loads no fio
    from iosched.core.load.fio import FioProgress, FioRun

MiB = 1 << 20
Percent = Annotated[float, Keywords(minimum=0, maximum=100)]
TRIM_TIMEOUT_S = 600.0
TIME_BOUND = 3.0  # the write stops at this many times its estimate (at least MIN_BOUND_S)
MIN_BOUND_S = 60.0


@dataclass(frozen=True, kw_only=True)
class FillDoc:
    """How full the test target was when the first run began."""

    asked: Percent | None = field(metadata={"doc": "--fill as given (null: nothing was prepared: as found)"})
    level: Percent | None = field(metadata={
        "doc": "percent of the target holding data: what iosched wrote of the raw device, or the space a "
               "filesystem had in use (null: not known)"})
    how: Literal["written", "found"] = field(metadata={
        "doc": "written: trimmed where it takes discards, then written by iosched; found: a filesystem's own level"})
    of: str = field(metadata={"doc": "what the level is of, in words"})
    trimmed: bool = False
    bytes_written: Annotated[int, Keywords(minimum=0)] = 0
    seconds: Annotated[float, Keywords(minimum=0, maximum=1e7)] = 0.0
    short: bool = field(default=False, metadata={"doc": "the write was stopped at its time bound, short of the level "
                                                        "asked", "absent": True})
    range_bytes: Annotated[int, Keywords(minimum=0)] = field(default=0, metadata={
        "doc": "the runs' range: the first bytes of the target the largest job addresses (0: not known)",
        "absent": True})
    range_level: Percent | None = field(default=None, metadata={
        "doc": "percent of the runs' range iosched wrote before the first run (null: not known); at least that "
               "much holds data where the target was not trimmed", "absent": True})

    def words(self) -> str:
        """"loop0 filled to 50.0% (trimmed first; 128 MiB of incompressible data in 0.4 s)"."""
        if self.how == "found":
            return f"{self.of} was {self.level:.0f}% full (as found)" if self.level is not None else \
                f"{self.of}: its fill level is not known"
        how = "trimmed first; " if self.trimmed else "not trimmed (it takes no discard); "
        short = f", stopped at its time bound short of the {self.asked:g}% asked" if self.short else ""
        said = (f"{self.of} filled to {self.level or 0:.1f}% ({how}{human_size(self.bytes_written)} of incompressible "
                f"data in {self.seconds:.1f} s{short})")
        if self.range_level is not None and self.range_bytes:
            least = "" if self.trimmed else "at least "  # untrimmed: what was there before may hold data too
            said += (f"; the runs' range, the first {human_size(self.range_bytes)}, was {least}{self.range_level:.0f}% "
                     "written before the runs")
        return said

    def over(self, range_bytes: int) -> FillDoc:
        """The fill with the share of the runs' range it wrote: they address the first ``range_bytes`` of the target,
        the fill wrote its first ``bytes_written``."""
        if self.how != "written" or range_bytes <= 0:
            return self
        share = min(100.0, min(self.bytes_written, range_bytes) / range_bytes * 100.0)
        return replace(self, range_bytes=range_bytes, range_level=round(share, 3))


def assumed_mb_s(dev: DeviceDoc) -> float:
    """A write rate to estimate the fill by, from the device's kind (no device is timed before the plan is
    accepted): a guess, said as one."""
    name = dev.name
    if dev.rotational and not name.startswith(("loop", "vd", "xvd", "zram")):
        return 100.0
    if name.startswith("nvme"):
        return 1000.0
    if name.startswith("mmcblk"):
        return 20.0
    if name.startswith(("loop", "zram", "ram", "vd", "xvd")):
        return 500.0
    return 300.0


@dataclass(frozen=True)
class FillPlan:
    """A fill decided before anything is written: what, how much, and how long it should take."""

    device: str
    percent: float
    size_bytes: int
    discards: bool  # the device takes discards: trimmed first
    rate_mb_s: float

    @property
    def bytes(self) -> int:
        """Bytes to write: the level of the device, in whole MiB (fio writes 1 MiB requests)."""
        return int(self.size_bytes * self.percent / 100.0) // MiB * MiB

    @property
    def trim_s(self) -> float:
        return 2.0 + self.size_bytes / (100 << 30) if self.discards else 0.0

    @property
    def seconds(self) -> float:
        return self.trim_s + self.bytes / (self.rate_mb_s * 1e6)

    @property
    def most_s(self) -> float:
        """The longest the fill may take: the trim, then the write to its time bound (what a budget counts)."""
        return self.trim_s + self.bound_s

    @property
    def bound_s(self) -> float:
        """fio's runtime for the write: past it the device ends less full."""
        return max(MIN_BOUND_S, math.ceil(TIME_BOUND * self.bytes / (self.rate_mb_s * 1e6)))

    def words(self) -> str:
        """The fill as the plan says it, before anything is written."""
        trim = "trim it whole, then " if self.discards else "(it takes no discard: not trimmed) "
        write = f"write {human_size(self.bytes)} of incompressible data" if self.bytes else "write nothing"
        return (f"fill {self.device} to {self.percent:g}% before the first run: {trim}{write}: about "
                f"{_duration(self.seconds)} (at an assumed {self.rate_mb_s:.0f} MB/s)")


def _duration(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.0f} min" if s < 5400 else f"{s / 3600:.1f} h"


def plan_fill(dev: DeviceDoc, percent: float, root: str | Path = "/") -> FillPlan:
    """The fill of ``dev`` to ``percent`` (checked by the flag's parser)."""
    discards = (read_int(Path(root, "sys/block", dev.name, "queue/discard_max_bytes"), 0) or 0) > 0
    return FillPlan(dev.name, percent, dev.size_bytes, discards, assumed_mb_s(dev))


def fill_most_s(device: str, percent: float, root: str | Path = "/") -> float:
    """The longest filling ``device`` to ``percent`` may take, its time bound (0 for a device that is gone)."""
    dev = read_device(device, root)
    return plan_fill(dev, percent, root).most_s if dev is not None else 0.0


class FillFailed(IoschedError):
    pass


def _trim(path: str) -> None:
    """The whole device discarded (blkdiscard; -f: iosched's own checks chose it as a target that may be written)."""
    try:
        from iosched.core.load.fio import dies_with_us

        r = subprocess.run(dies_with_us(["blkdiscard", "-f", path]), capture_output=True, text=True,
                           timeout=TRIM_TIMEOUT_S, start_new_session=True)
    except FileNotFoundError:
        raise FillFailed("blkdiscard is missing (apt-get install -y util-linux): nothing was written") from None
    except subprocess.TimeoutExpired:
        raise FillFailed(f"blkdiscard {path} did not finish within {TRIM_TIMEOUT_S:.0f} s") from None
    if r.returncode != 0:
        raise FillFailed(f"blkdiscard {path} failed: {(r.stderr.strip().splitlines() or ['exit status'])[-1][:200]}")


def fill_job(plan: FillPlan) -> str:
    """The job file fio reads for the write (the target is added by iosched's renderer)."""
    return "\n".join(["[fill]", "rw=write", "bs=1M", "iodepth=16", "ioengine=libaio", "direct=1", "refill_buffers=1",
                      f"size={plan.bytes}", f"runtime={fio_seconds(plan.bound_s)}"]) + "\n"


def run_fill(plan: FillPlan, target: Target, on_progress: Callable[[FioProgress], object] | None = None,
             holder: Callable[[FioRun], None] | None = None) -> FillDoc:
    """Trim (where it can) and write the raw device ``target`` to the plan's level; FillFailed, or FioFailed (a stop
    through ``holder``'s run), when it cannot. What it wrote is measured from fio's own JSON."""
    from iosched.core.load.fio import FioRun, command  # here: the documents import this module's types

    if target.kind != "device":
        raise FillFailed(f"--fill writes the raw device, not the scratch file {target.path}")
    t0 = time.monotonic()
    if plan.discards:
        _trim(target.path)
    written = 0
    if plan.bytes:
        job = parse_job_file(fill_job(plan), "the fill")
        with tempfile.TemporaryDirectory(prefix=workdir_prefix()) as work:
            run = FioRun(command(job, target, work), on_progress)
            if holder is not None:
                holder(run)
            result = run.run(timeout=plan.bound_s + 120.0)
        written = sum(int(j["write"].get("io_bytes", 0)) for j in result.raw.get("jobs") or [])
    level = min(100.0, written / plan.size_bytes * 100.0) if plan.size_bytes else 0.0
    return FillDoc(asked=plan.percent, level=round(level, 3), how="written", of=f"{plan.device} "
                   f"({human_size(plan.size_bytes)})", trimmed=plan.discards, bytes_written=written,
                   seconds=round(time.monotonic() - t0, 3), short=written < plan.bytes)


def found_fill(target: Target) -> FillDoc | None:
    """A scratch file's filesystem, as full as it was found (None for a raw device: its level is not known)."""
    if target.kind != "file":
        return None
    try:
        st = os.statvfs(Path(target.path).parent)
    except OSError:
        return None
    total = st.f_blocks * st.f_frsize
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    level = round(used / total * 100.0, 3) if total else None
    return FillDoc(asked=None, level=level, how="found",
                   of=f"the filesystem holding {target.path} ({human_size(total)})")
