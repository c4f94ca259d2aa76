"""A role job's figures on the live screen, without Textual: which role the chart follows, that role's latency
over time (one point per fio status interval, laid on the device graphs' sample times so a switch marker falls
where the latency moves), and each role's words for the status line and the end notice ("fg 100 IOPS 0.2 ms").

Roles are never pooled into one figure: a job of two or more sections is shown role by role.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from iosched.core.base.units import short_number
from iosched.core.documents.metrics import ROLE_WORDS, split_metric
from iosched.tui.status_line import KEEP, USEFUL

if TYPE_CHECKING:
    from iosched.core.load.fio import RoleProgress
    from iosched.core.load.fio_result import FioResult
    from iosched.core.load.jobs import Job

POINTS = 600  # fio reports once a second: ten minutes, longer than any job the TUI runs

Point = tuple[float, float, float | None]  # (start, end] of a status interval, monotonic; the mean latency in ms


def chart_role(job: Job) -> str | None:
    """The role the live chart follows: the one the job's verdict is about (``fg`` of ``fg:clat_p99_us``), else
    its first; None for a job of one section."""
    if not job.roles:
        return None
    role, _ = split_metric(job.primary or "")
    return role if role in job.role_names else job.role_names[0]


def chart_title(job: Job, role: str) -> str:
    """"Foreground latency ms · interactive-under-writes": whose latency, in the words of the results."""
    words = ROLE_WORDS.get(role, role)
    return f"{words[:1].upper()}{words[1:]} latency ms · {job.name}"


def latency_ms(us: float) -> str:
    """A latency given in µs, in ms with two significant figures below 10: 0.075 ms, 3.4 ms, 31 ms."""
    ms = us / 1000.0
    return f"{ms:.0f} ms" if ms >= 9.95 else f"{ms:.2g} ms"


def role_figures(role: str, p: RoleProgress) -> str:
    """"fg 100 IOPS 0.2 ms"; a role that completed nothing in the interval has no latency: "fg 0 IOPS"."""
    text = f"{role} {short_number(round(p.iops))} IOPS"
    return text if p.clat_mean_us is None else f"{text} {latency_ms(p.clat_mean_us)}"


def role_parts(roles: Mapping[str, RoleProgress], first: str | None) -> list[tuple[str, int]]:
    """The status line's parts for each role, ``first`` (the chart's role) leading and kept; the others follow
    after a "·" and go, the rightmost first, when the line is short."""
    order = sorted(roles, key=lambda r: r != first)  # stable: fio's order otherwise
    return [(role_figures(r, roles[r]) if i == 0 else f"· {role_figures(r, roles[r])}", KEEP if i == 0 else USEFUL)
            for i, r in enumerate(order)]


def role_summary(roles: Mapping[str, FioResult], first: str | None) -> str:
    """The end notice's figures over the whole run, role by role: "fg 100 IOPS p99 29 ms · bg 2.1k IOPS p99 80 ms"."""
    out = []
    for r in sorted(roles, key=lambda r: r != first):
        f = roles[r]
        p99 = "" if f.clat_p99_us is None else f" p99 {latency_ms(f.clat_p99_us)}"
        out.append(f"{r} {short_number(round(f.iops))} IOPS{p99}")
    return " · ".join(out)


def cover(times: Sequence[float], points: Sequence[Point], hold: bool) -> list[float | None]:
    """Each of ``times`` (ascending) given the value of the interval that covers it; a time after the last
    interval keeps its value while ``hold`` (the job still runs: the newest interval is the best estimate of
    now), else has none; a time before the first has none."""
    out: list[float | None] = []
    i = 0
    for t in times:
        while i < len(points) and points[i][1] < t:
            i += 1
        if i < len(points):
            out.append(points[i][2] if points[i][0] < t else None)
        else:
            out.append(points[-1][2] if hold and points else None)
    return out


@dataclass
class RoleHistory:
    """One role job's chart: the followed role's mean latency over each fio status interval, bounded. It
    outlives the job (the picture stays to be looked at) until the next job starts."""

    device: str
    role: str
    title: str
    points: deque[Point] = field(default_factory=lambda: deque(maxlen=POINTS))
    running: bool = True

    def add(self, fio_started: float, elapsed: float, roles: Mapping[str, RoleProgress]) -> None:
        """fio's report ``elapsed`` seconds after it started (monotonic ``fio_started``): the interval since the
        last report (or since the start)."""
        end = fio_started + elapsed
        start = self.points[-1][1] if self.points else fio_started
        if end <= start:
            return
        p = roles.get(self.role)
        self.points.append((start, end, None if p is None or p.clat_mean_us is None else p.clat_mean_us / 1000.0))

    def series(self, times: Sequence[float]) -> list[float | None]:
        return cover(times, self.points, self.running)
