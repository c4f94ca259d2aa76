"""The metrics an experiment measures: key, label, unit and the words for more and less of each.

Kept apart from the statistics, so that the command line can name them without loading those.
"""

from __future__ import annotations

# key, label, unit, word for more, word for less
METRICS: list[tuple[str, str, str, str, str]] = [
    ("iops", "IOPS", "", "more", "fewer"),
    ("mb_s", "MB/s", "", "more", "fewer"),
    ("wall_s", "wall time", "s", "longer", "shorter"),
    ("clat_mean_us", "mean latency", "µs", "higher", "lower"),
    ("clat_p50_us", "p50 latency", "µs", "higher", "lower"),
    ("clat_p99_us", "p99 latency", "µs", "higher", "lower"),
    ("clat_p999_us", "p99.9 latency", "µs", "higher", "lower"),
    ("cpu_us_per_io", "CPU µs per IO", "", "more", "less"),
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
    ("tracer_cpu", "bpftrace CPU", "%", "more", "less"),
]
METRIC_NAMES = [k for k, *_ in METRICS]
