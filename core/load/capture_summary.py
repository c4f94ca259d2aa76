"""What kind of workload a capture holds, which is what decides the scheduler: the IO mix, request sizes,
how sequential it is, and the load and depth over time (``report FILE`` on a capture). Pure: one pass over a
checked iolog (core/load/iolog.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from iosched.core.load.iolog import Capture, IologLine, check_iolog

ACTIONS = ("read", "write", "trim", "sync")


@dataclass
class CaptureSummary:
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ACTIONS, 0))
    nbytes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ACTIONS, 0))
    # log2 size buckets per action: bucket k holds sizes in [2^k, 2^(k+1)) bytes
    sizes: dict[str, dict[int, int]] = field(default_factory=lambda: {a: {} for a in ACTIONS})
    sequential: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ACTIONS, 0))
    _ends: dict[str, tuple[int, int]] = field(default_factory=dict)  # per action: the last one's device and end

    def add(self, line: IologLine) -> None:
        a = line.action
        self.counts[a] += 1
        if a == "sync":
            return
        self.nbytes[a] += line.length
        k = line.length.bit_length() - 1
        self.sizes[a][k] = self.sizes[a].get(k, 0) + 1
        # Sequential: it starts where the last request of its kind ended, on the same device (a stream of one
        # direction).
        if self._ends.get(a) == (line.file, line.offset):
            self.sequential[a] += 1
        self._ends[a] = (line.file, line.offset + line.length)

    @property
    def requests(self) -> int:
        return sum(self.counts.values())

    def share(self, action: str) -> float:
        return self.counts[action] / self.requests if self.requests else 0.0

    def sequential_share(self, action: str | None = None) -> float:
        acts = [action] if action else ["read", "write"]
        n = sum(self.counts[a] for a in acts)
        return sum(self.sequential[a] for a in acts) / n if n else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests, "counts": self.counts, "bytes": self.nbytes,
            "read_share": round(self.share("read"), 4),
            "sequential_share": {a: round(self.sequential_share(a), 4) for a in ("read", "write")},
            "sizes": {a: {str(1 << k): n for k, n in sorted(h.items())} for a, h in self.sizes.items() if h},
        }


def summarize(capture: Capture) -> CaptureSummary:
    """The capture's summary; its whole iolog is checked on the way (BadCapture names a bad line)."""
    s = CaptureSummary()
    check_iolog(capture, s.add)
    return s
