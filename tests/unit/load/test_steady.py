"""Waiting for steady state (core/load/steady.py): the wait is the job with fio's own steadystate options, fio's
verdict read from its JSON, and said in words."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from iosched.core.load.jobs import CATALOG, parse_job_file
from iosched.core.load.steady import SteadyRun, SteadyWait, read_steady, waiting_job, why_no_wait

WAIT = SteadyWait(criterion="iops_slope:1%", window_s=10, ramp_s=2, timeout_s=60)


def test_a_catalog_jobs_wait_is_time_based_with_fios_options() -> None:
    job = waiting_job(CATALOG["rnd4k-q1t1-read"], WAIT)
    opts = dict(job.fio_options())
    assert opts["time_based"] == "1" and opts["runtime"] == "60"
    assert (opts["steadystate"], opts["steadystate_duration"], opts["steadystate_ramp_time"]) == \
        ("iops_slope:1%", "10", "2")


def test_a_job_files_wait_has_them_in_global() -> None:
    jf = parse_job_file("[global]\nioengine=libaio\n[r]\nrw=randread\nbs=4k\nruntime=5\ntime_based=1\n", "r.fio")
    text = waiting_job(jf, WAIT).render(60.0, "/dev/loop3")
    head = text.partition("[r]")[0]
    assert "steadystate=iops_slope:1%" in head and "steadystate_duration=10" in head and "runtime=60" in head
    assert "runtime=5" not in text  # the wait's length replaces the file's


def test_only_one_stream_waits() -> None:
    assert why_no_wait(CATALOG["rnd4k-q1t1-read"]) is None
    assert "roles" in (why_no_wait(CATALOG["interactive-under-writes"]) or "")
    assert "roles" in (why_no_wait(CATALOG["cgroup-weights"]) or "")
    two = parse_job_file("[a]\nrw=read\n[b]\nrw=read\n", "two.fio")
    assert "sections" in (why_no_wait(two) or "")


def fio_json(attained: int, criterion: str, iops_mean: int = 50763) -> dict[str, object]:
    """The steadystate object fio 3.33 writes per job (seen on a loop device)."""
    return {"jobs": [{"jobname": "x", "steadystate": {
        "ss": "iops_slope:1.000000%", "duration": 4, "attained": attained, "criterion": criterion,
        "max_deviation": 0.0, "slope": -235.8,
        "data": {"bw_mean": 207928204, "iops_mean": iops_mean, "iops": [46673, 56623], "bw": [1, 2]}}}]}


def test_fio_reached_it() -> None:
    got = read_steady(fio_json(1, "-0.464512%"), 10.9, "iops_slope:1%")
    assert got == SteadyRun(reached=True, criterion="iops_slope:1%", waited_s=10.9, value=-0.464512, mean=50763)
    assert got.sentence() == "steady state reached after 11 s"


def test_fio_timed_out_and_it_is_said() -> None:
    got = read_steady(fio_json(0, "-41.080139%"), 60.0, "iops_slope:1%")
    assert not got.reached
    assert got.sentence() == "steady state not reached in 60 s: IOPS slope -41%/s (bound 1%)"
    dev = read_steady(fio_json(0, "7.5%"), 30.0, "bw:2%")
    assert dev.sentence() == "steady state not reached in 30 s: bandwidth samples up to 7.5% from the mean (bound 2%)"


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["jobs", "steadystate", "attained", "criterion", "data", "iops_mean", "ss"]),
                        inner, max_size=4), max_leaves=12))
def test_any_json_is_a_verdict_never_a_traceback(raw: object) -> None:
    got = read_steady(raw if isinstance(raw, dict) else {"jobs": raw}, 5.0, "iops_slope:1%")
    assert isinstance(got.reached, bool) and got.sentence()


def test_the_window_must_fit_in_the_wait() -> None:
    import pytest

    from iosched.core.base.errors import BadInput

    with pytest.raises(BadInput, match="shorter than the window"):
        SteadyWait(criterion="iops:2%", window_s=30, ramp_s=5, timeout_s=20).check()
    assert WAIT.words() == "IOPS slope within 1%/s of the mean over 10 s, after 2 s of ramp (at most 60 s)"
