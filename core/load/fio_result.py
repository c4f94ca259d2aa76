"""fio's JSON output read into figures: pooled over the whole workload, and per role.

iosched runs fio with group reporting, and a workload of several job sections with each section in a reporting
group of its own (``new_group``), so fio gives one entry per section: a role (its section name). Entries of one
name are summed (a file may turn group reporting off, and then each numjobs clone is an entry). Percentiles of
more than one entry come from their summed json+ histograms: fio reads its own percentiles from the same bins,
so the result is exactly what fio's group reporting would say (checked on fio 3.33).
"""

from __future__ import annotations

import errno
import math
import os
from dataclasses import dataclass, field, replace
from typing import Any

from iosched.core.base.errors import IoschedError

PERCENTILES = (("clat_p50_us", 50.0, "50.000000"), ("clat_p99_us", 99.0, "99.000000"),
               ("clat_p999_us", 99.9, "99.900000"))
FIGURES = ("iops", "mb_s", "clat_mean_us", "clat_p50_us", "clat_p99_us", "clat_p999_us")


class FioFailed(IoschedError):
    pass


class FioRefused(FioFailed):
    """fio could not open its target for lack of privilege."""


class FioUnfinished(FioFailed):
    """fio did not run its workload to the end: killed, a non-zero exit, or shorter than asked. A run that ends
    so is no sample: kept, marked invalid with this reason, left out of the statistics."""


class FioDidNoIO(FioUnfinished):
    """fio ran and moved no data (a replay's requests past the device's end complete with 0 bytes, a role that
    never started): its figures are zeros that measure nothing."""


@dataclass(frozen=True)
class FioResult:
    """What fio's output says of a workload over its run: pooled over every job entry, and, for two or more job
    sections, each role's the same way (``roles``: each one a FioResult of that role's entries, without roles)."""

    iops: float
    read_iops: float
    write_iops: float
    mb_s: float
    total_ios: int
    clat_mean_us: float | None
    clat_p50_us: float | None
    clat_p99_us: float | None
    clat_p999_us: float | None
    runtime_s: float = 0.0
    usr_cpu: float = 0.0
    sys_cpu: float = 0.0
    roles: dict[str, FioResult] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)  # fio's JSON these figures come from (a role's: its entries)

    def metrics(self) -> dict[str, float | None]:
        """The pooled figures; with roles, each role's as ROLE:METRIC, its share of the IOs, and how evenly
        the roles share them (Jain's index and smallest / largest share)."""
        out: dict[str, float | None] = {k: getattr(self, k) for k in FIGURES}
        if not self.roles:
            return out
        total = sum(f.total_ios for f in self.roles.values())
        for role, f in self.roles.items():
            out.update({f"{role}:{k}": x for k, x in f.metrics().items()})
            out[f"{role}:share"] = f.total_ios / total if total else None
        rates = [f.iops for f in self.roles.values()]
        squares = sum(x * x for x in rates)
        out["fairness_jain"] = sum(rates) ** 2 / (len(rates) * squares) if squares else None
        out["share_min_max"] = min(rates) / max(rates) if max(rates) > 0 else None
        return out


def parse_result(obj: dict[str, Any]) -> FioResult:
    """The pooled figures (latency percentiles from the direction with most IOs) and, for two or more
    sections, each section's; FioFailed when fio's output says the run failed or has a shape we do not know."""
    try:
        return _parse_result(obj)
    except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError, OverflowError):
        raise FioFailed("fio's JSON output has an unexpected shape") from None


def client_jobs(obj: dict[str, Any]) -> dict[str, Any]:
    """fio's output as a client of a server (``client_stats``) in the shape of its own (``jobs``): each job's
    entry, without the sum of all clients."""
    if "jobs" in obj or not isinstance(obj.get("client_stats"), list):
        return obj
    jobs = [j for j in obj["client_stats"] if isinstance(j, dict) and j.get("jobname") != "All clients"]
    return {**{k: v for k, v in obj.items() if k != "client_stats"}, "jobs": jobs}


def _parse_result(obj: dict[str, Any]) -> FioResult:
    obj = client_jobs(obj)
    jobs = obj.get("jobs") or []
    if not jobs:
        raise FioFailed("fio ran no job")
    errors = [f"{j.get('jobname')}: error {_errno_words(j['error'])}" for j in jobs if j.get("error")]
    if os.geteuid() != 0 and any(j.get("error") in (errno.EACCES, errno.EPERM) for j in jobs):
        raise FioRefused("fio was refused access to its target (permission denied): run as root")
    if errors:
        raise FioFailed("fio reported " + "; ".join(errors))
    runtime = job_seconds(obj)
    if not (isinstance(runtime, (int, float)) and math.isfinite(runtime) and runtime >= 0):
        raise FioFailed("fio's JSON output holds negative or non-finite figures")
    pooled = figures(obj)
    if pooled.total_ios == 0:
        raise FioDidNoIO("fio did no IO: it completed no request")
    if _bytes_moved(jobs) == 0:
        raise FioDidNoIO(f"fio did no IO: its {pooled.total_ios} requests moved no data")
    by_name: dict[str, list[dict[str, Any]]] = {}
    for j in jobs:
        by_name.setdefault(str(j.get("jobname")), []).append(j)
    idle = next((name for name, entries in by_name.items() if len(by_name) > 1 and _bytes_moved(entries) == 0), None)
    if idle is not None:
        raise FioDidNoIO(f"fio did no IO for the role {idle[:40]!r}: its figures would measure nothing")
    if len(by_name) < 2:
        return pooled
    return replace(pooled, roles={name: figures({**obj, "jobs": entries}) for name, entries in by_name.items()})


def _bytes_moved(entries: list[dict[str, Any]]) -> int:
    """The bytes fio's entries read, wrote and trimmed."""
    return sum(int(j[d].get("io_bytes", 0)) for j in entries for d in ("read", "write", "trim")
               if isinstance(j.get(d), dict))


def _errno_words(code: object) -> str:
    """fio's error number with its name and meaning: "35 (EDEADLK: Resource deadlock avoided)"."""
    if isinstance(code, int) and code in errno.errorcode:
        return f"{code} ({errno.errorcode[code]}: {os.strerror(code)})"
    return str(code)


def figures(obj: dict[str, Any]) -> FioResult:
    """The figures of the job entries of fio's output ``obj`` taken together (sums; latency from the busiest
    direction; CPU the entries' mean), without roles."""
    entries: list[dict[str, Any]] = obj["jobs"]
    r_iops = sum(j["read"]["iops"] for j in entries)
    w_iops = sum(j["write"]["iops"] for j in entries)
    bw = sum(j[d]["bw_bytes"] for j in entries for d in ("read", "write"))
    counts = [j[d]["total_ios"] for j in entries for d in ("read", "write", "trim")]
    # Latency: IO-weighted mean over directions; percentiles from the direction with most IOs.
    lat_sum, lat_n = 0.0, 0
    per_dir: dict[str, list[dict[str, Any]]] = {"read": [], "write": []}
    for j in entries:
        for d in ("read", "write"):
            n, clat = j[d]["total_ios"], j[d].get("clat_ns") or {}
            if n and clat.get("mean") is not None:
                lat_sum += clat["mean"] * n
                lat_n += n
                per_dir[d].append(j[d])
    if not all(isinstance(x, (int, float)) and math.isfinite(x) and x >= 0
               for x in (r_iops, w_iops, bw, lat_sum, *counts)):
        raise FioFailed("fio's JSON output holds negative or non-finite figures")
    ios = {d: sum(side["total_ios"] for side in sides) for d, sides in per_dir.items()}
    busiest = max(per_dir, key=lambda d: ios[d])
    pcts = _percentiles(per_dir[busiest]) if ios[busiest] else dict.fromkeys(k for k, *_ in PERCENTILES)
    return FioResult(iops=r_iops + w_iops, read_iops=r_iops, write_iops=w_iops, mb_s=bw / 1e6,
                     total_ios=int(sum(counts)), clat_mean_us=lat_sum / lat_n / 1000.0 if lat_n else None,
                     clat_p50_us=pcts["clat_p50_us"], clat_p99_us=pcts["clat_p99_us"],
                     clat_p999_us=pcts["clat_p999_us"], runtime_s=job_seconds(obj),
                     usr_cpu=sum(j.get("usr_cpu", 0.0) for j in entries) / len(entries),
                     sys_cpu=sum(j.get("sys_cpu", 0.0) for j in entries) / len(entries), raw=obj)


def _percentiles(sides: list[dict[str, Any]]) -> dict[str, float | None]:
    """µs: fio's own percentiles for one entry; from the summed json+ bins for several (None without bins)."""
    if len(sides) == 1:
        table = sides[0].get("clat_ns", {}).get("percentile") or {}
        return {k: table[key] / 1000.0 if table.get(key) else None for k, _p, key in PERCENTILES}
    summed: dict[int, int] = {}
    for side in sides:
        bins = side.get("clat_ns", {}).get("bins")
        if not isinstance(bins, dict):
            return dict.fromkeys(k for k, *_ in PERCENTILES)
        for ns, n in bins.items():
            summed[int(ns)] = summed.get(int(ns), 0) + int(n)
    return {k: bin_percentile(summed, p) for k, p, _key in PERCENTILES}


def bin_percentile(bins: dict[int, int], p: float) -> float | None:
    """µs: the value of the first bin at which the cumulative count reaches p% of all (fio's own rule)."""
    total = sum(bins.values())
    if total <= 0:
        return None
    want, seen = p / 100.0 * total, 0
    for ns in sorted(bins):
        seen += bins[ns]
        if seen >= want:
            return ns / 1000.0
    return max(bins) / 1000.0


MAX_COUNT = 2**64  # fio's counters and latencies (ns) are 64-bit


def latency_bins(obj: dict[str, Any]) -> dict[int, int]:
    """fio's completion-latency histogram (json+ ``clat_ns.bins``) over every job and direction: ns -> IOs.

    Outside input: anything malformed is skipped, never raised, so an old save without bins draws nothing; so is a
    latency or a count beyond a 64-bit counter, fio's own bound (a count of 1e308 is no count of IOs).
    """
    out: dict[int, int] = {}
    jobs = obj.get("jobs") if isinstance(obj, dict) else None
    for j in jobs if isinstance(jobs, list) else []:
        for d in ("read", "write", "trim"):
            side = j.get(d) if isinstance(j, dict) else None
            clat = side.get("clat_ns") if isinstance(side, dict) else None
            bins = clat.get("bins") if isinstance(clat, dict) else None
            if not isinstance(bins, dict):
                continue
            for k, n in bins.items():
                if isinstance(n, bool) or not isinstance(n, (int, float)) or not 0 < n <= MAX_COUNT:
                    continue  # NaN fails here too
                try:
                    ns, count = int(k), int(n)
                except (TypeError, ValueError, OverflowError):
                    continue
                if 0 <= ns <= MAX_COUNT and count > 0:
                    out[ns] = out.get(ns, 0) + count
    return dict(sorted(out.items()))


def job_seconds(obj: dict[str, Any]) -> float:
    """Wall seconds the jobs ran: group reporting sums job_runtime over threads, so divide it back."""
    best = 0.0
    for j in obj.get("jobs") or []:
        threads = max(int((j.get("job options") or {}).get("numjobs", 1) or 1), 1)
        best = max(best, j.get("job_runtime", 0) / 1000.0 / threads)
    return best
