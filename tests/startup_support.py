"""fio's JSON of a start-up's replay and of its background, as fio 3.33 writes the fields iosched reads."""

from iosched.core.load.fio_result import FioResult, parse_result


def replay_entry(ios: int, lat_ns: float, runtime_ms: int) -> dict:
    """fio's entry of a replay at depth 1 that completed ``ios`` reads of ``lat_ns`` each in ``runtime_ms``."""
    side = {"iops": ios / max(runtime_ms, 1) * 1000, "bw_bytes": 4096 * ios, "total_ios": ios, "io_bytes": 4096 * ios,
            "clat_ns": {"mean": lat_ns - 500, "percentile": {"50.000000": 90_000, "99.000000": 200_000,
                                                              "99.900000": 300_000}},
            "lat_ns": {"mean": lat_ns}}
    return {"jobname": "fg", "error": 0, "job_runtime": runtime_ms, "job options": {}, "read": side,
            "write": {"iops": 0, "bw_bytes": 0, "total_ios": 0, "io_bytes": 0}, "trim": {"total_ios": 0},
            "usr_cpu": 1.0, "sys_cpu": 2.0}


def flood_result() -> FioResult:
    """A write flood's result: 3 GB/s of 1 MiB writes."""
    side = {"iops": 3000.0, "bw_bytes": 3_000_000_000, "total_ios": 9000, "io_bytes": 9_000_000_000,
            "clat_ns": {"mean": 2_000_000.0, "percentile": {"50.000000": 2_000_000, "99.000000": 8_000_000,
                                                            "99.900000": 9_000_000}}}
    empty = {"iops": 0, "bw_bytes": 0, "total_ios": 0, "io_bytes": 0}
    return parse_result({"jobs": [{"jobname": "seq-writers-1", "error": 0, "job_runtime": 3000, "job options": {},
                                   "read": empty, "write": side, "trim": {"total_ios": 0}}]})
