"""Rate maths over two counter snapshots, exactly as `iostat -x` and `mpstat` compute them.

Pure functions of numbers: no IO, no clocks.
"""

from __future__ import annotations

from typing import NamedTuple

from iosched.core.kernel.procfs import CpuCounters, DiskCounters

_U32 = 1 << 32
_U64 = 1 << 64


def counter_delta(prev: int, cur: int) -> int | None:
    """Increase of an unsigned counter, allowing for one wrap; None when the counter was reset.

    32-bit counters (unsigned int in older kernels) wrap from near 2**32; 64-bit ones from near 2**64.
    A fall from a value far from either limit is a reset (device detached and re-attached under the
    same name), which gives no rate rather than an absurd one.
    """
    d = cur - prev
    if d >= 0:
        return d
    if _U32 // 2 <= prev < _U32:
        return d + _U32
    if prev >= _U64 // 2:
        return d + _U64
    return None


class DiskRates(NamedTuple):
    """One device over one interval; field names map to sysstat's JSON keys via SYSSTAT_DISK_KEYS."""

    r_s: float
    w_s: float
    d_s: float
    f_s: float
    rkB_s: float
    wkB_s: float
    dkB_s: float
    rrqm_s: float
    wrqm_s: float
    drqm_s: float
    rrqm_pct: float
    wrqm_pct: float
    drqm_pct: float
    r_await: float
    w_await: float
    d_await: float
    f_await: float
    rareq_sz: float
    wareq_sz: float
    dareq_sz: float
    aqu_sz: float
    util: float
    in_flight: int

    def sysstat(self) -> dict[str, float]:
        """The figures under the key names of `iostat -x -o JSON`."""
        return {key: round(getattr(self, field), 2) for field, key in SYSSTAT_DISK_KEYS.items()}


SYSSTAT_DISK_KEYS: dict[str, str] = {
    "r_s": "r/s", "w_s": "w/s", "d_s": "d/s", "f_s": "f/s",
    "rkB_s": "rkB/s", "wkB_s": "wkB/s", "dkB_s": "dkB/s",
    "rrqm_s": "rrqm/s", "wrqm_s": "wrqm/s", "drqm_s": "drqm/s",
    "rrqm_pct": "rrqm", "wrqm_pct": "wrqm", "drqm_pct": "drqm",
    "r_await": "r_await", "w_await": "w_await", "d_await": "d_await", "f_await": "f_await",
    "rareq_sz": "rareq-sz", "wareq_sz": "wareq-sz", "dareq_sz": "dareq-sz",
    "aqu_sz": "aqu-sz", "util": "util",
}  # fmt: skip

# Positions of the cumulative fields in DiskCounters (everything but major, minor and the in_flight gauge).
_COUNTER_INDEXES = tuple(i for i, f in enumerate(DiskCounters._fields) if f not in ("major", "minor", "in_flight"))


def _ratio(num: float, den: float) -> float:
    return num / den if den else 0.0


def _merge_pct(merged: int, ios: int) -> float:
    return merged / (merged + ios) * 100.0 if merged + ios else 0.0


def disk_rates(prev: DiskCounters, cur: DiskCounters, dt: float) -> DiskRates | None:
    """iostat -x figures for one device over ``dt`` seconds; None if a counter was reset or dt <= 0."""
    if dt <= 0:
        return None
    deltas = [c - p for p, c in zip(prev, cur)]
    for i in _COUNTER_INDEXES:
        if deltas[i] < 0:  # rare: a wrap or a reset
            fixed = counter_delta(prev[i], cur[i])
            if fixed is None:
                return None
            deltas[i] = fixed
    d = dict(zip(DiskCounters._fields, deltas))
    reads, writes, discards, flushes = d["reads"], d["writes"], d["discards"], d["flushes"]
    ms = dt * 1000.0
    return DiskRates(
        r_s=reads / dt,
        w_s=writes / dt,
        d_s=discards / dt,
        f_s=flushes / dt,
        rkB_s=d["sectors_read"] / 2 / dt,
        wkB_s=d["sectors_written"] / 2 / dt,
        dkB_s=d["sectors_discarded"] / 2 / dt,
        rrqm_s=d["reads_merged"] / dt,
        wrqm_s=d["writes_merged"] / dt,
        drqm_s=d["discards_merged"] / dt,
        rrqm_pct=_merge_pct(d["reads_merged"], reads),
        wrqm_pct=_merge_pct(d["writes_merged"], writes),
        drqm_pct=_merge_pct(d["discards_merged"], discards),
        r_await=_ratio(d["ms_reading"], reads),
        w_await=_ratio(d["ms_writing"], writes),
        d_await=_ratio(d["ms_discarding"], discards),
        f_await=_ratio(d["ms_flushing"], flushes),
        rareq_sz=_ratio(d["sectors_read"] / 2, reads),
        wareq_sz=_ratio(d["sectors_written"] / 2, writes),
        dareq_sz=_ratio(d["sectors_discarded"] / 2, discards),
        aqu_sz=d["time_in_queue"] / ms,
        # io_ticks can run a tick ahead of our clock; sysstat caps %util at 100 too.
        util=min(d["io_ticks"] / ms * 100.0, 100.0),
        in_flight=cur.in_flight,
    )


class CpuRates(NamedTuple):
    """Percentages of one CPU (or "all") over one interval, as `mpstat` prints them."""

    usr: float
    nice: float
    sys: float
    iowait: float
    irq: float
    soft: float
    steal: float
    guest: float
    gnice: float
    idle: float

    def sysstat(self) -> dict[str, float]:
        """The figures under the key names of `mpstat -o JSON`."""
        return {k: round(v, 2) for k, v in self._asdict().items()}


def cpu_rates(prev: CpuCounters, cur: CpuCounters) -> CpuRates:
    """mpstat's figures: guest is taken out of user and guest_nice out of nice (the kernel counts them twice).

    A counter that went backwards (iowait does on some kernels) counts as 0, as in sysstat.
    """
    d = CpuCounters(*(max(c - p, 0) for p, c in zip(prev, cur)))
    total = d.user + d.nice + d.system + d.idle + d.iowait + d.irq + d.softirq + d.steal
    if total == 0:
        # No tick elapsed (or the CPU was offline throughout): report it idle, as mpstat does.
        return CpuRates(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 100.0)

    def pct(v: int) -> float:
        return max(v, 0) / total * 100.0

    return CpuRates(
        usr=pct(d.user - d.guest),
        nice=pct(d.nice - d.guest_nice),
        sys=pct(d.system),
        iowait=pct(d.iowait),
        irq=pct(d.irq),
        soft=pct(d.softirq),
        steal=pct(d.steal),
        guest=pct(d.guest),
        gnice=pct(d.guest_nice),
        idle=pct(d.idle),
    )
