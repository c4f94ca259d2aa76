"""Log2 latency histograms in microseconds (the shape bpftrace's hist() produces) and their percentiles.

Bucket 0 holds [0, 1) µs; bucket k >= 1 holds [2**(k-1), 2**k) µs. Pure maths, no IO.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

MAX_BUCKETS = 64


def bucket_bounds(index: int) -> tuple[int, int]:
    """[low, high) in µs of a bucket."""
    if index == 0:
        return 0, 1
    return 1 << (index - 1), 1 << index


def bucket_of(value_us: float) -> int:
    """The bucket an (integer-truncated) value falls in, as bpftrace's hist() does."""
    return min(max(int(value_us), 0).bit_length(), MAX_BUCKETS - 1)


@dataclass(frozen=True)
class Log2Hist:
    """Counts per log2 bucket; trailing empty buckets are dropped so equal histograms compare equal."""

    counts: tuple[int, ...] = ()

    @staticmethod
    def of(counts: Iterable[int]) -> Log2Hist:
        c = list(counts)
        while c and c[-1] == 0:
            c.pop()
        return Log2Hist(tuple(c))

    @staticmethod
    def from_values(values_us: Iterable[float]) -> Log2Hist:
        counts = [0] * MAX_BUCKETS
        for v in values_us:
            counts[bucket_of(v)] += 1
        return Log2Hist.of(counts)

    @property
    def total(self) -> int:
        return sum(self.counts)

    def __add__(self, other: Log2Hist) -> Log2Hist:
        n = max(len(self.counts), len(other.counts))
        a = self.counts + (0,) * (n - len(self.counts))
        b = other.counts + (0,) * (n - len(other.counts))
        return Log2Hist.of(x + y for x, y in zip(a, b))

    def since(self, earlier: Log2Hist) -> Log2Hist:
        """Counts added after ``earlier`` (cumulative maps); a bucket that went down means a reset: keep it."""
        n = max(len(self.counts), len(earlier.counts))
        a = self.counts + (0,) * (n - len(self.counts))
        b = earlier.counts + (0,) * (n - len(earlier.counts))
        if any(x < y for x, y in zip(a, b)):
            return self
        return Log2Hist.of(x - y for x, y in zip(a, b))

    def percentile(self, q: float) -> float | None:
        """The q-quantile (0 < q <= 1), interpolated linearly inside its bucket; None when empty.

        The bucket is the one holding the smallest value whose cumulative share reaches q (the inverted-CDF
        definition), so the estimate always lies in the bucket of the true sample quantile.
        """
        n = self.total
        if n == 0:
            return None
        rank = q * n
        before = 0
        for i, c in enumerate(self.counts):
            if c and before + c >= rank:
                if i == 0:
                    return 0.0  # bpftrace truncates to whole µs: bucket 0 is "under 1 µs", mostly exactly 0
                low, high = bucket_bounds(i)
                share = min(max((rank - before) / c, 0.0), 1.0)
                return low + share * (high - low)
            before += c
        low, high = bucket_bounds(len(self.counts) - 1)
        return float(high)

    def mean(self) -> float | None:
        """Mean estimated from bucket midpoints (exact sums are carried separately where they exist)."""
        n = self.total
        if n == 0:
            return None
        return sum(c * sum(bucket_bounds(i)) / 2 for i, c in enumerate(self.counts)) / n

    def rows(self) -> list[list[int]]:
        """Non-empty buckets as [low_us, high_us, count] (high exclusive)."""
        return [[*bucket_bounds(i), c] for i, c in enumerate(self.counts) if c]

    def to_json(self) -> dict[str, Any]:
        p50, p99 = self.percentile(0.5), self.percentile(0.99)
        return {"p50": _round(p50), "p99": _round(p99), "hist": self.rows()}


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 1)


def merge(hists: Sequence[Log2Hist]) -> Log2Hist:
    out = Log2Hist()
    for h in hists:
        out = out + h
    return out
