"""`iosched compare --hosts FILE|h1,h2 DEV --schedulers A,B --job NAME`: the compare on every host at once over SSH,
in lockstep or each host by itself (`--independent`), judged per host and pooled; `--save` keeps the whole fleet in
one file, `report` reads it again. `--jobs GROUP` runs one such fleet per job (cli/fleet_matrix.py, which also picks
between the two).

The command line's part: every flag checked before any host is reached, the plan built (core/fleet/fleet_plan.py)
and run by the experiment service (core/experiment/service.py), what it says and its outcome shown
(core/present/fleet_report.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from iosched.cli.matrix import plot_result
from iosched.core.base.errors import BadInput
from iosched.core.base.terminal_text import printable
from iosched.core.documents.document import FleetDoc, FleetHostDoc, FleetMatrixDoc
from iosched.core.documents.saved import kind_of, read_fleet
from iosched.core.experiment import service
from iosched.core.experiment.events import Event, Note, SaveFailed
from iosched.core.experiment.results import check_save_path
from iosched.core.experiment.service import Outcome
from iosched.core.fleet.fleet import Host, parse_hosts
from iosched.core.fleet.fleet_plan import FleetPlan, FleetSettings, check_remote, next_slot
from iosched.core.present.fleet_report import fleet_csv, fleet_lines, unjudged
from iosched.core.present.result_file import ResultFile
from iosched.core.present.worded import worded_json
from iosched.core.statistics.fleet_verdict import fleet_pooled
from iosched.core.statistics.host_judges import host_judgement, host_primary

STOPPED = "iosched: stopped (Ctrl-C): every host puts its device back; the results cover the runs that finished"


def check_fleet_args(args: argparse.Namespace, jobs: list[str]) -> None:
    """What a fleet compare of ``jobs`` (one, or a group's) cannot take, refused in one sentence before any host
    is reached: every flag is checked here, so a refusal never comes after a host has changed."""
    if args.independent and args.resume:
        raise BadInput("--resume goes on with a fleet in lockstep; hosts that run alone (--independent) each "
                       "finish their own compare")
    for flag, given in (("--study", args.study), ("--alternate", args.alternate),
                        ("--cmd", args.cmd), ("--background", args.background), ("--cmd-metric", args.cmd_metric),
                        ("--replay", args.replay), ("--replay-fit", args.replay_fit), ("--plan", args.plan),
                        ("--dir", args.dir), ("--destroy-data", args.destroy_data), ("--trace", args.trace),
                        ("--raw", args.raw), ("--max-time", args.max_time is not None)):
        if given:
            raise BadInput(f"--hosts runs catalog jobs on every host: {flag} does not apply")
    for flag, given in (("--plot", args.plot), ("--plot-file", args.plot_file), ("--csv", args.csv)):
        if given:
            raise BadInput(f"a fleet is charted and tabled from its saved file: add --save FILE, then `iosched "
                           f"report FILE --plot` or `--csv` ({flag} does not apply here)")
    settings(args).check(jobs)


def settings(args: argparse.Namespace) -> FleetSettings:
    """The fleet's settings from the command line (a resumed fleet's own, once ``plan_from`` put them there)."""
    return FleetSettings(args.schedulers or "", args.repeat, bool(args.until_verdict), args.max_runs, args.runtime,
                         args.size, args.settle, args.alpha, args.metric, bool(args.independent), args.drop_caches,
                         args.ssh, args.remote_iosched)


def resumed(args: argparse.Namespace, doc: object) -> int:
    """`--resume FILE`: the saved fleet ``doc``, read whole, its plan put in ``args`` (a flag that says otherwise
    is refused); the slot to go on from. BadInput, one sentence, before any host is reached."""
    return _resumed(args, doc)[1]


def _resumed(args: argparse.Namespace, doc: object) -> tuple[FleetDoc, int]:
    path = args.resume
    if kind_of(doc) != "fleet":
        raise BadInput(f"{path} is not a saved iosched fleet compare: `compare --hosts … --save` writes one")
    fleet = read_fleet(doc, path)
    plan_from(args, fleet, path, {"--job": (args.job, fleet.job)})
    args.job = fleet.job
    first = next_slot(fleet)
    if first is None:
        raise BadInput(f"{path} has ended (every run it planned, or every host decided): `iosched report {path}` "
                       "judges it")
    return fleet, first


def plan_from(args: argparse.Namespace, fleet: FleetDoc | FleetMatrixDoc, path: str,
              more: dict[str, tuple[object, object]]) -> None:
    """A saved fleet's (or fleet matrix's) plan put in ``args``; a flag given that says otherwise is refused."""
    if fleet.mode != "lockstep":
        raise BadInput(f"{path} ran each host alone (--independent): it cannot go on in lockstep")
    for flag, (given, saved) in {"--schedulers": (args.schedulers, fleet.schedulers), **more,
                                 "--repeat": (args.repeat, fleet.repeat), "--runtime": (args.runtime, fleet.runtime_s),
                                 "--size": (args.size, fleet.size)}.items():
        if given is not None and given != saved:
            raise BadInput(f"{flag} {given} differs from the saved fleet's {saved}: leave it out to go on")
    if args.until_verdict and not fleet.until_verdict:
        raise BadInput(f"{path} ran a fixed number of runs: --until-verdict does not apply to it")
    # Every host's boundary must be the one its saved runs were looked at with, a host that joins now too.
    results = [h.result for h in fleet.hosts] if isinstance(fleet, FleetDoc) else [
        h.result for f in fleet.fleets for h in f.hosts]
    bounds = {r.sequential.alpha for r in results if r is not None and r.sequential}
    if bounds and bounds != {args.alpha}:
        saved_alpha = min(bounds)
        raise BadInput(f"{path}'s boundaries were set at alpha {saved_alpha:g}: go on with --alpha {saved_alpha:g}")
    # And they watch the metric they watched (a matrix's jobs may each have their own: those are kept per job).
    watched = {r.primary_metric for r in results if r is not None and r.sequential and r.primary_metric}
    if isinstance(fleet, FleetDoc) and len(watched) == 1:
        (saved_metric,) = watched
        if args.metric is not None and args.metric != saved_metric:
            raise BadInput(f"{path}'s boundaries watch {saved_metric}: leave out --metric {args.metric} to go on")
        args.metric = saved_metric
    args.schedulers, args.repeat = fleet.schedulers, fleet.repeat
    args.runtime, args.size, args.settle = fleet.runtime_s, fleet.size, fleet.settle_s
    args.until_verdict, args.max_runs = fleet.until_verdict, fleet.repeat


def same_hosts(hosts: list[Host], saved_hosts: list[FleetHostDoc], path: str) -> None:
    """``--resume``: the hosts named are the saved ones, with the same devices."""
    named = {h.name: h.device for h in hosts}
    was = {h.host: h.device for h in saved_hosts}
    if named != was:
        raise BadInput(f"--hosts names other hosts or devices than {path}: "
                       + ", ".join(f"{h} {d}" for h, d in was.items()))


def on_event(e: Event) -> None:
    """What the fleet says while it runs: its own lines, each host's words (no control characters: escape
    sequences from a host are shown, never acted on), a save that failed."""
    if isinstance(e, Note):
        if e.host is None:
            print(f"iosched: {printable(e.text)}", file=sys.stderr, flush=True)
            return
        shown = printable(e.text[:500])
        if shown.strip():
            print(f"[{e.host}] {shown}", file=sys.stderr, flush=True)
    elif isinstance(e, SaveFailed):
        print(f"iosched: warning: the runs so far could not be saved to {e.text}", file=sys.stderr)


def saver(args: argparse.Namespace) -> ResultFile | None:
    """--save FILE: the fleet's one file, saved after every slot and at the end (its plan from the start)."""
    return ResultFile(Path(args.save), keep_empty=True) if args.save is not None else None


_D = TypeVar("_D", FleetDoc, FleetMatrixDoc)


def stopped(outcome: Outcome[_D]) -> bool:
    """Whether Ctrl-C stopped it (its finished runs judged, saved and shown); anything else that ended it early
    (SIGTERM, an error) is raised as it came, once the service has saved what finished."""
    if outcome.status == "final":
        return False
    if outcome.error is None or isinstance(outcome.error, KeyboardInterrupt):
        return True
    raise outcome.error


def show(outcome: Outcome[_D], lines: list[str], cannot: str | None, args: argparse.Namespace) -> bool:
    """The result shown (--json, else ``lines``) and where it was saved; whether it was saved (or nothing asked
    it). With --json, a result that cannot be judged says so on stderr, first."""
    if outcome.save_error:
        print(f"iosched: warning: the result could not be saved to {outcome.save_error}", file=sys.stderr)
    if args.json:
        if cannot is not None:
            print(f"iosched: {printable(cannot)}", file=sys.stderr, flush=True)
        print(json.dumps(worded_json(outcome.doc), indent=1))
    else:
        sys.stdout.write("\n".join(lines) + "\n")
    saved = not outcome.save_error
    if saved and args.save is not None:
        print(f"iosched: saved to {args.save} (`iosched report {args.save}` judges it again)", file=sys.stderr)
    return saved


def cmd_fleet(args: argparse.Namespace, saved_doc: object) -> int:
    """One job on every host; ``saved_doc``: the parsed `--resume` file (None: none)."""
    fleet = _resumed(args, saved_doc)[0] if saved_doc is not None else None
    check_fleet_args(args, [args.job] if args.job else [])
    hosts = parse_hosts(args.hosts, args.device)
    check_remote(args.remote_iosched, args.ssh)
    if fleet is not None:
        same_hosts(hosts, fleet.hosts, args.resume)
        args.save = args.save or args.resume
    if args.save is not None:
        check_save_path(args.save)
    plan = FleetPlan(settings(args), hosts, args.job, fleet.started if fleet is not None else time.time(), fleet)
    outcome = service.run(plan, saver(args), on_event)
    ctrl_c = stopped(outcome)
    doc = outcome.doc
    saved = show(outcome, fleet_lines(doc), unjudged(doc), args)
    if ctrl_c:
        print(STOPPED, file=sys.stderr)
        return 130
    if unjudged(doc) is not None:
        return 1  # an experiment that cannot judge has failed, whatever its hosts did
    return 0 if saved and all(h.status == "done" for h in doc.hosts) else 1


def report_fleet(doc: object, args: argparse.Namespace) -> int:
    """`report FLEET.json`: each host's compare judged again and pooled, as `compare --hosts` showed it; 1 when
    the fleet cannot be judged, as `compare --hosts` exits."""
    fleet = read_fleet(doc, args.file)
    if args.plot_file:
        raise BadInput("a fleet is charted host by host in the terminal (--plot); --plot-file takes one compare")
    fleet = replace(fleet, pooled=fleet_pooled(fleet, args.alpha, args.metric))
    print_fleet(fleet, args, fleet_csv(fleet), fleet_lines(fleet), [(h.host, h) for h in fleet.hosts])
    return 1 if unjudged(fleet) is not None else 0


def print_fleet(doc: FleetDoc | FleetMatrixDoc, args: argparse.Namespace, csv: str, lines: list[str],
                hosts: list[tuple[str, FleetHostDoc]]) -> None:
    """What `report` prints of a fleet or a fleet matrix: its JSON, its CSV or its text; then, with --plot, each
    host's charts under its title."""
    if args.json:
        print(json.dumps(worded_json(doc), indent=1))
    elif args.csv:
        sys.stdout.write(csv)
    else:
        sys.stdout.write("\n".join(lines) + "\n")
    for title, h in hosts if args.plot else ():
        if h.result is not None:
            print("\n" + printable(f"{title}:"), flush=True)
            plot_result(h.result, host_judgement(h.result, args.alpha, args.metric or host_primary(h.result)), args)
