"""Roles: a workload's job sections judged apart (ROLE:METRIC), from fio's JSON without running fio; the role
names in job files, in --metric, and the words verdicts use for them."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosched.core.base.errors import BadInput
from iosched.core.documents.metrics import check_roles, metric_label, metric_words, ordered_metrics, roles_of
from iosched.core.documents.params import BadValue, parse_metric
from iosched.core.load.fio_result import bin_percentile, parse_result
from iosched.core.load.jobs import CATALOG, GROUPS, parse_job_file


def entry(name: str, read_ios: int = 0, write_ios: int = 0, bins: dict | None = None, numjobs: int = 1) -> dict:
    """One fio job entry as fio 3.33's json+ writes it (the fields iosched reads)."""
    def side(n: int) -> dict:
        clat = {"mean": 1000.0, "percentile": {"50.000000": 1000, "99.000000": 1000, "99.900000": 1000}}
        if bins is not None and n:
            clat = {"mean": sum(int(k) * v for k, v in bins.items()) / n, "bins": bins,
                    "percentile": {"50.000000": bin_ns(bins, 50), "99.000000": bin_ns(bins, 99),
                                   "99.900000": bin_ns(bins, 99.9)}}
        return {"iops": n / 2.0, "bw_bytes": n * 4096 // 2, "total_ios": n, "io_bytes": n * 4096,
                "clat_ns": clat if n else {"mean": 0.0}}

    return {"jobname": name, "error": 0, "job_runtime": 2000 * numjobs, "job options": {"numjobs": str(numjobs)},
            "read": side(read_ios), "write": side(write_ios), "trim": {"total_ios": 0}, "usr_cpu": 1.0,
            "sys_cpu": 2.0}


def bin_ns(bins: dict, p: float) -> int:
    x = bin_percentile({int(k): v for k, v in bins.items()}, p)
    assert x is not None
    return round(x * 1000)


def test_each_section_is_a_role_with_its_own_figures():
    fg = entry("fg", read_ios=200, bins={"100000": 150, "2000000": 50})
    bg = entry("bg", write_ios=800, bins={"30000000": 800})
    r = parse_result({"jobs": [fg, bg]})
    m = r.metrics()
    assert m["fg:iops"] == 100 and m["bg:iops"] == 400 and m["iops"] == 500  # the pooled figures stay
    assert m["fg:clat_p50_us"] == 100.0 and m["fg:clat_p99_us"] == 2000.0 and m["bg:clat_p50_us"] == 30_000.0
    assert m["fg:share"] == pytest.approx(0.2) and m["bg:share"] == pytest.approx(0.8)
    assert m["share_min_max"] == pytest.approx(0.25)
    assert m["fairness_jain"] == pytest.approx(500**2 / (2 * (100**2 + 400**2)))
    # Pooled percentiles: of the busiest direction (write), as with one reporting group.
    assert m["clat_p50_us"] == 30_000.0


def test_one_section_has_no_roles_and_the_same_metrics_as_before():
    r = parse_result({"jobs": [entry("j", read_ios=100)]})
    assert not r.roles
    assert set(r.metrics()) == {"iops", "mb_s", "clat_mean_us", "clat_p50_us", "clat_p99_us", "clat_p999_us"}


def test_entries_of_one_name_are_one_role_and_their_percentiles_come_from_the_summed_bins():
    # group_reporting=0 in a section: each numjobs clone is an entry of the same name.
    a = entry("fg", read_ios=100, bins={"1000": 90, "5000": 10})
    b = entry("fg", read_ios=100, bins={"1000": 10, "9000": 90})
    r = parse_result({"jobs": [a, b, entry("bg", write_ios=100, bins={"7000": 100})]})
    fg = r.roles["fg"]
    assert fg.total_ios == 200 and fg.iops == 100
    # summed: 100 at 1 µs, 10 at 5 µs, 90 at 9 µs -> the 50th percentile is 1 µs, the 99th 9 µs
    assert (fg.clat_p50_us, fg.clat_p99_us) == (1.0, 9.0)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.integers(1, 10**9), st.integers(1, 10**6), min_size=1, max_size=40),
       st.sampled_from([1.0, 50.0, 99.0, 99.9]))
def test_a_bin_percentile_is_a_bin_with_at_least_p_percent_at_or_below(bins, p):
    x = bin_percentile(bins, p)
    assert x is not None and round(x * 1000) in bins
    ns = round(x * 1000)
    total = sum(bins.values())
    assert sum(n for k, n in bins.items() if k <= ns) >= p / 100 * total
    assert sum(n for k, n in bins.items() if k < ns) < p / 100 * total


def test_job_files_with_several_sections_report_each_apart():
    jf = parse_job_file("[global]\nbs=4k\n[fg]\nrw=randread\n[bg]\nrw=write\nnumjobs=2\ngroup_reporting=0\n", "r.fio")
    assert jf.role_names == ["fg", "bg"]
    text = jf.render(None, "/dev/loop9")
    assert text.count("new_group=1") == 2 and "[fg]\nnew_group=1" in text and "[bg]\nnew_group=1" in text
    one = parse_job_file("[global]\nbs=4k\n[r]\nrw=randread\nnumjobs=4\n", "one.fio")
    assert one.role_names == [] and "new_group" not in one.render(None, "/dev/loop9")


def test_a_role_may_be_named_like_a_metric():
    jf = parse_job_file("[iops]\nrw=randread\n[mb_s]\nrw=read\n", "odd.fio")
    assert jf.role_names == ["iops", "mb_s"]
    assert parse_metric("iops:iops") == "iops:iops" and parse_metric("mb_s:clat_p99_us") == "mb_s:clat_p99_us"
    r = parse_result({"jobs": [entry("iops", read_ios=100), entry("mb_s", read_ios=300)]})
    m = r.metrics()
    assert m["iops"] == 200 and m["iops:iops"] == 50 and m["mb_s:iops"] == 150  # pooled and role apart
    assert metric_label("iops:iops") == "iops IOPS" and metric_label("iops") == "IOPS"


@pytest.mark.parametrize("bad", ["fg:wall_s", "fg:bogus", "fg:", ":iops", "a b:iops", "fg:iops:x", "bogus", 3, None])
def test_metric_names_outside_the_tables_are_refused(bad):
    with pytest.raises(BadValue, match="no metric"):
        parse_metric(bad)


def test_an_unknown_role_is_refused_with_the_roles_listed():
    with pytest.raises(BadInput, match=r"interactive-under-writes has no role 'xx'; its roles are fg, bg"):
        check_roles("xx:iops", [("interactive-under-writes", ["fg", "bg"])])
    with pytest.raises(BadInput, match="one job section, so it has no roles: name the metric alone"):
        check_roles("fg:iops", [("4k-read", [])])
    check_roles("fg:iops", [("a", ["fg", "bg"])])
    check_roles("iops", [("4k-read", [])])


def test_words_say_which_way_is_lower():
    assert metric_words("fg:clat_p99_us") == ("foreground p99 latency", "µs", "higher", "lower")
    assert metric_label("bg:mb_s") == "background MB/s" and metric_label("r1:share") == "r1 share of IOs"
    keys = ["bg:mb_s", "iops", "fg:clat_p99_us", "fg:iops", "nonsense", "fairness_jain"]
    assert ordered_metrics(keys) == ["iops", "fairness_jain", "bg:mb_s", "fg:iops", "fg:clat_p99_us"]
    assert roles_of(keys) == ["bg", "fg"]


def test_the_contention_group_holds_jobs_with_roles_that_name_their_metric():
    group = GROUPS["contention"]
    assert group.jobs[0] == "interactive-under-writes"
    for name in group.jobs:
        job = CATALOG[name]
        roles = job.as_job_file().role_names  # checked by the job-file allow-list
        assert len(roles) >= 2 and job.shows and job.primary
        role = job.primary.split(":")[0] if ":" in job.primary else None
        assert role is None or role in roles
        parse_metric(job.primary)
        check_roles(job.primary, [(name, roles)])
