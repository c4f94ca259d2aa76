"""The arguments of `iosched advise`, apart from the command (cli/advise.py loads only when it runs)."""

from __future__ import annotations

import argparse

from iosched.cli.numbers import flag_type, lazy_command
from iosched.cli.workload_args import ALPHA, FILL, RUNS_AS, SETTLE, parse_seconds, parse_size, steady_opts
from iosched.core.documents import params
from iosched.core.settings.persist import DEFAULT_RULES


def add_arguments(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "advise", help="which scheduler for this disk: observe, plan, test, decide with its margin, keep",
        description="Observe the device (its class, its scheduler and who set it; with --observe its live workload), "
                    "plan the candidates and the tests each goal needs against --budget, print the plan and ask; "
                    "then test through the experiment service (the device put back after, on Ctrl-C, SIGTERM and a "
                    "lost session too), decide by a rule stated before the first run, and say how to keep it.",
        epilog="Without a terminal and without --yes the plan is printed and nothing runs (exit 2); --dry-run "
               "prints it and exits 0. Exit 0 with an answer (switch, or keep what you have, shown equal), 1 when "
               "the tests could not decide, 2 on bad input, 130/143/129 when stopped by Ctrl-C, SIGTERM or a lost "
               "session.")
    s.add_argument("device", help="whole-disk name, e.g. sda or nvme0n1")
    s.add_argument("--goal", default="all", metavar="GOAL",
                   help="throughput, latency (the tail, p99), interactive (a foreground beside a write flood), "
                        "several comma-separated, or all (default)")
    w = s.add_argument_group("the workload (default: the catalog's test for each goal)")
    w.add_argument("--observe", type=parse_seconds, metavar="DURATION",
                   help="capture the device's live workload for DURATION and test with it (replayed)")
    w.add_argument("--replay", metavar="FILE", help="a capture (`iosched capture`) to test with")
    w.add_argument("--job", metavar="NAME", help="a catalog job (`iosched jobs`) to test with")
    w.add_argument("--cmd", metavar="CMD", help=f"a shell command to time under each candidate, {RUNS_AS}")
    s.add_argument("--budget", metavar="DURATION", type=flag_type(params.parse_budget_s),
                   help="the most the whole advice may take, e.g. 15m or 2h: tunings are left out first, then runs, "
                        "then a catalog job's run length; the tests stop at it")
    s.add_argument("--candidates", metavar="LIST", type=flag_type(params.parse_candidates),
                   help="only these variants beside what the device has, e.g. bfq,kyber:read_lat_nsec=500000 "
                        "(default: every scheduler it offers and the tunings that matter for its class)")
    s.add_argument("--runtime", type=parse_seconds, metavar="S", help="seconds per run (scales the jobs)")
    s.add_argument("--size", type=parse_size, help="bytes a job covers, e.g. 256M (scales the jobs)")
    s.add_argument("--settle", type=SETTLE, help="seconds of quiet before each run (default 1; 0.2 for the "
                   "catalog's read tests on a fast device)")
    s.add_argument("--fill", type=FILL, metavar="PCT",
                   help="before the first test, trim the raw device tested (where it takes discards) and write its "
                        "first PCT%% with incompressible data, e.g. 50%%: an SSD half full, as it is used (its time is "
                        "in the plan and the budget; the raw device must be unmounted, blank or confirmed)")
    steady_opts(s)
    s.add_argument("--alpha", type=ALPHA, default=0.05, help="the error rate the rule keeps (default 0.05)")
    t = s.add_argument_group("where the tests write")
    t.add_argument("--on", metavar="SPARE_DEV",
                   help="run the tests on this spare device (the same kind of disk) instead of DEV")
    t.add_argument("--dir", help="a scratch file in this directory instead of the device's own filesystem")
    t.add_argument("--destroy-data", metavar="DEV",
                   help="let the tests write over the raw device although it holds data (its name; on a terminal "
                        "you are asked to type it instead)")
    s.add_argument("--yes", "-y", action="store_true", help="run the plan without asking (and --persist too)")
    s.add_argument("--dry-run", action="store_true", help="observe and print the plan; change nothing, run nothing")
    s.add_argument("--persist", action="store_true",
                   help="write the recommended setting as a udev rule (`iosched persist`'s path), once confirmed")
    s.add_argument("--persist-by", choices=("auto", "serial", "wwn", "model", "kernel-name", "class"),
                   default="auto", help="what that rule matches (default auto: serial, else WWN, model, name; "
                                        "class: every disk rotational like this one, or not)")
    s.add_argument("--rules-file", default=DEFAULT_RULES, help=f"where --persist writes (default {DEFAULT_RULES})")
    s.add_argument("--json", action="store_true", help="the advice document as JSON (docs/schema/advice.schema.json)")
    s.add_argument("--save", metavar="FILE", help="write the advice document to FILE (after every run); "
                                                  "`iosched report FILE` shows it again")
    s.add_argument("--markdown", metavar="FILE", help="a short markdown report to paste into a ticket ('-': stdout)")
    s.add_argument("--hosts", metavar="FILE|H1,H2,…",
                   help="advise on every host (a hosts file, one host a line, or names; DEV where a line names "
                        "none): each host's own iosched runs the whole advice over SSH at its own pace, then the "
                        "hosts are pooled per device model: whether they agree, and who does not by how much, "
                        "before one answer per model and a udev rule matching the model (needs --yes; exit 1 when "
                        "a host gave no advice or a model could not decide)")
    s.add_argument("--lockstep", action="store_true",
                   help="with --hosts: each host plans (changing nothing), then each goal's test runs every variant "
                        "on every host together through fio's server there, as `compare --hosts` does (catalog jobs "
                        "only; the default is each host on its own)")
    s.add_argument("--remote-iosched", default="iosched", metavar="PATH",
                   help="with --hosts: the iosched command on the hosts")
    s.add_argument("--ssh", default="ssh", help=argparse.SUPPRESS)
    s.set_defaults(func=lazy_command("iosched.cli.advise", "cmd_advise"))
