"""`iosched compare DEV --jobs GROUP|JOB,...`: matrix experiments, their table, sentences, JSON/CSV and charts."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from iosched.cli.leftovers import owed_said
from iosched.cli.progress import ProgressPrinter
from iosched.cli.terminal import control
from iosched.cli.workload_args import steady_wait
from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.base.outfile import write_file
from iosched.core.base.terminal_text import holds_control, printable_text
from iosched.core.documents.document import AlternationDoc, CompareDoc, JudgementDoc, MatrixDoc, MatrixJudgementDoc
from iosched.core.documents.params import MOST_PER_ARM, Variant, parse_variants
from iosched.core.experiment import service
from iosched.core.experiment.control import Cancelled
from iosched.core.experiment.local_plan import TargetRequest
from iosched.core.experiment.matrix import (
    MatrixPlan,
    MatrixRunPlan,
    check_resumable,
    done_slots,
    format_duration,
    load_matrix,
)
from iosched.core.experiment.results import check_save_path
from iosched.core.experiment.service import all_invalid
from iosched.core.experiment.study import CmdJob, read_study
from iosched.core.experiment.variants import check_variants
from iosched.core.load.fill import fill_most_s
from iosched.core.load.fio import fio_binary
from iosched.core.load.jobs import Job, JobFile, JobGroup, resolve_jobs, space_needed
from iosched.core.load.startup_replay import startup_job
from iosched.core.load.targets import Target
from iosched.core.present.matrix import matrix_csv, matrix_text
from iosched.core.present.result_file import ResultFile
from iosched.core.present.worded import worded_json

# --- the command --------------------------------------------------------------------------------------------


def _requested_jobs(args: argparse.Namespace) -> tuple[list[Job | JobFile | CmdJob], JobGroup | None]:
    if getattr(args, "study", None):
        study = read_study(args.study)
        jobs: list[Job | JobFile | CmdJob] = list(study.workloads)
        group = None
    else:
        found, group = resolve_jobs(args.jobs, startup=getattr(args, "startup", None) is not None)
        jobs = list(found)
    jobs = [j.scaled(runtime=args.runtime, size=args.size) if isinstance(j, Job) else j for j in jobs]
    if getattr(args, "startup", None) is not None:  # the jobs are the backgrounds of a start-up: a row each
        loads = [j for j in jobs if not isinstance(j, CmdJob)]
        alone = [startup_job(args.startup, None, args.startup_cap)] if group is not None and group.startup else []
        jobs = [*alone, *(startup_job(args.startup, bg, args.startup_cap) for bg in loads)]
    return jobs, group


def build_plan(args: argparse.Namespace) -> tuple[MatrixPlan, MatrixDoc | None]:
    """The plan (new, or read back from --resume) and the saved document when resuming; BadInput otherwise."""
    variants: list[Variant] | None = parse_variants(args.schedulers) if args.schedulers else None
    if args.resume:
        doc = load_matrix(args.resume)
        jobs = None
        if args.jobs or getattr(args, "study", None):
            jobs, _ = _requested_jobs(args)
        elif args.runtime is not None or args.size is not None:
            raise BadInput("with --resume, give --runtime and --size only together with --jobs, as at the start")
        plan = check_resumable(doc, args.device, variants, jobs, args.runtime, args.root, args.resume)
        if args.repeat is not None and args.repeat != plan.repeat:
            raise BadInput(f"{args.resume} was planned with --repeat {plan.repeat}, not {args.repeat}")
        if getattr(args, "until_verdict", False) and plan.sequential is None:
            raise BadInput(f"{args.resume} was planned with --repeat {plan.repeat}, not --until-verdict")
        if getattr(args, "trace", False) and not plan.trace:
            raise BadInput(f"{args.resume} was planned without --trace: its runs so far were not traced")
        if getattr(args, "fill", None) is not None or getattr(args, "steady", None) is not None:
            raise BadInput(f"{args.resume} goes on as it began: its fill was made then, and its runs wait for steady "
                           "state as its first ones did (--fill and --steady do not apply)")
        return plan, doc
    study = read_study(args.study) if getattr(args, "study", None) else None
    if variants is None and study is not None and study.schedulers:
        variants = parse_variants(study.schedulers)
    if variants is None:
        raise BadInput("--schedulers is required (e.g. none,bfq)" + (", or schedulers = … in the study file"
                                                                      if study is not None else ""))
    jobs, group = _requested_jobs(args)
    repeat = args.repeat if args.repeat is not None else (
        group.repeat if group else study.repeat if study is not None and study.repeat else 3)
    drop = args.drop_caches if args.drop_caches is not None else bool(group and group.drop_caches)
    drop = drop or getattr(args, "startup", None) is not None  # a start-up is replayed cold
    primary = getattr(args, "metric", None)
    if getattr(args, "until_verdict", False):
        repeat = args.max_runs  # the most runs per cell; the service makes the boundary (service.make_boundary)
    return MatrixPlan(variants, jobs, repeat, drop, args.settle, args.runtime, primary,
                      trace=bool(getattr(args, "trace", False)), steady=steady_wait(args)), None


def cmd_matrix(args: argparse.Namespace) -> int:
    if args.cmd:
        raise BadInput("--jobs runs fio jobs; --cmd times one command: give one of them")
    if getattr(args, "study", None) and args.jobs:
        raise BadInput("--study lists its own workloads: give --study or --jobs, not both")
    if args.alternate:
        raise BadInput("--alternate runs one job; it does not combine with --jobs")
    if getattr(args, "until_verdict", False):
        if args.repeat is not None:
            raise BadInput("--until-verdict runs until the cells decide, at most --max-runs per cell: "
                           "give --max-runs, not --repeat")
        if not 4 <= args.max_runs <= MOST_PER_ARM:
            raise BadInput(f"--max-runs must be at least 4 and at most {MOST_PER_ARM}, not {args.max_runs}")
    save = args.save if args.save is not None else args.resume  # '' is refused below, never ignored
    if save is not None:
        check_save_path(save)  # the service holds the file's lock and reads a resumed one again under it
    return _run_matrix(args, save)


def bound_words(est: float, steady: bool, fill: bool) -> str:
    """"up to 12 min (…)" where the estimate counts a bound (the fill's, the waits'), else "about 12 min"."""
    if not (steady or fill):
        return f"about {format_duration(est)}"
    what = " and ".join(w for w, on in (("the fill to its time bound", fill),
                                        ("each wait for steady state to its timeout", steady)) if on)
    return f"up to {format_duration(est)} ({what})"


def _run_matrix(args: argparse.Namespace, save: str | None) -> int:
    plan, doc = build_plan(args)
    check_variants(args.device, plan.variants, args.root)
    todo = [i for i in range(plan.runs) if doc is None or i not in done_slots(doc)]
    est = plan.estimate(todo)
    filled = getattr(args, "fill", None) is not None
    if est is not None and filled:
        est += fill_most_s(args.device, args.fill, args.root)  # at most: the fill's time bound
    if args.max_time is not None and (est is None or est > args.max_time):
        why = ("its duration cannot be estimated (a job file without runtime: give --runtime)" if est is None
               else f"it could take {bound_words(est, plan.steady is not None, filled)}")
        raise BadInput(f"the matrix exceeds --max-time {format_duration(args.max_time)}: {why}; "
                       "scale it with --runtime or --repeat")
    fio_binary()
    until = plan.repeat if doc is None and getattr(args, "until_verdict", False) else None
    experiment = MatrixRunPlan(args.device, plan.variants, matrix=plan, resume=doc, alpha=args.alpha,
                               metric=getattr(args, "metric", None), root=args.root, until_verdict=until,
                               fill=getattr(args, "fill", None),
                               target=TargetRequest(args.dir, args.raw, args.destroy_data,
                                                    size=space_needed(plan.fio_jobs, args.size or 1 << 30)))

    def announce(target: Target) -> None:
        # After the service's checks: a matrix until a verdict has its boundary (a resumed one, its saved one).
        if plan.sequential:
            looks = plan.sequential.looks
            what = (f"{len(plan.jobs)} workload(s) x {len(plan.variants)} variants until a verdict: looks at "
                    f"{', '.join(map(str, looks[:4]))}{', …' if len(looks) > 4 else ''} runs per cell, at most "
                    f"{plan.runs} runs{', caches dropped before each' if plan.drop_caches else ''}")
        else:
            what = (f"{len(plan.jobs)} workload(s) x {len(plan.variants)} variants x {plan.repeat} repeat(s) = "
                    f"{plan.runs} runs{', caches dropped before each' if plan.drop_caches else ''}")
        if plan.trace:
            what += ", block-layer tracing over every run"
        eta = ("unknown (a command, or a job file without runtime)" if est is None else
               bound_words(est, plan.steady is not None, filled))
        if plan.sequential and est is not None:
            eta = f"at most {format_duration(est)}"
        if target.note:
            print(f"iosched: {target.note}", file=sys.stderr)
        if doc is None:
            print(f"iosched: matrix of {what}; estimated {eta}", file=sys.stderr)
        else:
            print(f"iosched: resuming {args.resume}: {plan.runs - len(todo)} of {plan.runs} runs done, "
                  f"{len(todo)} to go; estimated {eta}", file=sys.stderr)

    saver = ResultFile(Path(save), keep_empty=True) if save else None
    printer = ProgressPrinter(quiet=args.json or args.csv, lines=getattr(args, "details", False))
    resumed = args.resume
    experiment.on_target = announce
    experiment.reload = (lambda: load_matrix(resumed)) if resumed else None
    with owed_said(args.device, args.root):
        try:
            outcome = service.run(experiment, saver, printer)
        finally:
            printer.close()
    if outcome.save_error and not printer.warned:  # a failed save still shows the result, once
        print(f"iosched: warning: the result could not be saved to {outcome.save_error}", file=sys.stderr)
    if outcome.status != "final":
        if outcome.saved is not None:
            print(f"iosched: {outcome.finished_runs} of {plan.runs} runs are saved in {save}; "
                  f"continue with `iosched compare {args.device} --resume {save}`", file=sys.stderr)
        raise outcome.error or Cancelled(outcome.reason or "cancelled")
    assert isinstance(outcome.doc, MatrixDoc) and outcome.doc.judgement is not None  # runs made: judged
    render_matrix(outcome.doc, outcome.doc.judgement, args)
    if outcome.saved is not None and not outcome.save_error:
        print(f"iosched: saved to {outcome.saved}", file=sys.stderr)  # last: stdout stays the answer
    return 2 if outcome.save_refused else 1 if outcome.save_error or all_invalid(outcome.doc) else 0


# --- output -------------------------------------------------------------------------------------------------


def render_matrix(doc: MatrixDoc, judgement: MatrixJudgementDoc, args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps(worded_json(replace(doc, judgement=judgement)), indent=1))
    elif args.csv:
        sys.stdout.write(matrix_csv(doc, judgement))
    else:
        sys.stdout.write(matrix_text(doc, judgement))
    plot_result(doc, judgement, args)


def plot_result(doc: CompareDoc | AlternationDoc | MatrixDoc, judgement: JudgementDoc | MatrixJudgementDoc,
                args: argparse.Namespace) -> None:
    """--plot to the terminal (plain characters under NO_COLOR or into a pipe), --plot-file to .txt/.html."""
    if not (getattr(args, "plot", False) or getattr(args, "plot_file", None)):
        return
    from iosched.cli.chart_page import charts_html
    from iosched.core.present.charts import all_charts

    # Colours are iosched's own escape sequences, written as they are: only over a document whose words hold none
    # (a saved file's label with an escape in it is drawn plain, and shown escaped like every other word).
    plain_words = not holds_control(doc)
    if getattr(args, "plot", False):
        width = shutil.get_terminal_size((100, 40)).columns - 1
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR") and plain_words
        text = "\n" + "\n\n".join(all_charts(doc, judgement, width, color)) + "\n"
        if color:
            control(sys.stdout, text)
        else:
            sys.stdout.write(text)
    if getattr(args, "plot_file", None):
        path = args.plot_file
        html = path.endswith(".html")
        charts = all_charts(doc, judgement, 120, html and plain_words)
        if not (html and plain_words):
            charts = [printable_text(c) for c in charts]
        try:
            write_file(path, charts_html(charts, 120) if html else "\n\n".join(charts) + "\n")  # looked at now too
        except OSError as e:  # a full or read-only disk: the result itself was shown (and saved) already
            raise IoschedError(f"the charts could not be written to {path}: {e.strerror or e}") from None
        print(f"iosched: charts saved to {path}", file=sys.stderr)


def check_plot_file(path: str | None) -> None:
    if path is None:
        return
    if not path.endswith((".html", ".txt")):
        raise BadInput(f"--plot-file must end in .html or .txt, got {path}")
    check_save_path(path)
