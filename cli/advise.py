"""`iosched advise DEV`: which scheduler for this disk, answered in five steps — observe, plan, test, decide, keep.

Observe and plan change nothing (core/advice/request.py); the plan is printed with its time against the budget and
runs only once accepted: `--yes`, or `y` typed on a terminal (a raw device holding data needs its name typed, or
`--destroy-data DEV`). Without a terminal and without --yes the plan is printed on stdout and nothing runs (exit 2:
a script asked for an advice and got none). The tests run through the experiment service (core/advice/advice_plan.py);
the answer is printed first, then the evidence (core/present/advice_report.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from iosched import __version__
from iosched.cli.leftovers import owed_said
from iosched.cli.markdown_page import write_markdown
from iosched.cli.terminal import rewrite_line
from iosched.cli.workload_args import steady_wait
from iosched.core.advice.plan import over_budget_words, plan_lines
from iosched.core.advice.request import (
    AdviceRequest,
    Prepared,
    parse_goals,
    prepare_advice,
)
from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.base.outfile import write_file
from iosched.core.base.terminal_text import printable_text
from iosched.core.base.units import si
from iosched.core.documents.document import AdviceDoc
from iosched.core.documents.metrics import roles_of
from iosched.core.experiment import service
from iosched.core.experiment.control import Cancelled
from iosched.core.experiment.events import Event, Note, Progress, RunEnded, SaveFailed
from iosched.core.experiment.results import check_save_path
from iosched.core.load.targets import Refused, Target
from iosched.core.present.advice_report import advice_lines, advice_markdown
from iosched.core.present.advice_words import the_rule
from iosched.core.present.result_file import ResultFile
from iosched.core.present.worded import worded_json
from iosched.core.statistics.advice_rule import Rule

STEP_NUMBER = {"observe": 1, "plan": 2, "test": 3, "decide": 4, "keep": 5}


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _step(name: str, what: str) -> None:
    _err(f"[{STEP_NUMBER.get(name, 0)}/5 {name}] {what}")


def _tty() -> bool:
    """Whether a person can answer: a terminal on stdin (stdout and stderr may go to a pipe: `advise … | tee log`)."""
    return sys.stdin.isatty()


def _ask(question: str) -> str:
    """The question and its prompt on stderr (input's own prompt goes to stdout, which may be a pipe or --json's)."""
    _err(question)
    print("> ", end="", file=sys.stderr, flush=True)
    try:
        return input().strip()
    except EOFError:
        return ""


def request_of(args: argparse.Namespace, destroy_data: str | None = None) -> AdviceRequest:
    return AdviceRequest(
        device=args.device, goals=parse_goals(args.goal), observe_s=args.observe, replay=args.replay, job=args.job,
        cmd=args.cmd, budget_s=args.budget, on=args.on,
        candidates=tuple(args.candidates) if args.candidates else None, runtime=args.runtime,
        size=args.size, settle=args.settle, alpha=args.alpha, target_dir=args.dir,
        destroy_data=destroy_data or args.destroy_data, fill=args.fill, steady=steady_wait(args),
        time_cmd=not args.dry_run, started=time.monotonic() - _age(), root=args.root)


def _age() -> float:
    """Seconds since this process started (Python's start and its imports count against --budget too); 0 when
    /proc cannot say."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read(4096)
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read(64).split()[0])
        start = int(stat[stat.rindex(b")") + 2:].split()[19]) / os.sysconf("SC_CLK_TCK")  # field 22
    except (OSError, ValueError, IndexError):
        return 0.0
    return min(max(uptime - start, 0.0), 60.0)


def _printer(quiet: bool):
    tty = sys.stderr.isatty()

    def on_event(e: Event) -> None:
        if isinstance(e, Note):
            _err(f"iosched: {e.text}")
        elif isinstance(e, SaveFailed):
            _err(f"iosched: warning: the advice could not be saved to {e.text}")
        elif quiet:
            return
        elif isinstance(e, Progress) and tty:
            line = f"run {e.index + 1}/{e.total} {e.label}  {e.progress.elapsed:4.1f}s  IOPS {si(e.progress.iops)}"
            rewrite_line(sys.stderr, line)
        elif isinstance(e, RunEnded):
            m = e.run.metrics
            main = f"IOPS {si(m.get('iops'))}" if "iops" in m else f"wall {m.get('wall_s', 0):.2f} s"
            # A replay's latency is the block layer's (total_*), never fio's: fio's is left out of its runs.
            lat = "total" if e.run.latency is not None else "clat"
            roles = "".join(f"  {r} p50 {si(m.get(f'{r}:{lat}_p50_us'))} µs p99 {si(m.get(f'{r}:{lat}_p99_us'))} µs "
                            f"{si(m.get(f'{r}:mb_s'))} MB/s" for r in roles_of(m))
            bad = "" if e.run.valid else f"  INVALID: {e.run.invalid_reason}"
            p99 = f"  p99 {si(m.get(f'{lat}_p99_us'))} µs" if "iops" in m else ""  # a command's run has none
            line = f"run {e.index + 1}/{e.total} {e.label}  {main}{p99}{roles}{bad}"
            if tty:
                rewrite_line(sys.stderr, line, "\n")
            else:
                print(line, file=sys.stderr, flush=True)
    return on_event


def _say_target(target: Target) -> None:
    if target.note:
        _err(f"iosched: {target.note}")


def _prepare(args: argparse.Namespace) -> Prepared:
    """Observe and plan; a raw device holding data is confirmed by typing its name on a terminal."""
    try:
        return prepare_advice(request_of(args), on_step=None if args.json else _step)
    except Refused as e:
        if not e.confirmable or args.yes or args.dry_run or not _tty():
            raise
        dev = args.on or args.device
        answer = _ask(f"{e} — type {dev} to let the tests write over it, anything else to stop:")
        if answer != dev:
            raise BadInput(f"not confirmed: nothing was changed on {dev}") from None
        return prepare_advice(request_of(args, destroy_data=dev), on_step=None)


def _check_paths(args: argparse.Namespace) -> None:
    if args.save is not None:
        check_save_path(args.save)
    if args.markdown not in (None, "-"):
        check_save_path(args.markdown)
    if args.json and args.markdown == "-":
        raise BadInput("--json and --markdown - both write to stdout: give --markdown a file")


def cmd_advise(args: argparse.Namespace) -> int:
    if args.hosts:
        from iosched.cli.advise_hosts import cmd_advise_hosts

        return cmd_advise_hosts(args)
    if getattr(args, "lockstep", False):
        raise BadInput("--lockstep runs the advice on many hosts together: add --hosts")
    _check_paths(args)
    if args.persist and args.dry_run:
        raise BadInput("--dry-run changes nothing: --persist does not apply")
    prep = _prepare(args)
    plan = prep.plan
    shown = [*plan_lines(plan, prep.target), *(f"  note: {n}" for n in prep.notes),
             *the_rule(Rule(alpha=args.alpha))]
    # --dry-run times no command: a plan over budget only by a guess is shown, not refused.
    guessed = any(t.source.kind == "cmd" and t.source.seconds is None for t in plan.tests)
    if not plan.fits and not (args.dry_run and guessed):
        if args.json:
            print(json.dumps(worded_json(prep.doc), indent=1))
        else:
            print("\n".join(shown))
        raise BadInput(over_budget_words(plan, runtime_given=args.runtime is not None))
    if args.dry_run or (not args.yes and not _tty()):
        if args.json:
            print(json.dumps(worded_json(prep.doc), indent=1))
        else:
            print("\n".join([*prep.doc.observed.lines, *shown]))
        if args.dry_run:
            return 0
        raise BadInput("the plan was not accepted: add --yes to run it without a terminal (nothing was changed)")
    if not args.json:
        _err("\n".join([*prep.doc.observed.lines, *shown]))
    if not args.yes and _ask(f"run this plan (at most about {plan.seconds / 60:.0f} min)? [y/N]").lower() \
            not in ("y", "yes"):
        raise BadInput(f"not accepted: nothing was changed on {prep.request.tested_on}")
    advice = prep.plan_to_run(None, None if args.json else _step, _say_target)
    saver = ResultFile(Path(args.save), keep_empty=True) if args.save else None
    with owed_said(prep.request.tested_on, args.root):
        outcome = service.run(advice, saver, _printer(args.json))
    if sys.stderr.isatty() and not args.json:
        _err("")
    doc = outcome.doc
    if outcome.status != "final":
        if saver is not None and outcome.saved is not None:
            _err(f"iosched: the {outcome.finished_runs} finished run(s) were saved to {args.save} (no advice: "
                 "stopped before the tests finished)")
        raise outcome.error or Cancelled(outcome.reason or "cancelled")
    if args.persist:
        doc = _persist(args, doc)
        if saver is not None:
            saver.save(doc)
    _show(args, doc)
    if outcome.save_error:
        _err(f"iosched: warning: the advice could not be saved to {outcome.save_error}")
    elif saver is not None and outcome.saved is not None:
        _err(f"iosched: saved to {outcome.saved}")
    if outcome.save_refused:
        return 2
    return 0 if doc.advice and all(g.outcome != "cannot-tell" for g in doc.advice) else 1  # 1: could not decide


def _show(args: argparse.Namespace, doc: AdviceDoc) -> None:
    if args.json:
        print(json.dumps(worded_json(doc), indent=1))
    else:
        print("\n".join(advice_lines(doc)))
    if args.markdown == "-":
        print(advice_markdown(doc, __version__), end="")
    elif args.markdown:
        write_file(Path(args.markdown), printable_text(advice_markdown(doc, __version__)))  # a page: no escapes
        _err(f"iosched: the markdown report is in {args.markdown}")


def _persist(args: argparse.Namespace, doc: AdviceDoc) -> AdviceDoc:
    """--persist: the one setting recommended, as a udev rule through `iosched persist`'s own path, confirmed."""
    if not doc.keep:
        shown = doc.advice and all(g.outcome == "keep-equal" for g in doc.advice)
        _err("iosched: --persist: nothing to persist: " + ("keep what you have (shown equal)" if shown else
                                                           "the tests could not decide every goal"))
        return doc
    if len(doc.keep) > 1:
        _err("iosched: --persist: the goals recommend different settings ("
             + ", ".join(k.variant for k in doc.keep) + "): persist the one you want with `iosched persist`")
        return doc
    k = doc.keep[0]
    if not args.yes and (not _tty() or _ask(f"write a udev rule keeping {k.variant} for {args.device} to "
                                            f"{args.rules_file}? [y/N]").lower() not in ("y", "yes")):
        _err("iosched: --persist: not confirmed; nothing written")
        return doc
    from iosched.cli.settings import cmd_persist

    by = args.persist_by
    klass = None
    if by == "class":
        by, klass = "auto", "rotational" if doc.observed.rotational else "non-rotational"
    ns = argparse.Namespace(device=args.device, scheduler=k.scheduler,
                            settings=[f"{n}={v}" for n, v in k.settings.items()], by=by, klass=klass,
                            rules_file=args.rules_file, rules_dir=None, dry_run=False, list=False, remove=False,
                            format="udev", json=False, root=args.root)
    with contextlib.redirect_stdout(sys.stderr):  # stdout keeps the answer (and --json its document)
        try:
            cmd_persist(ns)
        except IoschedError as e:
            _err(f"iosched: --persist: {e}")
            return doc
    return replace(doc, keep=[replace(k, persisted=args.rules_file)])


def report_advice(parsed: object, args: argparse.Namespace) -> int:
    """`iosched report ADVICE.json`: the advice decided again from its saved runs, as `advise` printed it."""
    from iosched.core.advice.decision import decided_again, read_advice

    if isinstance(parsed, dict) and parsed.get("kind") == "advice_fleet":
        from iosched.cli.advise_hosts import report_hosts_advice

        return report_hosts_advice(parsed, args)
    if args.csv or args.plot or args.plot_file or args.metric:
        raise BadInput("an advice is shown as it was decided: --csv, --plot and --metric apply to a compare")
    doc = decided_again(read_advice(parsed, args.file))
    if getattr(args, "markdown", None) is not None:
        write_markdown(args.markdown, advice_markdown(doc, __version__))
        return 0
    if args.json:
        print(json.dumps(worded_json(doc), indent=1))
    else:
        print("\n".join(advice_lines(doc)))
    return 0
