"""The arguments of `iosched jobs`, `run`, `compare` and `report`, apart from their commands.

Every `iosched` start builds the whole parser, the TUI's included: the commands, with fio, the experiment
and the statistics behind them, load only when one of them runs.
"""

from __future__ import annotations

import argparse

from iosched.cli.numbers import flag_type, lazy_command, number
from iosched.core.base.errors import BadInput
from iosched.core.documents import params
from iosched.core.documents.metrics import METRIC_NAMES

# Who a command line runs as, one rule for every flag that takes one (core/load/cmd_tree.py invoking_user).
RUNS_AS = ("as the user who typed it: under sudo the user who ran sudo, root only when root runs iosched itself "
           "(a SUDO_UID that names no user is refused)")

# The flags' parsers are those of core/documents/params.py: a saved file's values go through the same ones.
ALPHA = flag_type(params.parse_alpha)
MARGIN = flag_type(params.parse_margin)
parse_size = flag_type(params.parse_size)
parse_seconds = flag_type(params.parse_seconds)
REPEAT = flag_type(params.parse_repeat)
SETTLE = flag_type(params.parse_settle)
FILL = flag_type(params.parse_fill)
STEADY_DEFAULT = "iops_slope:1%"
STEADY_WINDOW_S, STEADY_RAMP_S, STEADY_TIMEOUT_S = 10, 0, 60


def conditions_opts(s: argparse.ArgumentParser) -> None:
    """--fill and --steady (with its window, ramp and longest wait): compare, its matrices and advise take them."""
    s.add_argument("--fill", type=FILL, metavar="PCT",
                   help="before the first run, trim the raw device (where it takes discards) and write its first PCT%% "
                        "with incompressible data, e.g. --fill 50%%: an SSD half full, not an empty one (the time is "
                        "said first; needs the raw device, unmounted, blank or --destroy-data)")
    steady_opts(s)


def steady_opts(s: argparse.ArgumentParser) -> None:
    """--steady with its window, ramp and longest wait."""
    alone = STEADY_DEFAULT.replace("%", "%%")
    s.add_argument("--steady", nargs="?", const=STEADY_DEFAULT, type=flag_type(params.parse_steady),
                   metavar="CRITERION",
                   help="before each run, run the job until fio finds it steady (fio's steadystate: iops_slope, iops, "
                        f"bw_slope or bw, with a bound in %% of the mean; alone: {alone}), at most --steady-timeout; a "
                        "run whose wait timed out is kept and marked")
    s.add_argument("--steady-window", type=flag_type(params.parse_steady_window), metavar="S",
                   help=f"with --steady: fio's rolling window, one sample a second (default {STEADY_WINDOW_S})")
    s.add_argument("--steady-ramp", type=flag_type(params.parse_steady_ramp), metavar="S",
                   help=f"with --steady: seconds before the window opens (default {STEADY_RAMP_S})")
    s.add_argument("--steady-timeout", type=flag_type(params.parse_steady_timeout), metavar="S",
                   help=f"with --steady: the longest wait before a run (default {STEADY_TIMEOUT_S})")


def steady_wait(args: argparse.Namespace):  # -> SteadyWait | None (loaded only when a command runs)
    """--steady and its flags as the wait each run makes, checked; None without --steady."""
    shaped = [f for f, v in (("--steady-window", getattr(args, "steady_window", None)),
                             ("--steady-ramp", getattr(args, "steady_ramp", None)),
                             ("--steady-timeout", getattr(args, "steady_timeout", None))) if v is not None]
    if getattr(args, "steady", None) is None:
        if shaped:
            raise BadInput(f"{shaped[0]} shapes the wait for steady state: give --steady too")
        return None
    from iosched.core.load.steady import SteadyWait

    def given(value: float | None, default: int) -> int:
        return default if value is None else int(value)

    return SteadyWait(criterion=args.steady, window_s=given(args.steady_window, STEADY_WINDOW_S),
                      ramp_s=given(args.steady_ramp, STEADY_RAMP_S),
                      timeout_s=given(args.steady_timeout, STEADY_TIMEOUT_S)).check()


def plot_opts(s: argparse.ArgumentParser) -> None:
    s.add_argument("--plot", action="store_true", help="charts of the result at the terminal's width")
    s.add_argument("--plot-file", metavar="FILE", help="save the charts to FILE.html or FILE.txt")


def add_arguments(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("jobs", help="list the canned fio jobs")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=lazy_command("iosched.cli.workloads", "cmd_jobs"))

    def target_opts(s: argparse.ArgumentParser) -> None:
        s.add_argument("--job", required=False, help="catalog name (see `iosched jobs`) or a fio job file")
        s.add_argument("--runtime", type=parse_seconds, help="seconds per run (scales the job)")
        s.add_argument("--size", type=parse_size, help="bytes the job covers, e.g. 256M (scales the job)")
        s.add_argument("--dir", help="run on a scratch file in this directory (removed afterwards)")
        s.add_argument("--raw", action="store_true",
                       help="on a device with a filesystem mounted, run a read job on the raw device instead of a "
                            "scratch file on that filesystem (a write job there is refused; an unmounted device "
                            "is used raw anyway)")
        s.add_argument("--destroy-data", metavar="DEV",
                       help="allow a write job on the raw device although it holds data (name must match)")
        s.add_argument("--json", action="store_true", help="machine-readable result")

    s = sub.add_parser("run", help="run one workload on a device and show its effect")
    s.add_argument("device", help="whole-disk name, e.g. sda or nvme0n1")
    target_opts(s)
    s.set_defaults(func=lazy_command("iosched.cli.workloads", "cmd_run"))

    s = sub.add_parser("compare", help="A/B/n experiment: schedulers (and tunings) under a workload or a matrix")
    s.add_argument("device", help="whole-disk name, e.g. sda or nvme0n1")
    s.add_argument("--schedulers",
                   help="comma-separated variants, e.g. none,bfq or none,mq-deadline:read_expire=100")
    target_opts(s)
    s.add_argument("--cmd", help=f"instead of a job: a shell command run and timed once per repeat, {RUNS_AS}")
    s.add_argument("--background", metavar="JOB",
                   help="with --cmd or --startup: a catalog job or job file loading the device while the command or "
                        "the start-up runs (started before it, ended after it, each run); its figures come out as "
                        "bg:iops, bg:clat_p99_us, ...; with --startup, a group or several jobs make a matrix")
    s.add_argument("--startup", nargs="?", const="bundled", metavar="FILE",
                   help="instead of a job: an application's start-up, a capture of its cold start (`capture --cmd CMD "
                        "--cold -o FILE`; bundled or python-imports, or the flag alone: the one iosched ships, a cold "
                        "Python start), replayed onto the device each run, its requests in order, one at a time, as "
                        "fast as each completes, beside --background JOB (or --jobs GROUP: startup-under-load is the S "
                        "suite's table); judged on startup_s, the background's cost as bg:METRIC; caches dropped "
                        "before each run; its offsets folded into the device; a capture with writes only where writes "
                        "may go")
    s.add_argument("--startup-cap", type=number(2, 1000), default=50.0, metavar="N",
                   help="with --startup: a run whose start-up takes longer than N times its time alone (measured once "
                        "at the start; at least 2 s) is ended there and counted at the cap, a lower bound (default "
                        "50)")
    s.add_argument("--cmd-metric", action="append", metavar="NAME=REGEX[:higher|lower]",
                   help="with --cmd: a figure read from the command's output after each run (the last match; its "
                        "group, else the match), e.g. 'tps=tps = ([0-9.]+):higher' (which way is better); repeatable; "
                        "the first is the primary metric unless --metric says otherwise; a run without it is invalid")
    s.add_argument("--jobs", metavar="GROUP|JOB,...",
                   help="a matrix: a catalog group (`iosched jobs`) or a comma-separated list of jobs and job files")
    s.add_argument("--study", metavar="FILE",
                   help="a matrix of fio jobs and commands from a TOML study file ([[workload]] tables with job = "
                        f"or cmd =, each command run {RUNS_AS}), one report; see docs/recipes.md, \"One study, one "
                        "command\"")
    s.add_argument("--resume", metavar="FILE", help="continue an interrupted matrix saved in FILE")
    s.add_argument("--max-time", type=parse_seconds, metavar="S",
                   help="refuse a compare or a matrix estimated to take longer (a --fill to its time bound, "
                        "each --steady wait to its timeout)")
    s.add_argument("--repeat", type=REPEAT, default=None, help="runs per variant (default 3)")
    s.add_argument("--trace", action=argparse.BooleanOptionalAction, default=False,
                   help="block-layer tracing over every run: time in the scheduler and device time per variant "
                        "(per workload and variant in a matrix; `report --plot` draws them) (iosched's CO-RE "
                        "tracer, else bpftrace; root; adds CPU per IO, so it is off by default)")
    s.add_argument("--drop-caches", action=argparse.BooleanOptionalAction, default=None,
                   help="sync and drop caches before each run (a group may turn it on: --no-drop-caches)")
    s.add_argument("--settle", type=SETTLE, default=1.0, help="seconds of quiet before each run (default 1)")
    s.add_argument("--alpha", type=ALPHA, default=0.05, help="significance level (default 0.05)")
    conditions_opts(s)
    s.add_argument("--margin", type=MARGIN, default=0.10, metavar="PCT",
                   help="a difference that matters, in percent: a comparison not significant is equal when its 90%% "
                        "interval lies within ±PCT, else cannot tell (default 10)")
    s.add_argument("--metric", help="the primary metric the verdict is about (default: the job's own, iops, or mb_s "
                                    "for a sequential bandwidth job; wall_s for --cmd): "
                                    + ", ".join(METRIC_NAMES))
    s.add_argument("--plan", action="store_true",
                   help="plan before running: a pilot of 2 runs per variant measures the noise, then prints how "
                        "many runs (and minutes) a 10%%, 20%% or 30%% difference would need; nothing is saved")
    s.add_argument("--until-verdict", action="store_true",
                   help="sequential: stop as soon as the primary metric crosses a boundary that keeps the overall "
                        "false-positive rate at alpha (at most --max-runs per variant, or --duration)")
    s.add_argument("--max-runs", type=number(4, params.MOST_PER_ARM, integer=True), default=20,
                   help="with --until-verdict: most runs per variant (default 20)")
    s.add_argument("--replay", metavar="FILE",
                   help="instead of a job: replay a capture (`iosched capture`) onto the device each run; a capture "
                        "with writes only where writes may go (refused on a mounted device; a device holding data "
                        "needs --destroy-data DEV)")
    s.add_argument("--replay-mode", choices=("fast", "timed"), default="fast",
                   help="fast: in order, as fast as the device allows, judged on MB/s (default); timed: at the "
                        "captured times, judged on p99 latency; each timed run shows how far it fell behind the "
                        "capture's timing (replay lag), and one more than a tenth of the capture's span behind "
                        "(at least 1 s) is invalid: its latencies are not the captured workload's")
    s.add_argument("--replay-fit", action="store_true",
                   help="fold a capture's offsets into a smaller device, modulo its size (else it is refused: "
                        "offsets are replayed as captured); runs stay sequential, distant regions share blocks")
    s.add_argument("--hosts", metavar="FILE|H1,H2,…",
                   help="the compare on every host at once over SSH (your keys and ssh config): each variant "
                        "switched on every host together by its own iosched, the load driven by fio's client "
                        "through a fio server on each; judged per host and pooled (with --jobs: a fleet per job, Holm "
                        "over the matrix); FILE: one host a line, HOST [DEVICE] [-p PORT] [-l USER] [-i KEYFILE]")
    s.add_argument("--independent", action="store_true",
                   help="with --hosts: each host runs the whole compare by itself, at its own pace (no fio server, "
                        "no forwarding; takes --until-verdict and --drop-caches)")
    s.add_argument("--remote-iosched", default="iosched", metavar="PATH",
                   help="with --hosts: the iosched command on the hosts (default: iosched on their PATH)")
    s.add_argument("--ssh", default="ssh", help=argparse.SUPPRESS)  # tests: another ssh client
    s.add_argument("--alternate", type=parse_seconds, metavar="S",
                   help="live alternation: one continuous run, switching every S seconds")
    s.add_argument("--duration", type=parse_seconds, default=60.0, help="length of a live alternation (default 60s)")
    s.add_argument("--csv", action="store_true", help="one row per run")
    s.add_argument("--details", action="store_true",
                   help="every metric's table, every comparison, the charts and each run's line (default: the "
                        "verdict, one table of the figures that decide it with each run as a dot, the trade-offs)")
    s.add_argument("--save", help="write everything needed to re-judge to this JSON file (after every run)")
    plot_opts(s)
    s.set_defaults(func=lazy_command("iosched.cli.workloads", "cmd_compare"))

    s = sub.add_parser("capture", help="record a device's requests, or the IO one command does, into a capture to "
                                      "replay (fio iolog v3)")
    s.add_argument("device", nargs="?",
                   help="whole-disk name, e.g. sda or nvme0n1; with --cmd, the one disk to keep to (else the disk its "
                        "program is on, said at the start)")
    s.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="the iolog to write (a new file); its metadata goes to FILE.meta.json")
    s.add_argument("--cmd", metavar="CMD",
                   help=f"run this shell command line ({RUNS_AS}; its output on stderr, its stdin "
                        "/dev/null) and record only the IO its own "
                        "processes submit, on whichever disks, each line naming its disk: the reads, readahead, page "
                        "faults and direct IO of its start, say. Writes it leaves in the page cache reach the disk "
                        "later from the kernel's writeback threads and are not its lines (the metadata sets what was "
                        "seen beside what the kernel charged it). Its whole run or nothing: a command still running at "
                        "--duration, or whose IO outgrows --max-size, is ended with every process it started and "
                        "nothing is written (exit 2), as for one that did no IO")
    s.add_argument("--cold", action="store_true",
                   help="with --cmd: sync and drop the page cache first, so the command starts cold")
    s.add_argument("--every-disk", action="store_true",
                   help="with --cmd: its IO on every disk, each line naming its own (for report; a replay takes one "
                        "disk's)")
    s.add_argument("--duration", type=parse_seconds, default=60.0, help="seconds to capture (default 60; Ctrl-C "
                   "ends it sooner and keeps what was captured); with --cmd, the longest the command may run")
    s.add_argument("--max-size", type=flag_type(params.parse_capture_size), default=parse_size("1G"),
                   help="stop when the iolog reaches this size (default 1G, about 25 million requests)")
    s.add_argument("--json", action="store_true", help="the capture's metadata as JSON")
    s.set_defaults(func=lazy_command("iosched.cli.capture", "cmd_capture"))

    s = sub.add_parser("report", help="show a saved experiment, a recording or a capture again")
    s.add_argument("file", nargs="+",
                   help="a file saved by compare --save, a recording, or a capture; several saved compares of "
                        "the same variants (one per host) are judged per host and pooled")
    s.add_argument("--alpha", type=ALPHA, default=0.05, help="significance level (default 0.05)")
    s.add_argument("--margin", type=MARGIN, default=0.10, metavar="PCT",
                   help="equal within ±PCT percent, as compare --margin (default 10)")
    s.add_argument("--metric", help="judge this primary metric instead of the saved one")
    s.add_argument("--json", action="store_true",
                   help="JSON: an experiment's verdict and comparisons, or a recording's intervals")
    s.add_argument("--csv", action="store_true", help="CSV: one row per run, or per interval of a recording")
    s.add_argument("--details", action="store_true",
                   help="an experiment's every metric, every comparison and the charts (default: its summary)")
    s.add_argument("--markdown", metavar="FILE",
                   help="a compare's, a matrix's or an advice's answer, conditions and evidence (per variant and "
                        "every run, collapsed) as markdown a tracker comment holds ('-': stdout)")
    plot_opts(s)
    s.set_defaults(func=lazy_command("iosched.cli.workloads", "cmd_report"))
