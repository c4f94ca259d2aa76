"""The plan: candidates by class, tests by goal and workload, time against the budget and what is cut first."""

from __future__ import annotations

import pytest

from iosched.core.advice.device_class import DeviceClass
from iosched.core.advice.plan import (
    FAST_RUN_S,
    FAST_SETTLE_S,
    MIN_RUNS,
    RUN_OVERHEAD_S,
    SETTLE_S,
    baseline_variant,
    capture_source,
    cmd_source,
    job_source,
    plan_advice,
    plan_lines,
    runs_total,
)
from iosched.core.advice.tunings import DOCS, class_tunings
from iosched.core.base.errors import BadInput
from iosched.core.load.jobs import CATALOG

ALL = ("none", "mq-deadline", "kyber", "bfq")
GOALS = ("throughput", "latency", "interactive")


def device(kind: str = "nvme", rotational: bool = False) -> DeviceClass:
    return DeviceClass(name="d0", kind=kind, rotational=rotational, model=None, vendor=None, serial=None,
                       transport=None, size_bytes=1 << 30, hw_queues=1, hw_depth=32, nr_requests=64, partitions=(),
                       holders=(), sits_on=(), backing_file=None, mountpoints=(), notes=())


def labels(plan):
    return [c.variant.label for c in plan.candidates]


def test_every_tuning_cites_its_kernel_document_and_fits_its_class():
    nonrot = {t.label: t for t in class_tunings(device(), ALL)}
    assert set(nonrot) == {"kyber:read_lat_nsec=500000:write_lat_nsec=2500000",
                           "kyber:read_lat_nsec=8000000:write_lat_nsec=40000000", "mq-deadline:read_expire=100",
                           "bfq:slice_idle=0", "bfq:low_latency=0:slice_idle=0"}
    assert all(t.source == DOCS[t.scheduler] for t in nonrot.values())
    rot = {t.label for t in class_tunings(device("hdd", True), ALL)}
    assert rot == {"kyber:read_lat_nsec=8000000:write_lat_nsec=40000000", "mq-deadline:read_expire=100",
                   "bfq:low_latency=0"}  # no tight kyber target and no slice_idle=0 on a disk that seeks
    assert class_tunings(device(), ("none", "mq-deadline")) == [class_tunings(device(), ALL)[2]]


def test_default_tests_per_goal_and_the_baseline_first(tree):
    plan = plan_advice("d0", device("virtual"), "none", ALL, {}, GOALS)  # not known to be fast: the catalog's runs
    assert [(t.goal, t.source.ref, t.metric, t.costs) for t in plan.tests] == [
        ("throughput", "4k-randread", "iops", ("clat_p99_us",)),
        ("latency", "rnd4k-q1t1-read", "clat_p99_us", ("iops",)),
        ("interactive", "interactive-under-writes", "fg:clat_p50_us", ("bg:mb_s",))]
    thr = plan.tests[0]
    assert thr.variants[0] == "none" and "none" not in thr.variants[1:]
    assert "bfq:low_latency=0:slice_idle=0" in thr.variants and "mq-deadline:read_expire=100" not in thr.variants
    assert "mq-deadline:read_expire=100" in plan.tests[2].variants
    assert thr.runs == 8 and thr.seconds == len(thr.variants) * 8 * (10.0 + 1.0 + RUN_OVERHEAD_S)
    assert plan.pilot_s > 0 and plan.fits and plan.cuts == ()
    assert plan.seconds == plan.pilot_s + sum(t.seconds for t in plan.tests)
    assert runs_total(plan) == sum(len(t.variants) * t.runs for t in plan.tests)


def test_a_baseline_with_its_own_tunables_keeps_them_and_the_plain_scheduler_is_a_candidate():
    base = baseline_variant("mq-deadline", {"read_expire": "100", "fifo_batch": "16", "async_depth": "48"})
    assert base.label == "mq-deadline:read_expire=100" and base.settings == (("read_expire", "100"),)
    plan = plan_advice("d0", device(), "mq-deadline", ALL, {"read_expire": "100"}, ("latency",))
    assert plan.baseline.label == "mq-deadline:read_expire=100"
    assert "mq-deadline" in labels(plan) and "mq-deadline:read_expire=100" not in labels(plan)


def test_workload_sources_make_their_tests(tmp_path):
    cap = capture_source(tmp_path / "live.iolog", 20.0, writes=True)
    plan = plan_advice("d0", device(), "none", ALL, {}, GOALS, cap)
    # A capture's latency is its requests' in the block layer, not fio's (core/load/replay_latency.py).
    assert [(t.pace, t.metric) for t in plan.tests] == [("full", "mb_s"), ("own", "total_p99_us"),
                                                        ("foreground", "fg:total_p99_us")]
    assert plan.tests[0].estimated and not plan.tests[1].estimated  # as fast as it goes: at most its length
    assert "the observed capture at its captured timing as the foreground" in plan.tests[2].how
    assert plan.tests[1].how.endswith("its latency in the block layer")
    long = plan_advice("d0", device(), "none", ALL, {}, ("latency",), capture_source("/x/l.iolog", 600.0, False,
                                                                                       observed=False))
    assert long.tests[0].run_s == 60.0 and any("first 60 s" in n for n in long.notes)
    cmd = plan_advice("d0", device(), "none", ALL, {}, GOALS, cmd_source("make -j4"))
    assert [(t.goal, t.metric) for t in cmd.tests] == [("throughput", "wall_s"), ("interactive", "wall_s")]
    assert any("no latency test" in n for n in cmd.notes) and any("guessed" in n for n in cmd.notes)
    with pytest.raises(BadInput, match="wall time"):
        plan_advice("d0", device(), "none", ALL, {}, ("latency",), cmd_source("make"))


def test_where_the_block_layer_cannot_be_traced_a_capture_has_only_its_throughput_test(tmp_path):
    cap = capture_source(tmp_path / "live.iolog", 20.0, writes=True)
    why = "block-layer tracing needs root (run iosched with sudo)"
    plan = plan_advice("d0", device(), "none", ALL, {}, GOALS, cap, untraced=why)
    assert [t.goal for t in plan.tests] == ["throughput"]  # never a latency judged on fio's figure
    assert [n for n in plan.notes if why in n and "not fio's" in n] == [
        f"a replay's latency is its requests' in the block layer, not fio's, and the tracer cannot run here ({why}): "
        "no tail latency test",
        f"a replay's latency is its requests' in the block layer, not fio's, and the tracer cannot run here ({why}): "
        "no interactive use test"]
    with pytest.raises(BadInput, match=r"cannot run here \(block-layer tracing needs root.*--goal latency,interactive "
                                       "cannot judge it: use --goal throughput"):
        plan_advice("d0", device(), "none", ALL, {}, ("latency", "interactive"), cap, untraced=why)
    job = plan_advice("d0", device(), "none", ALL, {}, ("latency",), job_source(CATALOG["rnd4k-q1t1-read"]),
                      untraced=why)
    assert [t.metric for t in job.tests] == ["clat_p99_us"]  # a job runs as written: no capture's pacing


def test_a_contention_job_is_its_own_interactive_test():
    src = job_source(CATALOG["reads-vs-writeback"])
    plan = plan_advice("d0", device(), "none", ALL, {}, GOALS, src)
    got = {t.goal: (t.metric, t.costs) for t in plan.tests}
    assert got == {"throughput": ("bg:mb_s", ("fg:clat_p99_us",)), "latency": ("fg:clat_p99_us", ("bg:mb_s",)),
                   "interactive": ("fg:clat_p99_us", ("bg:mb_s",))}
    fair = plan_advice("d0", device(), "none", ALL, {}, GOALS, job_source(CATALOG["fair-share"]))
    assert [t.goal for t in fair.tests] == ["throughput", "interactive"]


def test_a_fast_devices_catalog_reads_run_short_unless_told():
    plan = plan_advice("d0", device("nvme"), "none", ALL, {}, GOALS)
    by = {t.goal: t for t in plan.tests}
    for goal in ("throughput", "latency"):
        t = by[goal]
        assert (t.run_s, t.settle_s) == (FAST_RUN_S, FAST_SETTLE_S)
        assert t.source.job is not None and t.source.job.runtime == FAST_RUN_S
    assert by["interactive"].run_s == CATALOG["interactive-under-writes"].runtime  # its bursts are 2.5 s apart
    assert by["interactive"].settle_s == SETTLE_S
    assert any(n.startswith("a fast device (nvme, non-rotational)") for n in plan.notes)
    told = plan_advice("d0", device("nvme"), "none", ALL, {}, ("throughput",), runtime=4.0, settle_s=1.0)
    assert (told.tests[0].run_s, told.tests[0].settle_s) == (4.0, 1.0)
    assert not any(n.startswith("a fast device") for n in told.notes)
    quiet_given = plan_advice("d0", device("nvme"), "none", ALL, {}, ("throughput",), settle_s=0.5)
    assert (quiet_given.tests[0].run_s, quiet_given.tests[0].settle_s) == (FAST_RUN_S, 0.5)
    for slow in (device("hdd", rotational=True), device("virtual"), device("mmc")):
        t = plan_advice("d0", slow, "none", ALL, {}, ("throughput",)).tests[0]
        assert (t.run_s, t.settle_s) == (CATALOG["4k-randread"].runtime, SETTLE_S)
    named = plan_advice("d0", device("nvme"), "none", ALL, {}, ("throughput",),
                        job_source(CATALOG["randread-q16t2"])).tests[0]
    assert named.run_s == CATALOG["randread-q16t2"].runtime  # a job the user named runs as it is


def test_over_budget_the_tunings_go_first_then_runs_two_at_a_time():
    slow = device("virtual")  # the catalog's own run lengths (a fast device's are short: the test below)
    full = plan_advice("d0", slow, "none", ALL, {}, GOALS)
    order = [line.split(" (")[0].removeprefix("left out ") for line in
             plan_advice("d0", slow, "none", ALL, {}, GOALS, budget_s=60).cuts if line.startswith("left out")]
    assert order == ["kyber:read_lat_nsec=8000000:write_lat_nsec=40000000", "bfq:low_latency=0:slice_idle=0",
                     "kyber:read_lat_nsec=500000:write_lat_nsec=2500000", "mq-deadline:read_expire=100",
                     "bfq:slice_idle=0"]
    some = plan_advice("d0", slow, "none", ALL, {}, GOALS, budget_s=full.seconds - 1)
    assert some.fits and some.cuts == ("left out kyber:read_lat_nsec=8000000:write_lat_nsec=40000000 (a looser "
                                       "target (8 ms, writes 40 ms): a deeper queue for throughput)",)
    tight = plan_advice("d0", slow, "none", ALL, {}, GOALS, budget_s=900)
    assert not any(c.tuning for c in tight.candidates) and tight.fits
    assert all(t.runs % 2 == 0 and t.runs >= MIN_RUNS for t in tight.tests)
    assert tight.cuts[-1].startswith("at most ") and tight.cuts[-1].endswith("instead of 8")
    hopeless = plan_advice("d0", slow, "none", ALL, {}, GOALS, budget_s=60)
    assert not hopeless.fits and all(t.runs == MIN_RUNS for t in hopeless.tests)
    assert "over budget by" in plan_lines(hopeless)[0]


def test_a_pilots_noise_sets_the_runs_and_drops_the_pilot():
    quiet = plan_advice("d0", device(), "none", ALL, {}, ("throughput",), noise={"throughput": 0.01})
    noisy = plan_advice("d0", device(), "none", ALL, {}, ("throughput",), noise={"throughput": 0.08})
    assert quiet.pilot_s == 0 and quiet.tests[0].runs == MIN_RUNS
    assert MIN_RUNS < noisy.tests[0].runs <= 16 and noisy.tests[0].runs % 2 == 0


def test_nothing_to_choose_or_no_goal_is_refused():
    with pytest.raises(BadInput, match="nothing to choose"):
        plan_advice("d0", device(), None, (), {}, GOALS)
    with pytest.raises(BadInput, match="one scheduler only"):
        plan_advice("d0", device(), "none", ("none",), {}, GOALS)
    with pytest.raises(BadInput, match="no goal"):
        plan_advice("d0", device(), "none", ALL, {}, ())
    with pytest.raises(BadInput, match="budget"):
        plan_advice("d0", device(), "none", ALL, {}, GOALS, budget_s=0)


def test_the_printed_plan_says_time_tests_and_changes():
    plan = plan_advice("d0", device(), "mq-deadline", ALL, {}, ("interactive",), budget_s=3600)
    text = "\n".join(plan_lines(plan))
    assert text.startswith("plan for d0 (interactive use): at most about ")
    assert "of a 60 min budget" in plan_lines(plan)[0]
    assert "baseline: mq-deadline (what d0 has now)" in text
    assert "candidate mq-deadline:read_expire=100: reads served within 100 ms" in text
    assert "Documentation/block/deadline-iosched.rst" in text
    assert "pilot: 3 runs of each test at mq-deadline" in text
    assert "judged on foreground p50 latency; also stated: background MB/s" in text
    assert "on the device: d0's scheduler switches among mq-deadline, bfq, kyber, none" in text
    assert "put back to mq-deadline (journaled)" in text
    assert "smallest budget that can decide: interactive use " in text
    assert "at the budget the tests stop" in text
    assert "the tests write to: raw /dev/d0" in "\n".join(plan_lines(plan, "raw /dev/d0, written over"))


def test_a_scheduler_outside_the_four_is_a_candidate_like_the_others():
    offered = (*ALL, "adios")
    plan = plan_advice("d0", device(), "adios", offered, {"lat_target_read": "1000000"}, GOALS)
    assert plan.baseline.label == "adios"  # its defaults unknown: what it has now, as it is
    assert "adios" not in labels(plan) and {"none", "mq-deadline", "kyber", "bfq"} <= set(labels(plan))
    away = plan_advice("d0", device(), "none", offered, {}, GOALS)
    (cand,) = [c for c in away.candidates if c.variant.label == "adios"]
    assert cand.why.startswith("the scheduler with its defaults (not in the mainline kernel: tested as it comes")
    assert cand.goals == GOALS and not cand.tuning
    assert any(line.startswith("  candidate adios: the scheduler with its defaults (not in the mainline")
               for line in plan_lines(away))
