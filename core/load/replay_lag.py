"""How far a timed replay fell behind its capture's timing, and the bound past which a run is no sample.

fio replays an iolog v3 by waiting, before each request, for its captured gap to the request before, counted from
when that one was issued (fio's iolog.c, ``iolog_delay``, fio 3.x): a request that goes out late (the queue was full
at the capture's depth, or the thread woke late on a busy machine) makes every later one as late, and nothing
catches up. The lag only grows through a run, so its end says the whole of it: fio's runtime against the time the
capture's timing takes. fio starts that clock at the first request timed after 0 (a gap from time 0 is never
waited), so the capture's timing runs from there to its end (its close line).

A run that fio cut at ``--runtime`` before the capture's end is measured by its requests instead: the capture's time
of the last request the run issued (from the capture's load over time, to one interval of it) against the runtime.

A run whose lag exceeds ``bound_s`` (a tenth of the capture's timing, at least ``LAG_FLOOR_S``) is invalid: its
requests came slower than captured and queued in fio rather than in the scheduler, so its latencies are not the
captured workload's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from iosched.core.base.schema import Keywords
from iosched.core.load.iolog import SeriesDoc

LAG_SHARE = 0.10  # of the capture's timing
LAG_FLOOR_S = 1.0  # below this, a lag is not held against a run, however short the capture
METRIC = "replay_lag_s"  # the run's metric (core/experiment/runner.py)
Seconds = Annotated[float, Keywords(minimum=0, maximum=1e9)]


def seconds_text(s: float) -> str:
    """A lag for a line: "3 ms" below a second, "1.75 s" above."""
    return f"{s * 1000:.0f} ms" if s < 0.9995 else f"{s:.2f} s"


def lag_bound(capture_s: float) -> float:
    """The most lag a run replaying ``capture_s`` seconds of a capture's timing may have and stay valid."""
    return max(LAG_SHARE * capture_s, LAG_FLOOR_S)


@dataclass(frozen=True, kw_only=True)
class ReplayLag:
    """How far a timed replay's run fell behind the capture's timing (`--replay-mode timed`)."""

    lag_s: Seconds = field(metadata={
        "doc": "how much later than captured the run ended: fio waits each request's captured gap after the one "
               "before went out, so one late request delays every later one"})
    capture_s: Seconds = field(metadata={
        "doc": "what the capture's timing takes over what was replayed: from its first timed request to its end "
               "(basis requests: to the capture's time of the run's last request)"})
    ran_s: Seconds = field(metadata={"doc": "fio's runtime of the run"})
    bound_s: Seconds = field(metadata={"doc": "the most lag a valid run may have: a tenth of capture_s, at least 1 s"})
    basis: Literal["span", "requests"] = field(metadata={
        "doc": "span: the whole capture replayed, its timing against fio's runtime; requests: a run cut by "
               "--runtime, the capture's time of the last request it issued against the runtime"})

    @property
    def behind(self) -> bool:
        """Whether the run fell too far behind for its latencies to be the captured workload's."""
        return self.lag_s > self.bound_s

    def reason(self) -> str:
        """Why a run that fell behind is invalid, in one sentence."""
        return (f"the timed replay fell {seconds_text(self.lag_s)} behind the capture's timing (more than "
                f"{seconds_text(self.bound_s)}: a tenth of its {self.capture_s:.1f} s, at least {LAG_FLOOR_S:g} s), so "
                "its latencies are not the captured workload's")


def span_lag(ran_s: float, start_us: int, end_us: int) -> ReplayLag:
    """A whole replay: fio ran ``ran_s`` seconds for timing that runs from ``start_us`` (the first request timed
    after 0) to ``end_us`` (the capture's end)."""
    capture_s = max(end_us - start_us, 0) / 1e6
    return _lag(ran_s, capture_s, "span")


def requests_lag(ran_s: float, issued: int, start_us: int, series: SeriesDoc) -> ReplayLag:
    """A replay cut short by its runtime: ``issued`` requests in ``ran_s`` seconds, against the capture's time of
    its ``issued``-th request (from its load over time, interpolated within an interval)."""
    at = request_time_s(series, issued)
    capture_s = max(at - start_us / 1e6, 0.0)
    return _lag(ran_s, capture_s, "requests")


def _lag(ran_s: float, capture_s: float, basis: Literal["span", "requests"]) -> ReplayLag:
    # fio cannot issue early: a negative difference is its millisecond runtime rounding, not a lead.
    return ReplayLag(lag_s=round(max(ran_s - capture_s, 0.0), 3), capture_s=round(capture_s, 6),
                     ran_s=round(max(ran_s, 0.0), 3), bound_s=round(lag_bound(capture_s), 3), basis=basis)


def request_time_s(series: SeriesDoc, k: int) -> float:
    """Seconds into the capture by which its ``k``-th request (from 1) had begun, from the requests per interval;
    the capture's last interval's end when it holds fewer."""
    seen = 0.0
    for i, iops in enumerate(series.iops):
        n = iops * series.interval_s
        if n > 0 and seen + n >= k:
            return (i + (k - seen) / n) * series.interval_s
        seen += n
    return len(series.iops) * series.interval_s
