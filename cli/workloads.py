"""`iosched jobs`, `run`, `compare` and `report`: workloads and experiments from the command line."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from iosched.core.errors import BadInput
from iosched.core.experiment import (
    Event,
    Variant,
    Workload,
    check_variants,
    parse_variants,
    run_alternation,
    run_experiment,
)
from iosched.core.fio import FioProgress, fio_binary, run_fio
from iosched.core.infile import read_bounded
from iosched.core.jobs import CATALOG, GROUPS, Job, load_job, space_needed
from iosched.core.matrix import load_matrix, plan_from_doc
from iosched.core.matrix_judge import as_matrix, judge_matrix
from iosched.core.sampler import Sampler, compute_rates
from iosched.core.saved import check_experiment
from iosched.core.targets import Target, choose_target
from iosched.core.units import human_size, si
from iosched.core.verdict import METRIC_NAMES, RunningVerdict, judge, sequential_plan
from iosched.matrix import check_plot_file, cmd_matrix, plot_result, render_matrix
from iosched.numbers import number
from iosched.report import runs_csv, text_report

MAX_EXPERIMENT_BYTES = 64 << 20
ALPHA = number(0, 0.5, lo_open=True, hi_open=True)
_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    unit = t[-1:] if t[-1:] in "kmgt" else ""
    try:
        value = float(t[: len(t) - len(unit)])
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 512M, 2G)") from None
    if not 0 < value * _SIZE_UNITS[unit] <= 1 << 50:  # nan and inf fail here too
        raise argparse.ArgumentTypeError(f"the size must be positive and at most 1 PiB, not {text[:40]}")
    return int(value * _SIZE_UNITS[unit])


def parse_seconds(text: str) -> float:
    t = text.strip().lower()
    mult = 60.0 if t.endswith("m") else 1.0
    t = t.rstrip("sm")
    try:
        value = float(t) * mult
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 10, 10s, 2m)") from None
    if not 0.5 <= value <= 24 * 3600:
        raise argparse.ArgumentTypeError("the duration must be between 0.5 s and 24 h")
    return value


def plot_opts(s: argparse.ArgumentParser) -> None:
    s.add_argument("--plot", action="store_true", help="charts of the result at the terminal's width")
    s.add_argument("--plot-file", metavar="FILE", help="save the charts to FILE.html or FILE.txt")


def add_arguments(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("jobs", help="list the canned fio jobs")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_jobs)

    def target_opts(s: argparse.ArgumentParser) -> None:
        s.add_argument("--job", required=False, help="catalog name (see `iosched jobs`) or a fio job file")
        s.add_argument("--runtime", type=parse_seconds, help="seconds per run (scales the job)")
        s.add_argument("--size", type=parse_size, help="bytes the job covers, e.g. 256M (scales the job)")
        s.add_argument("--dir", help="run on a scratch file in this directory (removed afterwards)")
        s.add_argument("--raw", action="store_true", help="use the raw device even when it is mounted (reads)")
        s.add_argument("--destroy-data", metavar="DEV",
                       help="allow a write job on the raw device although it holds data (name must match)")
        s.add_argument("--json", action="store_true", help="machine-readable result")

    s = sub.add_parser("run", help="run one workload on a device and show its effect")
    s.add_argument("device", help="whole-disk name, e.g. sda or nvme0n1")
    target_opts(s)
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("compare", help="A/B/n experiment: schedulers (and tunings) under a workload or a matrix")
    s.add_argument("device", help="whole-disk name, e.g. sda or nvme0n1")
    s.add_argument("--schedulers",
                   help="comma-separated variants, e.g. none,bfq or none,mq-deadline:read_expire=100")
    target_opts(s)
    s.add_argument("--cmd", help="instead of a job: a shell command run and timed once per repeat")
    s.add_argument("--jobs", metavar="GROUP|JOB,...",
                   help="a matrix: a catalog group (`iosched jobs`) or a comma-separated list of jobs and job files")
    s.add_argument("--resume", metavar="FILE", help="continue an interrupted matrix saved in FILE")
    s.add_argument("--max-time", type=parse_seconds, metavar="S", help="refuse a matrix estimated to take longer")
    s.add_argument("--repeat", type=number(1, 1000, integer=True), default=None, help="runs per variant (default 3)")
    s.add_argument("--trace", action=argparse.BooleanOptionalAction, default=False,
                   help="block-layer tracing over every run: time in the scheduler and device time per variant "
                        "(bpftrace, root; adds CPU per IO, so it is off by default)")
    s.add_argument("--drop-caches", action=argparse.BooleanOptionalAction, default=None,
                   help="sync and drop caches before each run (a group may turn it on: --no-drop-caches)")
    s.add_argument("--settle", type=number(0, 3600), default=1.0, help="seconds of quiet before each run (default 1)")
    s.add_argument("--alpha", type=ALPHA, default=0.05, help="significance level (default 0.05)")
    s.add_argument("--metric", help="the primary metric the verdict is about (default iops; wall_s for --cmd): "
                                    + ", ".join(METRIC_NAMES))
    s.add_argument("--until-verdict", action="store_true",
                   help="sequential: stop as soon as the primary metric crosses a boundary that keeps the overall "
                        "false-positive rate at alpha (at most --max-runs per variant, or --duration)")
    s.add_argument("--max-runs", type=int, default=20,
                   help="with --until-verdict: most runs per variant (default 20)")
    s.add_argument("--alternate", type=parse_seconds, metavar="S",
                   help="live alternation: one continuous run, switching every S seconds")
    s.add_argument("--duration", type=parse_seconds, default=60.0, help="length of a live alternation (default 60s)")
    s.add_argument("--csv", action="store_true", help="one row per run")
    s.add_argument("--save", help="write everything needed to re-judge to this JSON file (after every run)")
    plot_opts(s)
    s.set_defaults(func=cmd_compare)

    s = sub.add_parser("report", help="show a saved experiment or a recording again")
    s.add_argument("file", help="a file saved by compare --save, or a recording")
    s.add_argument("--alpha", type=ALPHA, default=0.05, help="significance level (default 0.05)")
    s.add_argument("--metric", help="judge this primary metric instead of the saved one")
    s.add_argument("--json", action="store_true",
                   help="JSON: an experiment's verdict and comparisons, or a recording's intervals")
    s.add_argument("--csv", action="store_true", help="CSV: one row per run, or per interval of a recording")
    plot_opts(s)
    s.set_defaults(func=cmd_report)


# --- jobs ---------------------------------------------------------------------------------------------------


def cmd_jobs(args: argparse.Namespace) -> int:
    if args.json:
        print(json.dumps([j.to_json() for j in CATALOG.values()], indent=1))
        return 0
    group = None
    for j in CATALOG.values():
        if j.group != group:
            group = j.group
            print(f"\n{group}:" if group != next(iter(CATALOG.values())).group else f"{group}:")
        flag = "W" if j.writes else " "
        print(f"  {j.name:<22} {flag} {j.runtime:>4.0f}s {human_size(j.size):>7}  {j.description}")
    print("\ngroups (compare DEV --schedulers A,B --jobs GROUP):")
    for g in GROUPS.values():
        print(f"  {g.name:<22} {len(g.jobs):>2} jobs  {g.description}")
    print("\nW = writes (refused on a raw device that holds data). Scale with --runtime and --size.")
    return 0


# --- shared -------------------------------------------------------------------------------------------------


def _workload(args: argparse.Namespace) -> Workload:
    if getattr(args, "cmd", None):
        if args.job:
            raise BadInput("give either --job or --cmd, not both")
        return Workload(cmd=args.cmd)
    if not args.job:
        raise BadInput("--job NAME|FILE is required (`iosched jobs` lists the names)")
    job = load_job(args.job)
    fio_binary()  # fio missing: say so before anything is touched
    runtime = args.runtime
    size = args.size
    if isinstance(job, Job):
        job = job.scaled(runtime=runtime, size=size)
        runtime = None
    target = choose_target(args.device, job.writes, args.dir, space_needed([job], size or 1 << 30),
                           raw=args.raw, destroy_data=args.destroy_data, root=args.root)
    if target.note:
        print(f"iosched: {target.note}", file=sys.stderr)
    return Workload(job=job, target=target, runtime=runtime)


def _live(p: FioProgress, dev_iops: float | None) -> str:
    lat = f"{p.clat_mean_us:.0f} µs" if p.clat_mean_us is not None else "-"
    dev = f"  device {si(dev_iops)} IOPS" if dev_iops is not None else ""
    return f"{p.elapsed:5.1f}s  fio {si(p.iops)} IOPS {p.mb_s:8.1f} MB/s  clat {lat}{dev}"


# --- run ----------------------------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    wl = _workload(args)
    assert wl.job is not None and wl.target is not None
    sampler = Sampler(args.root)
    last = [sampler.take()]
    tty = sys.stderr.isatty()

    def progress(p: FioProgress) -> None:
        s = sampler.take()
        d = compute_rates(last[0], s).disks.get(args.device)
        last[0] = s
        if not args.json:
            line = _live(p, d.r_s + d.w_s if d else None)
            print(("\r" + line + "\033[K") if tty else line, file=sys.stderr, end="" if tty else "\n", flush=True)

    target: Target = wl.target
    try:
        res = run_fio(wl.job, target, wl.runtime, progress)
    finally:
        target.release(args.root)
        if tty and not args.json:
            print(file=sys.stderr)
    if args.json:
        print(json.dumps({"device": args.device, "job": wl.job.to_json(), "target": target.to_json(),
                          "metrics": res.metrics(), "fio": res.raw}, indent=1))
        return 0
    m = res.metrics()
    print(f"{args.device} {wl.job.name} on {target.path}: {si(res.iops)} IOPS, {res.mb_s:.1f} MB/s, "
          f"clat mean {si(m['clat_mean_us'])} µs p99 {si(m['clat_p99_us'])} µs over {res.runtime_s:.1f} s")
    return 0


# --- compare / report ---------------------------------------------------------------------------------------


def _printer(quiet: bool, verdict: RunningVerdict | None = None):
    tty = sys.stderr.isatty()

    def on_event(e: Event) -> None:
        if quiet and e.kind != "note":
            return
        if e.kind == "progress" and e.progress is not None:
            total = f"{e.index + 1}/{e.total}" if e.total else f"{e.index + 1}"
            line = f"run {total} {e.variant:<14} " + _live(e.progress, None)
            print(("\r" + line + "\033[K") if tty else line, file=sys.stderr, end="" if tty else "\n", flush=True)
        elif e.kind == "run-end" and e.run is not None:
            m = e.run["metrics"]
            bad = "" if e.run["valid"] else f"  INVALID: {e.run['invalid_reason']}"
            main = f"IOPS {si(m.get('iops'))}" if "iops" in m else f"wall {m.get('wall_s', 0):.2f} s"
            line = f"run {e.index + 1}/{e.total} {e.variant:<14} {main}  CPU/IO {si(m.get('cpu_us_per_io'))} µs{bad}"
            print(("\r" + line + "\033[K") if tty else line, file=sys.stderr, flush=True)
            if verdict is not None:
                for text in verdict.lines():
                    print(f"    so far: {text}", file=sys.stderr, flush=True)
        elif e.kind == "note":
            print(f"iosched: {e.text}", file=sys.stderr, flush=True)
    return on_event


def _check_metric(name: str | None) -> None:
    if name is not None and name not in METRIC_NAMES:
        raise BadInput(f"unknown --metric {name!r}; one of: {', '.join(METRIC_NAMES)}")


def cmd_compare(args: argparse.Namespace) -> int:
    _check_metric(args.metric)
    if not 0 < args.alpha < 0.5:
        raise BadInput("--alpha must lie between 0 and 0.5")
    check_plot_file(args.plot_file)
    if args.trace and (args.jobs or args.resume or args.alternate):
        raise BadInput("--trace applies to repeated runs, not to a matrix or live alternation")
    if args.jobs or args.resume:
        return cmd_matrix(args)
    if args.max_time is not None:
        raise BadInput("--max-time applies to a matrix (--jobs)")
    if not args.schedulers:
        raise BadInput("--schedulers is required (e.g. none,bfq)")
    variants: list[Variant] = parse_variants(args.schedulers)
    args.repeat = 3 if args.repeat is None else args.repeat
    args.drop_caches = bool(args.drop_caches)
    if args.repeat < 1 or args.repeat > 1000:
        raise BadInput("--repeat must be between 1 and 1000")
    if args.until_verdict and not 4 <= args.max_runs <= 200:
        raise BadInput("--max-runs must be between 4 and 200")
    check_variants(args.device, variants, args.root)
    if args.save:
        _check_writable(args.save)
    quiet = args.json or args.csv
    metric = args.metric or ("wall_s" if args.cmd else "iops")
    labels = [v.label for v in variants]
    kind = "alternate" if args.alternate else "compare"
    plan = None
    if args.until_verdict:
        # Alternation: blocks of two passes over the variants fit in --duration; batch: runs per variant.
        most = int(args.duration // args.alternate) // len(variants) // 2 if args.alternate else args.max_runs
        if most < 3:
            raise BadInput("--until-verdict with --alternate needs a --duration of at least three blocks "
                           f"({6 * len(variants) * args.alternate:g} s)")
        plan = sequential_plan(most, args.alpha, len(variants), bool(args.alternate))
    running = RunningVerdict(labels, args.alpha, metric, kind, plan)
    stop = running.should_stop if plan else running.add_and_continue
    try:
        if args.alternate:
            if args.cmd:
                raise BadInput("--alternate needs a --job (one continuous fio run), not --cmd")
            if args.runtime is not None:
                raise BadInput("--alternate runs for --duration; --runtime does not apply")
            args.runtime = args.duration + 10.0  # fio outlives the last turn and is stopped then
            wl = _workload(args)
            doc = run_alternation(args.device, variants, wl, args.alternate, args.duration, root=args.root,
                                  on_event=_printer(quiet, running), stop=stop, sequential=plan)
        else:
            wl = _workload(args)
            repeat = args.max_runs if plan else args.repeat
            doc = run_experiment(args.device, variants, wl, repeat, args.drop_caches, args.settle, args.root,
                                 _printer(quiet, running), stop=stop, sequential=plan, trace=args.trace)
    except BaseException as e:
        partial = getattr(e, "partial_doc", None)
        if args.save and partial is not None and partial["runs"]:
            partial["primary_metric"] = metric
            partial["judgement"] = judge(partial, args.alpha, metric)
            Path(args.save).write_text(json.dumps(partial))
            print(f"iosched: the {len(partial['runs'])} finished run(s) were saved to {args.save} "
                  "(status: cancelled)", file=sys.stderr)
        raise
    doc["primary_metric"] = metric
    verdict = judge(doc, args.alpha, metric)
    doc["judgement"] = verdict
    if args.save:
        Path(args.save).write_text(json.dumps(doc))
    _render(doc, verdict, args)
    if args.plot or args.plot_file:
        matrix_view = as_matrix(doc)
        plot_result(matrix_view, judge_matrix(matrix_view, args.alpha), args)
    return 1 if not any(r.get("valid", True) for r in doc["runs"]) else 0


def _check_writable(path: str) -> None:
    p = Path(path)
    if p.is_dir() or not p.parent.is_dir():
        raise BadInput(f"cannot save to {path}: not a file in an existing directory")


def cmd_report(args: argparse.Namespace) -> int:
    from iosched.core.recording import is_recording, load
    from iosched.record import recording_report

    _check_metric(args.metric)
    if is_recording(args.file):
        recording_report(load(args.file), args)
        return 0
    data = read_bounded(args.file, MAX_EXPERIMENT_BYTES, "experiment (--save) or recording")
    try:
        doc = json.loads(data)
    except ValueError as e:
        raise BadInput(f"{args.file} is not a saved iosched experiment ({e.__class__.__name__})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("runs"), list) or not doc.get("variants"):
        raise BadInput(f"{args.file} is not a saved iosched experiment (no runs or variants)")
    check_plot_file(args.plot_file)
    if doc.get("kind") == "matrix":
        doc = load_matrix(args.file)
        try:
            plan_from_doc(doc)
            judgement = judge_matrix(doc, args.alpha, getattr(args, "metric", None))
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            raise BadInput(f"{args.file} is not a saved iosched matrix (bad {e})") from None
        render_matrix(doc, judgement, args)
        return 0
    doc = check_experiment(doc, args.file)
    try:
        verdict = judge(doc, args.alpha, args.metric)
        matrix_view = as_matrix(doc) if args.plot or args.plot_file else None
        judgement = judge_matrix(matrix_view, args.alpha, args.metric) if matrix_view else None
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise BadInput(f"{args.file} is not a saved iosched experiment (bad {e})") from None
    _render(doc, verdict, args)
    if matrix_view is not None and judgement is not None:
        plot_result(matrix_view, judgement, args)
    return 0


def _render(doc: dict, verdict: dict, args: argparse.Namespace) -> None:
    if args.json:
        out = {k: v for k, v in doc.items() if k != "runs"}
        out["primary_metric"] = verdict["primary_metric"]
        out["status"] = verdict["status"]
        out["comparisons"] = verdict["comparisons"]
        out["runs"] = doc["runs"]
        out["judgement"] = verdict
        print(json.dumps(out, indent=1))
    elif args.csv:
        sys.stdout.write(runs_csv(doc))
    else:
        sys.stdout.write(text_report(doc, verdict))
