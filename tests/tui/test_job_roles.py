"""A role job's figures on the live screen (tui/job_roles.py): the words of the status line and the end notice,
which role the chart follows, and its latency laid on the device graphs' sample times."""

from __future__ import annotations

from iosched.core.load.fio import RoleProgress
from iosched.core.load.fio_result import FioResult
from iosched.core.load.jobs import CATALOG
from iosched.tui.job_roles import (
    RoleHistory,
    chart_role,
    chart_title,
    cover,
    latency_ms,
    role_figures,
    role_parts,
    role_summary,
)
from iosched.tui.status_line import KEEP, USEFUL, fit_parts


def test_latency_reads_in_ms_with_two_figures_below_ten():
    assert [latency_ms(us) for us in (75.4, 200.0, 1000.0, 3420.0, 9940.0, 9960.0, 31_400.0, 1_250_000.0)] == \
        ["0.075 ms", "0.2 ms", "1 ms", "3.4 ms", "9.9 ms", "10 ms", "31 ms", "1250 ms"]


def test_each_role_reads_as_its_name_iops_and_latency():
    assert role_figures("fg", RoleProgress(99.7, 200.0)) == "fg 100 IOPS 0.2 ms"
    assert role_figures("bg", RoleProgress(2134.0, 31_000.0)) == "bg 2.1k IOPS 31 ms"
    assert role_figures("fg", RoleProgress(0.0, None)) == "fg 0 IOPS"  # nothing completed: no latency to show


def test_the_charts_role_leads_the_status_line_and_the_others_go_first_when_short():
    roles = {"bg": RoleProgress(2134.0, 31_000.0), "fg": RoleProgress(99.7, 200.0)}
    parts = role_parts(roles, "fg")
    assert parts == [("fg 100 IOPS 0.2 ms", KEEP), ("· bg 2.1k IOPS 31 ms", USEFUL)]
    assert fit_parts(parts, 80, sep=" ") == "fg 100 IOPS 0.2 ms · bg 2.1k IOPS 31 ms"
    assert fit_parts(parts, 30, sep=" ") == "fg 100 IOPS 0.2 ms"
    four = {f"r{i}": RoleProgress(1000.0 * i, 500.0) for i in range(1, 5)}
    assert [t for t, _ in role_parts(four, "r1")][:2] == ["r1 1.0k IOPS 0.5 ms", "· r2 2.0k IOPS 0.5 ms"]


def test_the_end_notice_gives_each_roles_figures_over_the_run():
    def figures(iops: float, p99: float | None) -> FioResult:
        return FioResult(iops, iops, 0.0, 1.0, 100, 100.0, 50.0, p99, None)

    assert role_summary({"bg": figures(2134.0, 80_000.0), "fg": figures(99.9, 29_000.0)}, "fg") == \
        "fg 100 IOPS p99 29 ms · bg 2.1k IOPS p99 80 ms"
    assert role_summary({"fg": figures(10.0, None), "bg": figures(5.0, None)}, "fg") == "fg 10 IOPS · bg 5 IOPS"


def test_the_chart_follows_the_role_the_job_is_judged_on_else_its_first():
    assert chart_role(CATALOG["interactive-under-writes"]) == "fg"  # primary fg:clat_p99_us
    assert chart_role(CATALOG["io-priority"]) == "be0"  # primary be0:share
    assert chart_role(CATALOG["fair-share"]) == "r1"  # primary fairness_jain names no role
    assert chart_role(CATALOG["randread-q16t2"]) is None  # one section: no chart
    assert chart_title(CATALOG["interactive-under-writes"], "fg") == \
        "Foreground latency ms · interactive-under-writes"
    assert chart_title(CATALOG["io-priority"], "be0") == "Be0 latency ms · io-priority"


def test_each_sample_time_takes_the_value_of_the_fio_interval_that_covers_it():
    points = [(10.0, 11.0, 20.0), (11.0, 12.0, None), (12.0, 13.0, 0.1)]
    times = [9.5, 10.0, 10.5, 11.0, 11.5, 12.5, 13.0, 13.5, 14.0]
    # (start, end]: 10.0 is before the first interval, 11.0 the end of the first; 11.5 lies in a silent one.
    assert cover(times, points, hold=False) == [None, None, 20.0, 20.0, None, 0.1, 0.1, None, None]
    # While the job runs, the newest interval stands for the samples fio has not reported on yet.
    assert cover(times, points, hold=True)[-2:] == [0.1, 0.1]
    assert cover(times, [], hold=True) == [None] * len(times)


def test_history_chains_fio_reports_into_intervals_of_the_followed_role():
    h = RoleHistory("loop0", "fg", "title")
    h.add(100.0, 1.5, {"fg": RoleProgress(0.0, None), "bg": RoleProgress(500.0, 40_000.0)})
    h.add(100.0, 2.5, {"fg": RoleProgress(50.0, 20_000.0), "bg": RoleProgress(500.0, 40_000.0)})
    h.add(100.0, 2.5, {"fg": RoleProgress(50.0, 1.0)})  # a repeated report adds nothing
    h.add(100.0, 3.5, {"bg": RoleProgress(500.0, 40_000.0)})  # the role missing from a report: no value
    assert list(h.points) == [(100.0, 101.5, None), (101.5, 102.5, 20.0), (102.5, 103.5, None)]
    h.add(100.0, 4.5, {"fg": RoleProgress(100.0, 300.0)})
    assert h.series([102.0, 103.0, 104.0, 105.0]) == [20.0, None, 0.3, 0.3]  # running: the newest holds
    h.running = False
    assert h.series([104.0, 105.0]) == [0.3, None]  # ended: the line stops where fio's reports did
