"""`iosched jobs`, `run`, `compare` and `report`: workloads and experiments from the command line."""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from iosched import __version__
from iosched.cli.leftovers import owed_said
from iosched.cli.markdown_page import write_markdown
from iosched.cli.matrix import bound_words, build_plan, check_plot_file, cmd_matrix, plot_result, render_matrix
from iosched.cli.progress import ProgressPrinter
from iosched.cli.terminal import fitted, rewrite_line
from iosched.cli.workload_args import steady_wait
from iosched.core.base.encode import encode
from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.base.infile import read_bounded
from iosched.core.base.units import human_size, si
from iosched.core.documents.document import ExperimentDoc, JudgementDoc, MatrixDoc
from iosched.core.documents.metrics import METRIC_NAMES, is_metric, metric_label
from iosched.core.documents.params import MOST_PER_ARM, Variant, parse_variants
from iosched.core.documents.saved import MAX_SAVED_BYTES, decode_json, kind_of, read_experiment
from iosched.core.experiment import service
from iosched.core.experiment.alternation import AlternationPlan
from iosched.core.experiment.cmd_metrics import CmdMetric, parse_cmd_metrics
from iosched.core.experiment.compare import ComparePlan
from iosched.core.experiment.control import Cancelled
from iosched.core.experiment.local_plan import LocalPlan, TargetRequest
from iosched.core.experiment.matrix import RUN_OVERHEAD_S, MatrixPlan, decode_matrix, format_duration
from iosched.core.experiment.results import check_save_path
from iosched.core.experiment.runner import Workload
from iosched.core.experiment.service import all_invalid
from iosched.core.experiment.variants import check_variants
from iosched.core.live.sampler import Sampler, compute_rates
from iosched.core.load.fill import fill_most_s
from iosched.core.load.fio import FioProgress, fio_binary
from iosched.core.load.fio_group import check_cgroup_jobs, run_fio
from iosched.core.load.iolog import is_capture
from iosched.core.load.jobs import CATALOG, GROUPS, Job, JobFile, load_job, space_needed
from iosched.core.load.replay import ReplayRequest
from iosched.core.load.startup_replay import StartupJob, startup_job
from iosched.core.load.targets import Target, choose_target
from iosched.core.present.report import experiment_json, runs_csv, text_report
from iosched.core.present.result_file import ResultFile
from iosched.core.present.sentences import pilot_lines
from iosched.core.present.summary import MORE
from iosched.core.settings.device_lock import load_lock
from iosched.core.settings.scheduler import available_schedulers
from iosched.core.settings.writes import owed_write
from iosched.core.statistics import planning
from iosched.core.statistics.matrix_judge import judge_matrix
from iosched.core.statistics.outcome import with_margin
from iosched.core.statistics.planning import PILOT_RUNS
from iosched.core.statistics.verdict import cmd_metrics_of, judge

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
        # What a verdict is about where that is not IOPS: on a line of its own beside what a job shows.
        judged = f"judged on {metric_label(j.primary)} ({j.primary})" if j.primary else ""
        print(fitted(f"  {j.name:<24} {flag} {j.runtime:>4.0f}s {human_size(j.size):>7}  {j.description}"
                     + (f"; {judged}" if judged and not j.shows else ""), 44))  # the description under itself
        if j.shows:
            print(f"      shows {j.shows}\n      {judged or 'judged on IOPS (iops)'}")
    print("\ngroups (compare DEV --schedulers A,B --jobs GROUP):")
    for g in GROUPS.values():
        print(fitted(f"  {g.name:<22} {len(g.jobs):>2} jobs  {g.description}", 33))
    print("\nW = writes (refused on a raw device that holds data). Scale with --runtime and --size.")
    print("Jobs with roles (fg, bg, ...) are judged per role: --metric ROLE:METRIC, e.g. fg:clat_p99_us.")
    return 0


# --- shared -------------------------------------------------------------------------------------------------


def _job(args: argparse.Namespace, runtime: float | None) -> tuple[Job | JobFile | None, float | None]:
    """The job named by --job (a catalog job scaled by --runtime and --size), or None for --cmd; and the
    runtime a job file gets."""
    if getattr(args, "cmd", None):
        if args.job or getattr(args, "replay", None):
            raise BadInput("give one of --job, --cmd and --replay")
        return None, None
    if getattr(args, "startup", None) is not None:
        if args.job:
            raise BadInput("give either --job or --startup, not both")
        if args.dir:
            raise BadInput("a start-up is replayed on the raw device: --dir does not apply")
        fio_binary()
        return startup_job(args.startup, _background(args), args.startup_cap), None  # its capture: the service's
    if getattr(args, "replay", None):
        if args.job:
            raise BadInput("give either --job or --replay, not both")
        if args.dir or args.size:
            raise BadInput("a replay runs on the raw device at the captured offsets: --dir and --size do not apply")
        fio_binary()
        return None, runtime  # the service checks and copies the capture (ComparePlan.replay)
    if not args.job:
        raise BadInput("--job NAME|FILE is required (`iosched jobs` lists the names)")
    job = load_job(args.job)
    fio_binary()  # fio missing: say so before anything is touched
    if isinstance(job, Job):
        return job.scaled(runtime=runtime, size=args.size), None
    return job, runtime


def _background(args: argparse.Namespace) -> Job | JobFile | None:
    """The job --background names (a catalog job scaled by --size), run beside --cmd; None without one."""
    if not args.background:
        return None
    job = load_job(args.background)
    fio_binary()  # fio missing: say so before anything is touched
    return job.scaled(size=args.size) if isinstance(job, Job) else job


def _workload(args: argparse.Namespace) -> Workload:
    job, runtime = _job(args, args.runtime)
    if job is None:
        return Workload(cmd=args.cmd)
    size = args.size
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


def one_load_per_device(what: str) -> Callable[[Callable[[argparse.Namespace], int]], Callable[..., int]]:
    """The command holds its device's load lock (core/settings/device_lock.py) from start to end."""
    def wrap(cmd: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        @functools.wraps(cmd)
        def locked(args: argparse.Namespace) -> int:
            with load_lock(args.device, what, args.root):
                return cmd(args)
        return locked
    return wrap


@one_load_per_device("run")
def cmd_run(args: argparse.Namespace) -> int:
    if args.job:
        check_cgroup_jobs([load_job(args.job)], args.root)  # refused before a target is chosen: nothing changed
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
            if tty:
                rewrite_line(sys.stderr, line)
            else:
                print(line, file=sys.stderr, flush=True)

    target: Target = wl.target
    try:
        res = run_fio(wl.job, target, wl.runtime, progress, root=args.root)
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


def _check_metric(name: str | None, declared: list[CmdMetric] | None = None) -> None:
    """--metric: one iosched measures (ROLE:METRIC too), or a figure a --cmd-metric reads."""
    if name is None or name in [m.name for m in declared or []] or is_metric(name):
        return
    more = f", or a --cmd-metric: {', '.join(m.name for m in declared)}" if declared else ""
    raise BadInput(f"unknown --metric {name!r}; one of: {', '.join(METRIC_NAMES)}{more}")


def cmd_compare(args: argparse.Namespace) -> int:
    if args.hosts and args.startup is not None:
        raise BadInput("--startup runs on this machine's device: --hosts does not apply")
    if args.hosts and (args.fill is not None or args.steady is not None):
        raise BadInput("--fill and --steady prepare this machine's device and runs: --hosts does not take them yet")
    steady_wait(args)  # its flags checked together, before anything is read from the device
    if args.hosts:
        from iosched.cli.fleet_matrix import cmd_hosts

        return cmd_hosts(args)
    reads = parse_cmd_metrics(args.cmd_metric)
    if reads and not args.cmd:
        raise BadInput("--cmd-metric reads a figure from a command's output: give --cmd too")
    _check_metric(args.metric, reads)
    check_plot_file(args.plot_file)
    if args.trace and args.alternate:
        raise BadInput("--trace applies to repeated runs and matrices, not to live alternation")
    if args.resume:
        # The whole file (and its fit to this device) is checked before the device is locked or anything runs;
        # it is read again under the locks, so a file changed meanwhile is checked again.
        build_plan(args)
    if args.startup is not None:
        _check_startup(args)
        loads = args.jobs or args.background
        if loads and ("," in loads or loads in GROUPS):  # several backgrounds: a matrix, a row each
            args.jobs, args.background = loads, None
    elif args.background and not args.cmd:
        raise BadInput("--background loads the device while a command or a start-up runs: give --cmd or --startup "
                       "too")
    if args.plan:
        for flag, given in (("--jobs", args.jobs), ("--study", args.study), ("--resume", args.resume),
                            ("--alternate", args.alternate),
                            ("--until-verdict", args.until_verdict), ("--save", args.save is not None),
                            ("--repeat", args.repeat is not None), ("--plot", args.plot or args.plot_file)):
            if given:
                raise BadInput(f"--plan runs its own short pilot of a compare: {flag} does not apply")
    if args.replay_fit and not args.replay:
        raise BadInput("--replay-fit scales a capture's offsets: give --replay FILE too")
    if args.replay:
        for flag, given in (("--jobs", args.jobs), ("--study", args.study), ("--resume", args.resume),
                            ("--alternate", args.alternate), ("--background", args.background)):
            if given:
                raise BadInput(f"--replay replays one capture per run: {flag} does not apply")
    if args.jobs or args.resume or args.study:
        return cmd_matrix(args)
    if args.plan:
        if args.max_time is not None:
            raise BadInput("--plan runs its own short pilot of a compare: --max-time does not apply")
        return _plan(args)
    plan = _compare_plan(args)
    est = compare_estimate(plan)
    if args.max_time is not None and est is None:
        raise BadInput("--max-time bounds what can be estimated, and this compare's time cannot be: a command's time, "
                       "or a replay's, is its own")
    if args.max_time is not None and est is not None and est > args.max_time:
        scale = "--max-runs or --runtime" if plan.until_verdict else "--runtime or --repeat"
        raise BadInput(f"the compare exceeds --max-time {format_duration(args.max_time)}: it could take "
                       f"{bound_words(est, plan.steady is not None, plan.fill is not None)}; scale it with {scale}")
    saver = ResultFile(Path(args.save), keep_empty=True) if args.save else None

    def announce(target: Target) -> None:  # after the service's checks: a refused plan says only why
        _say_target(target)
        if not (args.json or args.csv):
            print(f"iosched: {compare_words(plan, est)}", file=sys.stderr)

    plan.on_target = announce
    own = plan.cmd_metrics if isinstance(plan, ComparePlan) else []
    printer = ProgressPrinter(quiet=args.json or args.csv, lines=args.details, own=own)
    runs: LocalPlan[Any] = plan  # either kind runs through the service alike
    start = _scheduler_now(plan.device, args.root)
    with owed_said(plan.device, args.root):
        try:
            outcome = service.run(runs, saver, printer)
        except (KeyboardInterrupt, SystemExit) as e:  # before any run finished: put back, nothing to keep
            printer.close()
            print(_interrupted(e, plan.device, start, args.root, 0, None), file=sys.stderr)
            raise
        finally:
            printer.close()  # the live line: the result follows on a clean screen
    if outcome.status != "final":
        if outcome.save_error:
            _save_warning(outcome.save_error)
        if isinstance(outcome.error, (KeyboardInterrupt, SystemExit)):
            print(_interrupted(outcome.error, plan.device, start, args.root, outcome.finished_runs,
                               outcome.saved if saver is not None else None, bool(outcome.save_error)),
                  file=sys.stderr)
        elif saver is not None and outcome.saved is not None:
            print(f"iosched: the {outcome.finished_runs} finished run(s) were saved to {args.save} "
                  "(status: cancelled)", file=sys.stderr)
        raise outcome.error or Cancelled(outcome.reason or "cancelled")
    if outcome.save_error:
        _save_warning(outcome.save_error)  # a failed save still shows the result
    doc = outcome.doc
    assert not isinstance(doc, MatrixDoc) and doc.judgement is not None  # a compare with runs is judged
    judged = with_margin(doc.judgement, args.margin)  # equal within --margin, else cannot tell: said, exit unchanged
    _render(doc, judged, args)
    plot_result(doc, judged, args)
    _said_saved(outcome.saved if saver is not None and not outcome.save_error else None)
    return 2 if outcome.save_refused else 1 if outcome.save_error or all_invalid(doc) else 0


def _said_saved(path: Path | None) -> None:
    """--save: the file written, named last on stderr (stdout stays the answer)."""
    if path is not None:
        print(f"iosched: saved to {path}", file=sys.stderr)


def _scheduler_now(device: str, root: str | Path) -> str | None:
    with contextlib.suppress(IoschedError):
        return available_schedulers(device, root)[0]
    return None


def _interrupted(how: BaseException, device: str, start: str | None, root: str | Path, finished: int,
                 saved: Path | None, save_failed: bool = False) -> str:
    """One line after Ctrl-C (or SIGTERM, SIGHUP): what was put back, and what was kept of the runs."""
    now = _scheduler_now(device, root)
    with contextlib.suppress(IoschedError):
        if owed_write(device, root) is not None:
            now = None  # a write the kernel has not returned from: said on a line of its own (owed_said)
    what = "interrupted" if isinstance(how, KeyboardInterrupt) else "stopped"
    back = (f"{device} is back on {start} as it was" if now is not None and now == start else
            f"{device} is on {now}, not {start}: `iosched restore` puts it back" if now is not None and start else
            f"{device} may not be back as it was")
    runs = f"{finished} finished run{'s' if finished != 1 else ''}"
    kept = ("no run had finished: nothing to save" if not finished else
            f"its {runs} could not be saved (the warning above says why)" if save_failed else
            f"its {runs} saved in {saved} (`iosched report {saved}` shows them)" if saved is not None else
            f"its {runs} not saved (--save FILE keeps a compare's runs)")
    return f"iosched: {what}: {back}; {kept}"


def _check_startup(args: argparse.Namespace) -> None:
    """--startup: what does not go with it, refused before anything runs."""
    for flag, given in (("--cmd", args.cmd), ("--replay", args.replay), ("--job", args.job), ("--study", args.study),
                        ("--alternate", args.alternate), ("--dir", args.dir)):
        if given:
            raise BadInput(f"--startup replays a start-up beside a background: {flag} does not apply")
    if args.jobs and args.background:
        raise BadInput("--startup is replayed beside --background JOB or beside each of --jobs: give one of them")
    if args.drop_caches is False:
        raise BadInput("--startup is replayed cold: caches are dropped before each run, --no-drop-caches does not "
                       "apply")


def _plan(args: argparse.Namespace) -> int:
    """--plan: the pilot (2 runs per variant, the device put back after), then the runs each difference needs."""
    args.repeat = PILOT_RUNS
    plan = _compare_plan(args)
    assert isinstance(plan, ComparePlan)  # --alternate is refused with --plan
    what = plan.job.name if plan.job else f"the replay of {args.replay}" if args.replay else "the command"
    print(f"iosched: pilot: {PILOT_RUNS} runs per variant of {what}, to "
          "measure the noise", file=sys.stderr)
    plan.on_target = _say_target
    printer = ProgressPrinter(quiet=args.json, lines=args.details, own=plan.cmd_metrics)
    try:
        outcome = service.run(plan, None, printer)
    finally:
        printer.close()
    if outcome.status != "final":
        raise outcome.error or Cancelled(outcome.reason or "cancelled")
    assert not isinstance(outcome.doc, MatrixDoc)
    table = planning.plan(outcome.doc, plan.primary, args.alpha)
    if args.json:
        print(json.dumps(encode(table), indent=1))
    else:
        print("\n".join(pilot_lines(table)))
    return 0


def _compare_plan(args: argparse.Namespace) -> ComparePlan | AlternationPlan:
    """The command line's compare (repeated runs or live alternation), checked, as the service's plan."""
    if not args.schedulers:
        raise BadInput("--schedulers is required (e.g. none,bfq)")
    variants: list[Variant] = parse_variants(args.schedulers)
    repeat = 3 if args.repeat is None else args.repeat
    if repeat < 1 or repeat > 1000:
        raise BadInput(f"--repeat must be at least 1 and at most 1000, not {repeat}")
    if args.until_verdict and not 4 <= args.max_runs <= MOST_PER_ARM:
        raise BadInput(f"--max-runs must be at least 4 and at most {MOST_PER_ARM}, not {args.max_runs}")
    if args.save is not None:  # '' too: refused, never silently not saved
        check_save_path(args.save)
    check_variants(args.device, variants, args.root)
    most = None
    if args.until_verdict:
        # Alternation: blocks of two passes over the variants fit in --duration; batch: runs per variant.
        most = int(args.duration // args.alternate) // len(variants) // 2 if args.alternate else args.max_runs
        if most < 3:
            raise BadInput("--until-verdict with --alternate needs a --duration of at least three blocks "
                           f"({6 * len(variants) * args.alternate:g} s)")
    runtime = args.runtime
    if args.alternate:
        if args.cmd:
            raise BadInput("--alternate needs a --job (one continuous fio run), not --cmd")
        if args.runtime is not None:
            raise BadInput("--alternate runs for --duration; --runtime does not apply")
        runtime = args.duration + 10.0  # fio outlives the last turn and is stopped then
    job, runtime = _job(args, runtime)
    target = TargetRequest(args.dir, args.raw or bool(args.replay), args.destroy_data,
                           default_size=args.size or 1 << 30)
    if args.alternate:
        return AlternationPlan(args.device, variants, job=job, runtime=runtime, every=args.alternate,
                               duration=args.duration, alpha=args.alpha, metric=args.metric, until_verdict=most,
                               root=args.root, target=target, fill=args.fill, steady=steady_wait(args))
    return ComparePlan(
        args.device, variants, job=job, cmd=args.cmd or None,
        background=_background(args) if args.cmd else None, cmd_metrics=parse_cmd_metrics(args.cmd_metric),
        replay=ReplayRequest(args.replay, args.replay_mode, args.replay_fit) if args.replay else None,
        runtime=runtime, repeat=repeat, drop_caches=bool(args.drop_caches) or isinstance(job, StartupJob),
        settle=args.settle, alpha=args.alpha, metric=args.metric, until_verdict=most, trace=args.trace,
        root=args.root, target=target, fill=args.fill, steady=steady_wait(args))


def compare_estimate(plan: ComparePlan | AlternationPlan) -> float | None:
    """Seconds a compare may take, as a matrix of its one workload estimates it (at most, until a verdict); None
    when unknown: a command's time, or a replay's, is its own."""
    est: float | None
    if isinstance(plan, AlternationPlan):
        est = plan.duration + plan.settle + RUN_OVERHEAD_S
    elif plan.job is None:
        return None
    else:
        est = MatrixPlan(plan.variants, [plan.job], plan.until_verdict or plan.repeat, plan.drop_caches, plan.settle,
                         plan.runtime, steady=plan.steady).estimate()  # each wait for steady state to its timeout
    if est is not None and plan.fill is not None:
        est += fill_most_s(plan.device, plan.fill, plan.root)  # the fill to its time bound
    return est


def compare_words(plan: ComparePlan | AlternationPlan, est: float | None) -> str:
    """"compare of 3 variants x 3 runs = 9 runs; estimated about 45 s": what a compare will do, before it does."""
    k = len(plan.variants)
    if isinstance(plan, AlternationPlan):
        what = f"live alternation of {k} variants every {plan.every:g} s for {format_duration(plan.duration)}"
    elif plan.until_verdict:
        what = f"compare of {k} variants until a verdict: at most {plan.until_verdict} runs each"
    else:
        what = f"compare of {k} variants x {plan.repeat} runs = {k * plan.repeat} runs"
    if plan.drop_caches:
        what += ", caches dropped before each"
    eta = ("unknown (a command's time, or a replay's, is its own)" if est is None else
           f"at most {format_duration(est)}" if plan.until_verdict else
           bound_words(est, plan.steady is not None, plan.fill is not None))
    return f"{what}; estimated {eta}"


def _say_target(target: Target) -> None:
    if target.note:
        print(f"iosched: {target.note}", file=sys.stderr)


def _save_warning(error: str, then: str = "") -> None:
    print(f"iosched: warning: the result could not be saved to {error}{then}", file=sys.stderr)


def cmd_report(args: argparse.Namespace) -> int:
    from iosched.cli.record import recording_report
    from iosched.core.live.recording import is_recording

    files = args.file if isinstance(args.file, list) else [args.file]
    markdown = getattr(args, "markdown", None)
    if markdown is not None:
        _check_markdown(args, markdown)
    if len(files) > 1 and markdown is not None:
        raise BadInput("--markdown shows one compare, matrix or advice: give one file")
    if len(files) > 1:
        from iosched.cli.pooled import pooled_report

        if args.csv or args.plot or args.plot_file:
            raise BadInput("several files are pooled into one verdict: --csv and --plot apply to one file")
        pooled_report(files, args)
        return 0
    args.file = files[0]
    if markdown is not None and (is_recording(args.file) or is_capture(args.file)):
        raise BadInput("--markdown shows a compare, a matrix or an advice: a recording or a capture has no verdict")
    if is_recording(args.file):
        _check_metric(args.metric)
        recording_report(args.file, args)
        return 0
    if is_capture(args.file):
        from iosched.cli.capture import capture_report

        if args.metric or args.plot or args.plot_file:
            raise BadInput("a capture has no runs to judge or chart: report shows what it holds")
        capture_report(args.file, args)
        return 0
    check_plot_file(args.plot_file)
    data = read_bounded(args.file, MAX_SAVED_BYTES, "experiment (--save) or recording")
    doc = decode_json(data, args.file, "experiment")
    kind = kind_of(doc)
    if markdown is not None and kind in ("fleet", "fleet_matrix"):
        raise BadInput("--markdown shows one host's result: report a host's compare (its --save) instead of a fleet's")
    if kind == "fleet":
        from iosched.cli.fleet import report_fleet

        _check_metric(args.metric)
        return report_fleet(doc, args)
    if kind == "fleet_matrix":
        from iosched.cli.fleet_matrix import report_fleet_matrix

        _check_metric(args.metric)
        report_fleet_matrix(doc, args)
        return 0
    if kind in ("advice", "advice_fleet"):
        from iosched.cli.advise import report_advice

        return report_advice(doc, args)
    if kind == "matrix":
        matrix = decode_matrix(doc, args.file)  # the whole file checked: what follows cannot meet a bad field
        _check_metric(args.metric)
        judged = judge_matrix(matrix, args.alpha, args.metric)
        if markdown is not None:
            from iosched.core.present.evidence import matrix_markdown

            write_markdown(markdown, matrix_markdown(matrix, judged, __version__))
            return 0
        render_matrix(matrix, judged, args)
        return 0
    experiment = read_experiment(doc, args.file)
    reads = [CmdMetric(name, "") for name in cmd_metrics_of(experiment)]  # its command's own figures may be named
    _check_metric(args.metric, reads)
    verdict = judge(experiment, args.alpha, args.metric, margin=getattr(args, "margin", 0.10))
    if markdown is not None:
        from iosched.core.present.evidence import experiment_markdown

        write_markdown(markdown, experiment_markdown(experiment, verdict, __version__))
        return 0
    _render(experiment, verdict, args, REPORT_MORE)
    plot_result(experiment, verdict, args)
    return 0


def _check_markdown(args: argparse.Namespace, markdown: str) -> None:
    """--markdown: a file it may write, and not stdout beside another output there."""
    if markdown != "-":
        check_save_path(markdown)
    elif args.json or args.csv or args.plot:
        raise BadInput("--json, --csv or --plot and --markdown - all write to stdout: give --markdown a file")
    if args.details:
        raise BadInput("--markdown holds the summary and every run: --details applies to the text report")


REPORT_MORE = "--details: every metric, every comparison and the charts; --json: all of it as data"


def _render(doc: ExperimentDoc, verdict: JudgementDoc, args: argparse.Namespace, more: str = MORE) -> None:
    """The result as --json, --csv, its summary (``more``: its last line, where the rest is) or --details."""
    if args.json:
        shown = replace(doc, primary_metric=verdict.primary_metric, status=verdict.status,
                        comparisons=verdict.comparisons, judgement=verdict)
        print(json.dumps(experiment_json(shown, verdict_last=doc.judgement is None), indent=1))
    elif args.csv:
        sys.stdout.write(runs_csv(doc))
    else:
        sys.stdout.write(text_report(doc, verdict, details=bool(getattr(args, "details", False)), more=more))
