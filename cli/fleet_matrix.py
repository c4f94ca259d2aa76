"""`iosched compare --hosts H DEV --schedulers A,B --jobs GROUP`: a matrix on a fleet. Each job of the group is a
fleet compare of its own (every host in lockstep, or each by itself), one job after another; each job's variants are
pooled over its hosts, and the verdicts are Holm-corrected over every cell (job x variant), as one machine's matrix
is. `--save` keeps the whole matrix in one file after every slot, `--resume` goes on from the job and slot it
stopped at, `report` judges it again.

The command line's part: the group and a saved matrix checked against the flags before any host is reached, the
plan built (core/fleet/fleet_matrix.py) and run by the experiment service, its outcome shown
(core/present/fleet_report.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace

from iosched.cli.fleet import (
    STOPPED,
    check_fleet_args,
    cmd_fleet,
    on_event,
    plan_from,
    same_hosts,
    saver,
    settings,
    show,
    stopped,
)
from iosched.cli.matrix import plot_result
from iosched.core.base.encode import encode
from iosched.core.base.errors import BadInput
from iosched.core.base.terminal_text import printable
from iosched.core.documents.saved import kind_of, load_saved, read_fleet_matrix
from iosched.core.experiment import service
from iosched.core.experiment.results import check_save_path
from iosched.core.fleet.fleet import parse_hosts
from iosched.core.fleet.fleet_matrix import FleetMatrixPlan, going_on
from iosched.core.fleet.fleet_plan import check_remote
from iosched.core.load.jobs import Job, resolve_jobs
from iosched.core.present.fleet_report import fleet_matrix_csv, lost_job, matrix_lines, matrix_unjudged
from iosched.core.statistics.fleet_verdict import matrix_pooled
from iosched.core.statistics.host_judges import host_matrix


def _jobs(args: argparse.Namespace) -> tuple[list[str], bool]:
    """--jobs as catalog job names, and whether its group drops caches before each run."""
    parts = [p.strip() for p in args.jobs.split(",")]
    found, group = ([], None) if any("/" in p or p.endswith((".fio", ".ini")) for p in parts) else (
        resolve_jobs(args.jobs))  # a job file is never read: it could not reach the hosts
    if not found or any(not isinstance(j, Job) for j in found):
        raise BadInput("--hosts runs catalog jobs (`iosched jobs` lists them): a job file lies on this machine only")
    return [j.name for j in found], bool(group and group.drop_caches)


def cmd_hosts(args: argparse.Namespace) -> int:
    """`compare --hosts`: one job's fleet (cli/fleet.py), or with --jobs (or a saved fleet matrix to go on with)
    a fleet matrix."""
    saved_doc = load_saved(args.resume, "fleet compare") if args.resume and not args.independent else None
    if args.jobs or kind_of(saved_doc) == "fleet_matrix":
        return cmd_fleet_matrix(args, saved_doc)
    return cmd_fleet(args, saved_doc)


def cmd_fleet_matrix(args: argparse.Namespace, saved_doc: object) -> int:
    if args.job:
        raise BadInput("a saved fleet matrix goes on with its own jobs: leave out --job" if saved_doc is not None
                       else "give --job or --jobs, not both")
    matrix = None
    if saved_doc is not None:
        matrix = read_fleet_matrix(saved_doc, args.resume)
        given = _jobs(args)[0] if args.jobs else None
        plan_from(args, matrix, args.resume, {"--jobs": (given and ",".join(given), ",".join(matrix.jobs)),
                                              "--metric": (args.metric, matrix.metric or "each job's own")})
        args.metric = matrix.metric  # what every job's boundary watched, and the jobs left will
        jobs, spec, drops = matrix.jobs, matrix.jobs_spec, False
        if len(going_on(matrix)[0]) == len(jobs):
            raise BadInput(f"{args.resume} has ended (every job it planned): `iosched report {args.resume}` "
                           "judges it")
    else:
        jobs, drops = _jobs(args)
        spec = args.jobs
    check_fleet_args(args, jobs)
    if drops and not args.independent:
        raise BadInput(f"{spec}'s jobs drop the caches before each run, which hosts in lockstep cannot: "
                       "add --independent")
    if drops and args.drop_caches is None:
        args.drop_caches = True
    hosts = parse_hosts(args.hosts, args.device)
    check_remote(args.remote_iosched, args.ssh)
    if matrix is not None:
        if matrix.fleets:
            was = matrix.fleets[0].hosts
            same_hosts(hosts, was, args.resume)
            order = [h.host for h in was]
            hosts.sort(key=lambda h: order.index(h.name))  # every job's fleet lists the hosts as the first did
        args.save = args.save or args.resume
    if args.save is not None:
        check_save_path(args.save)
    plan = FleetMatrixPlan(settings(args), hosts, jobs, spec, matrix.started if matrix is not None else time.time(),
                           matrix)
    outcome = service.run(plan, saver(args), on_event)
    ctrl_c = stopped(outcome)
    doc = outcome.doc
    saved = show(outcome, matrix_lines(doc), matrix_unjudged(doc), args)
    lost = None if ctrl_c else lost_job(doc)
    if lost:
        print(f"iosched: no host finished {lost}, so the jobs after it were not run"
              + (f"; `--resume {args.save}` goes on once the hosts can" if args.save and not args.independent
                 else ""), file=sys.stderr)
    if ctrl_c:
        print(STOPPED + (" (with --independent, the jobs that finished)" if args.independent else ""),
              file=sys.stderr)
        return 130
    done = len(doc.fleets) == len(jobs) and all(h.status == "done" for f in doc.fleets for h in f.hosts)
    return 0 if saved and done and matrix_unjudged(doc) is None else 1


def report_fleet_matrix(doc: object, args: argparse.Namespace) -> None:
    """`report FLEET-MATRIX.json`: each job's hosts judged again and pooled, Holm over the matrix."""
    matrix = read_fleet_matrix(doc, args.file)
    if args.plot_file:
        raise BadInput("a fleet is charted host by host in the terminal (--plot); --plot-file takes one compare")
    fleets, pooled = matrix_pooled(matrix.fleets, args.alpha, args.metric)
    matrix = replace(matrix, fleets=fleets, pooled=pooled)
    if args.json:
        print(json.dumps(encode(matrix), indent=1))
    elif args.csv:
        sys.stdout.write(fleet_matrix_csv(matrix))
    else:
        sys.stdout.write("\n".join(matrix_lines(matrix)) + "\n")
    for f in matrix.fleets if args.plot else ():
        for h in f.hosts:
            if h.result is not None:
                print("\n" + printable(f"{f.job} on {h.host}:"), flush=True)
                plot_result(*host_matrix(h.result, args.alpha, args.metric), args)
