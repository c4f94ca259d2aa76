"""The metrics an experiment measures: key, label, unit and the words for more and less of each.

A workload of several fio job sections has roles (the sections' names: ``fg``, ``bg``, ...), and each role
has its own figures, named ``ROLE:METRIC`` (``fg:clat_p99_us``, ``bg:mb_s``). The pooled metrics stay beside
them. Kept apart from the statistics, so that the command line can name them without loading those.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from iosched.core.base.errors import BadInput

# key, label, unit, word for more, word for less
METRICS: list[tuple[str, str, str, str, str]] = [
    ("iops", "IOPS", "", "more", "fewer"),
    ("mb_s", "MB/s", "", "more", "fewer"),
    ("wall_s", "wall time", "s", "longer", "shorter"),
    # A start-up replayed beside a load (`compare --startup`): from its first request to its last (at most its cap).
    ("startup_s", "start-up time", "s", "longer", "shorter"),
    ("clat_mean_us", "mean latency", "µs", "higher", "lower"),
    ("clat_p50_us", "p50 latency", "µs", "higher", "lower"),
    ("clat_p99_us", "p99 latency", "µs", "higher", "lower"),
    ("clat_p999_us", "p99.9 latency", "µs", "higher", "lower"),
    # Between the roles of a workload: how evenly they share the device's IOs (1 = equal shares).
    ("fairness_jain", "Jain's fairness index", "", "higher", "lower"),
    ("share_min_max", "smallest / largest share", "", "higher", "lower"),
    ("cpu_us_per_io", "CPU µs per IO", "", "more", "less"),
    # Where it goes (core/load/submission.py): fio's own threads, user + sys; the kernel's block workers (kblockd,
    # which serves every disk, and the device's own workqueue): all of them on this machine during the run.
    ("cpu_us_per_io_task", "task CPU µs per IO", "", "more", "less"),
    ("cpu_us_per_io_workers", "all block kworkers' CPU µs per IO", "", "more", "less"),
    ("cpu_usr", "CPU usr", "%", "more", "less"),
    ("cpu_sys", "CPU sys", "%", "more", "less"),
    ("cpu_iowait", "CPU iowait", "%", "more", "less"),
    ("dev_r_await", "device r_await", "ms", "higher", "lower"),
    ("dev_w_await", "device w_await", "ms", "higher", "lower"),
    # With --trace (block-layer tracing): where the time goes, and what tracing itself cost.
    ("sched_p50_us", "scheduler p50", "µs", "higher", "lower"),
    ("sched_p99_us", "scheduler p99", "µs", "higher", "lower"),
    ("device_p50_us", "device-time p50", "µs", "higher", "lower"),
    ("device_p99_us", "device-time p99", "µs", "higher", "lower"),
    ("total_mean_us", "traced mean total", "µs", "higher", "lower"),
    # Queue to completion in the block layer, as await times it: what a replay's latency is judged on.
    ("total_p50_us", "block-layer p50 latency", "µs", "higher", "lower"),
    ("total_p99_us", "block-layer p99 latency", "µs", "higher", "lower"),
    ("tracer_cpu", "tracer CPU", "%", "more", "less"),
    ("tracer_us_per_io", "tracer cost per IO", "µs", "more", "less"),
]
METRIC_NAMES = [k for k, *_ in METRICS]

# What each role measures: fio's figures of its own jobs, its share of all the workload's IOs, and (a replay beside a
# flood, traced) its requests' total time in the block layer.
ROLE_METRICS: list[tuple[str, str, str, str, str]] = [
    *(m for m in METRICS if m[0] in ("iops", "mb_s", "clat_mean_us", "clat_p50_us", "clat_p99_us", "clat_p999_us",
                                     "total_mean_us", "total_p50_us", "total_p99_us")),
    ("share", "share of IOs", "", "larger", "smaller"),
]
ROLE_METRIC_NAMES = [k for k, *_ in ROLE_METRICS]
ROLE = re.compile(r"[A-Za-z0-9_.+-]{1,64}")  # a fio section name, as job files may spell it
ROLE_WORDS = {"fg": "foreground", "bg": "background"}  # how the catalog's roles read in a sentence
# A figure read from a command's output (`--cmd-metric NAME=REGEX`): named by the user, checked against ours in
# core/experiment/cmd_metrics.py.
CMD_METRIC = re.compile(r"[a-z][a-z0-9_]{0,31}")

_TABLE = {k: (label, unit, more, fewer) for k, label, unit, more, fewer in METRICS}
_ROLE_TABLE = {k: (label, unit, more, fewer) for k, label, unit, more, fewer in ROLE_METRICS}


def split_metric(key: str) -> tuple[str | None, str]:
    """"fg:clat_p99_us" -> ("fg", "clat_p99_us"); a pooled metric has no role."""
    role, sep, base = key.partition(":")
    return (role, base) if sep else (None, key)


def is_metric(key: object) -> bool:
    """A metric name as iosched writes them: one of the table, or ROLE:METRIC of a role's metrics."""
    if not isinstance(key, str):
        return False
    role, base = split_metric(key)
    if role is None:
        return base in _TABLE
    return ROLE.fullmatch(role) is not None and base in _ROLE_TABLE


def metric_words(key: str) -> tuple[str, str, str, str]:
    """Label, unit, word for more, word for less: "fg:clat_p99_us" -> ("foreground p99 latency", "µs", ...)."""
    role, base = split_metric(key)
    if role is None:
        return _TABLE.get(base, (base, "", "higher", "lower"))  # else a command's own figure (tps, latency)
    label, unit, more, fewer = _ROLE_TABLE.get(base, (base, "", "more", "less"))
    return f"{ROLE_WORDS.get(role, role)} {label}", unit, more, fewer


def metric_label(key: str) -> str:
    return metric_words(key)[0]


def ordered_metrics(keys: object, cmd_metrics: Sequence[str] = ()) -> list[str]:
    """The metric names among ``keys``: a command's own figures (``cmd_metrics``) first, then the table's in its
    order, the pooled ones first, then each role's in the order met (anything else is left out)."""
    seen = [k for k in dict.fromkeys(keys) if isinstance(k, str)]  # type: ignore[call-overload]
    pooled = [k for k in cmd_metrics if k in seen] + [k for k in METRIC_NAMES if k in seen]
    roles = list(dict.fromkeys(r for r, _ in map(split_metric, seen) if r is not None))
    by_role = [f"{r}:{m}" for r in roles for m in ROLE_METRIC_NAMES if f"{r}:{m}" in seen]
    return pooled + [k for k in by_role if is_metric(k)]


def roles_of(keys: object) -> list[str]:
    """The roles named among metric keys, in the order met."""
    return list(dict.fromkeys(r for r, _ in (split_metric(k) for k in ordered_metrics(keys)) if r is not None))


def check_roles(metric: str | None, workloads: list[tuple[str, list[str]]]) -> None:
    """BadInput when ``metric`` names a role a workload does not have (workloads: name and roles)."""
    if metric is None:
        return
    role, base = split_metric(metric)
    if role is None:
        return
    for name, roles in workloads:
        if role not in roles:
            has = (f"its roles are {', '.join(roles)}" if roles else
                   "it is one job section, so it has no roles: name the metric alone")
            raise BadInput(f"--metric {metric}: {name} has no role {role!r}; {has} (e.g. --metric "
                           f"{roles[0] + ':' if roles else ''}{base})")
