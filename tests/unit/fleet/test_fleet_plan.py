"""What a host is told to run: the compare of an independent fleet host and the advice of an `advise --hosts` host,
each word from a checked value, each one the host's own parser reads back as the value given."""

from __future__ import annotations

from iosched.cli.main import build_parser
from iosched.core.advice.hosts import HostsAdvice
from iosched.core.fleet.fleet import Host
from iosched.core.fleet.fleet_plan import FleetSettings, option_words

HOST = Host("db1", "sdb")


def test_option_words_leave_out_what_has_no_value_and_write_numbers_exactly() -> None:
    assert option_words() == []
    assert option_words(("--a", None), ("--b", "x y"), ("--c", 0.1), ("--d", 3), ("--e", 0)) == [
        "--b", "x y", "--c", "0.1", "--d", "3", "--e", "0"]
    assert float(option_words(("--x", 1 / 3))[1]) == 1 / 3


def test_a_fleet_hosts_compare_has_every_value_given_and_nothing_else() -> None:
    bare = FleetSettings("none,bfq", independent=True)
    assert bare.remote_argv(HOST, "randread") == [
        "iosched", "compare", "sdb", "--schedulers", "none,bfq", "--job", "randread", "--json", "--settle", "1.0",
        "--alpha", "0.05"]
    full = FleetSettings("none,bfq", repeat=4, until_verdict=True, max_runs=12, runtime=2.5, size=1 << 30,
                         settle=0.5, alpha=0.01, metric="p99_lat_ms", independent=True, drop_caches=False,
                         iosched="/opt/iosched/bin/iosched")
    assert full.remote_argv(HOST, "randread") == [
        "/opt/iosched/bin/iosched", "compare", "sdb", "--schedulers", "none,bfq", "--job", "randread", "--json",
        "--settle", "0.5", "--alpha", "0.01", "--repeat", "4", "--runtime", "2.5", "--size", "1073741824",
        "--until-verdict", "--max-runs", "12", "--metric", "p99_lat_ms", "--no-drop-caches"]
    args = build_parser().parse_args(full.remote_argv(HOST, "randread")[1:])
    assert (args.settle, args.alpha, args.repeat, args.runtime, args.max_runs, args.metric) == (
        0.5, 0.01, 4, 2.5, 12, "p99_lat_ms")


def test_a_hosts_advice_has_every_value_given_and_nothing_else() -> None:
    assert HostsAdvice().remote_argv(HOST) == ["iosched", "advise", "sdb", "--yes", "--json", "--goal", "all",
                                               "--alpha", "0.05"]
    full = HostsAdvice(goals="throughput", candidates="none,bfq", budget_s=300.0, runtime=3.0, size=1 << 28,
                       settle=0.25, alpha=0.1, job="randread", cmd="sleep 0.3")
    assert full.remote_argv(HOST) == [
        "iosched", "advise", "sdb", "--yes", "--json", "--goal", "throughput", "--alpha", "0.1", "--candidates",
        "none,bfq", "--job", "randread", "--cmd", "sleep 0.3", "--budget", "300.0", "--runtime", "3.0", "--settle",
        "0.25", "--size", "268435456"]
    args = build_parser().parse_args(full.remote_argv(HOST)[1:])
    assert (args.alpha, [c.label for c in args.candidates], args.cmd, args.runtime, args.settle) == (
        0.1, ["none", "bfq"], "sleep 0.3", 3.0, 0.25)
