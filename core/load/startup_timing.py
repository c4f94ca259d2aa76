"""How long a start-up took in one run, against its time alone and its cap (core/load/startup_replay.py): pure, and
the declared type a saved run keeps (``RunDoc.startup``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from iosched.core.base.errors import BadInput
from iosched.core.base.schema import Keywords
from iosched.core.load.fio_result import FioResult

METRIC = "startup_s"  # the run's metric, and a start-up's primary
FOREGROUND = "fg"  # the role of the start-up's own figures (fg:METRIC); the background's is bg
CAP_MULTIPLE = 50.0  # a run is ended past this many times its time alone
CAP_FLOOR_S = 2.0  # ... but never sooner than this: a fast start-up's cap is not the machine's noise
MAX_CAP_MULTIPLE = 1000.0
ALONE_LIMIT_S = 60.0  # the S suite's default bound on a start-up (MAX_STARTUP): its time alone longer is refused
Seconds = Annotated[float, Keywords(minimum=0, maximum=1e9)]
Count = Annotated[int, Keywords(minimum=0)]


def cap_of(alone_s: float, multiple: float) -> float:
    """The longest a run's start-up may take: ``multiple`` times its time alone, at least CAP_FLOOR_S."""
    return max(multiple * alone_s, CAP_FLOOR_S)


def check_cap_multiple(multiple: float) -> float:
    if not 2 <= multiple <= MAX_CAP_MULTIPLE:
        raise BadInput(f"--startup-cap {multiple:g}: a multiple of the start-up's time alone, from 2 to "
                       f"{MAX_CAP_MULTIPLE:g}")
    return multiple


@dataclass(frozen=True, kw_only=True)
class StartupTiming:
    """A start-up's run (`compare --startup`): how long it took, against its time alone and its cap."""

    startup_s: Seconds = field(metadata={
        "doc": "from its first request to its last one's completion, one at a time (the sum of their latencies); "
               "the cap when over_cap (also the run's metric startup_s)"})
    alone_s: Seconds = field(metadata={
        "doc": "its time alone: measured once at the start, on the idle device under the first variant, caches "
               "dropped"})
    cap_s: Seconds = field(metadata={"doc": "the longest it may take: a multiple of alone_s, at least 2 s"})
    over_cap: bool = field(metadata={
        "doc": "still going at the cap: ended there, kept, startup_s the cap (a lower bound of its start-up)"})
    requests: Count = field(metadata={"doc": "requests the run completed"})
    of: Count = field(metadata={"doc": "requests the capture holds"})

    def sentence(self) -> str:
        """The run in words: "0.15 s" or "over the cap (7.50 s, 50 x its 0.15 s alone): 907 of 1563 requests"."""
        if not self.over_cap:
            return f"{self.startup_s:.2f} s"
        return (f"over the cap ({self.cap_s:.2f} s, {self.cap_s / max(self.alone_s, 1e-9):.0f} x its "
                f"{self.alone_s:.2f} s alone): {self.requests} of {self.of} requests")


def requests_time_s(raw: dict[str, Any]) -> float:
    """Seconds fio's entries spent in their requests: each direction's mean total latency (``lat_ns``, submission to
    completion) times its requests. At depth 1, one request after the other, that is the span from the first to the
    last one's completion, to the nanosecond (fio's runtime says it to the millisecond)."""
    total = 0.0
    for j in raw.get("jobs") or []:
        for d in ("read", "write", "trim"):
            side = j.get(d) or {}
            n, lat = side.get("total_ios", 0), (side.get("lat_ns") or {}).get("mean")
            if n and lat is not None:
                total += float(lat) * int(n)
    return total / 1e9


def timing_of(result: FioResult, alone_s: float, cap_s: float, of: int) -> tuple[StartupTiming, str | None]:
    """A run's start-up from the replay's fio result, and why the run is no sample (None: it is one): every request
    done, or ended at the cap (``over_cap``: counted at the cap); fewer requests before the cap is a replay cut
    short."""
    done = result.total_ios
    if done >= of:
        took = requests_time_s(result.raw)
        return StartupTiming(startup_s=round(took, 6), alone_s=round(alone_s, 6), cap_s=round(cap_s, 6),
                             over_cap=False, requests=done, of=of), None
    over = result.runtime_s >= cap_s * 0.99 - 0.01  # fio ended it at its runtime: the cap (milliseconds)
    timing = StartupTiming(startup_s=round(cap_s, 6), alone_s=round(alone_s, 6), cap_s=round(cap_s, 6),
                           over_cap=over, requests=done, of=of)
    return timing, None if over else f"the start-up replay completed {done} of the capture's {of} requests"
