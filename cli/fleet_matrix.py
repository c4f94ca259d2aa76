"""`iosched compare --hosts H DEV --schedulers A,B --jobs GROUP`: a matrix on a fleet. Each job of the group is a
fleet compare of its own (cli/fleet.py: every host in lockstep, or each by itself), one job after another; each
job's variants are pooled over its hosts, and the verdicts are Holm-corrected over every cell (job x variant),
as one machine's matrix is. `--save` keeps the whole matrix in one file after every slot, `--resume` goes on from
the job and slot it stopped at, `report` judges it again."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from iosched.cli.fleet import (
    STOPPED,
    Keeper,
    check_fleet_args,
    check_remote,
    cmd_fleet,
    fleet_lines,
    how,
    matrix_unjudged,
    next_slot,
    plan_from,
    pooled_fleet,
    run_job,
    same_hosts,
    save_and_show,
)
from iosched.cli.matrix import plot_result
from iosched.core.base.cells import printable
from iosched.core.base.errors import BadInput
from iosched.core.documents.saved import load_saved, read_experiment, read_fleet_matrix
from iosched.core.documents.schema_version import SCHEMA_VERSION
from iosched.core.experiment.results import check_save_path
from iosched.core.fleet.fleet import parse_hosts
from iosched.core.load.jobs import Job, resolve_jobs
from iosched.core.present.report import hosts_runs_csv
from iosched.core.statistics.matrix_judge import as_matrix, judge_matrix
from iosched.core.statistics.stats import holm


def matrix_pooled(fleets: list[dict[str, Any]], alpha: float, metric: str | None) -> dict[str, Any]:
    """Each job's variants pooled over its hosts, the p-values Holm-corrected over every cell of the matrix; each
    fleet's own ``pooled`` is set to its part of that (what its lines show)."""
    raw: list[list[float]] = []
    for f in fleets:
        got: list[float] = []

        def taken(ps: list[float], got: list[float] = got) -> list[float]:
            got.extend(ps)  # the cell's own p-values, before any correction
            return ps

        pooled_fleet(f, alpha, metric, adjust=taken)
        raw.append(got)
    adjusted = iter(holm([p for ps in raw for p in ps]))
    cells = sum(len(ps) for ps in raw)
    words = (f"Holm-corrected over the matrix's {cells} pooled cell{'' if cells == 1 else 's'} (one per job and "
             "variant)" if cells else "no cell of the matrix could be pooled")
    verdicts = []
    for f, ps in zip(fleets, raw, strict=True):
        mine = [next(adjusted) for _ in ps]

        def given(ps: list[float], mine: list[float] = mine) -> list[float]:
            assert len(ps) == len(mine)  # the same runs pooled again: the same cells
            return mine

        f["pooled"] = pooled_fleet(f, alpha, metric, adjust=given, correction=words)
        for row in (f["pooled"] or {}).get("pooled", []):
            verdicts.append({"job": f["job"], "metric": f["pooled"]["metric"], "baseline": f["pooled"]["baseline"],
                             **{k: row.get(k) for k in ("variant", "ratio", "ci_low", "ci_high", "p_adjusted",
                                                         "significant", "sentence")}})
    return {"alpha": alpha, "cells": cells, "correction": words, "verdicts": verdicts}


def matrix_lines(doc: dict[str, Any]) -> list[str]:
    """Each job's fleet as `compare --hosts` shows one, then the matrix's verdicts, a line a cell; first, the jobs
    that cannot be judged, if any."""
    cannot = matrix_unjudged(doc)
    lines: list[str] = [cannot] if cannot is not None else []
    for f in doc["fleets"]:
        lines.append(f"{f['job']}:")
        lines += [f"  {line}" for line in fleet_lines(f)]
    left = doc["jobs"][len(doc["fleets"]):]
    if left:
        lines.append(f"not run: {', '.join(left)}")
    pooled = doc["pooled"]
    lines.append(f"the matrix: each cell pooled over the hosts; {pooled['correction']}, alpha {pooled['alpha']:g}:")
    if not pooled["verdicts"]:
        lines.append("  no job had two hosts to pool")
    for v in pooled["verdicts"]:  # the pooled sentence without its heterogeneity, which the job's lines give
        lines.append(f"  {v['job']}: {v['sentence'].split('; pooled over ')[0]}")
    return [printable(line) for line in lines]


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
    if args.jobs or (isinstance(saved_doc, dict) and saved_doc.get("kind") == "fleet_matrix"):
        return cmd_fleet_matrix(args, saved_doc)
    return cmd_fleet(args, saved_doc)


def cmd_fleet_matrix(args: argparse.Namespace, saved_doc: object) -> int:
    if args.job:
        raise BadInput("a saved fleet matrix goes on with its own jobs: leave out --job" if saved_doc is not None
                       else "give --job or --jobs, not both")
    fleets: list[dict[str, Any]] = []
    resume: tuple[dict[str, Any], int] | None = None
    if saved_doc is not None:
        matrix = read_fleet_matrix(saved_doc, args.resume)
        assert isinstance(saved_doc, dict)
        given = _jobs(args)[0] if args.jobs else None
        plan_from(args, matrix, args.resume, {"--jobs": (given and ",".join(given), ",".join(matrix.jobs)),
                                              "--metric": (args.metric, matrix.metric or "each job's own")})
        args.metric = matrix.metric  # what every job's boundary watched, and the jobs left will
        jobs, spec, drops = matrix.jobs, matrix.jobs_spec, False
        fleets = list(saved_doc["fleets"])
        # The last job goes on if it has slots left and a host that did not finish (stopped, lost, or all failed).
        last = matrix.fleets[-1] if matrix.fleets else None
        first = next_slot(last) if last is not None else None
        if last is not None and first is not None and any(h.status != "done" for h in last.hosts):
            resume = (fleets.pop(), first)
        if len(fleets) == len(jobs):
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
    if isinstance(saved_doc, dict):
        if saved_doc["fleets"]:
            was = saved_doc["fleets"][0]["hosts"]
            same_hosts(hosts, was, args.resume)
            order = [h["host"] for h in was]
            hosts.sort(key=lambda h: order.index(h.name))  # every job's fleet lists the hosts as the first did
        args.save = args.save or args.resume
    if args.save is not None:
        check_save_path(args.save)
    started = saved_doc["started"] if isinstance(saved_doc, dict) else time.time()
    repeat = args.max_runs if args.until_verdict else (args.repeat or 3)

    def document(current: dict[str, Any] | None, judged: bool = True) -> dict[str, Any]:
        """The matrix so far; ``judged``: its cells pooled and corrected (each slot's save leaves that to the end
        and to `report`: it would judge every host of every job again between two slots)."""
        whole = fleets + ([current] if current is not None else [])
        doc: dict[str, Any] = {"version": SCHEMA_VERSION, "kind": "fleet_matrix",
                               "mode": "independent" if args.independent else "lockstep", "started": started,
                               "finished": time.time(), "jobs_spec": spec, "jobs": jobs,
                               "schedulers": args.schedulers, "repeat": repeat,
                               "until_verdict": bool(args.until_verdict), "metric": args.metric,
                               "runtime_s": args.runtime,
                               "size": args.size, "settle_s": args.settle, "fleets": whole}
        doc["pooled"] = matrix_pooled(whole, args.alpha, args.metric) if judged else None
        return doc

    print(printable(f"iosched: {len(jobs)} jobs ({spec[:200]}) under {args.schedulers} on {len(hosts)} hosts, one "
                    f"job after another, {how(args)}"), file=sys.stderr, flush=True)
    keeper = Keeper(args.save)
    kept: list[dict[str, Any]] = []  # the running job's document as last saved

    def keep(current: dict[str, Any]) -> None:
        kept[:] = [current]
        keeper.keep(document(current, judged=False))

    stopped, lost, begun = False, "", len(fleets)
    try:
        for n in range(len(fleets), len(jobs)):
            print(f"iosched: job {n + 1}/{len(jobs)}: {jobs[n]}", file=sys.stderr, flush=True)
            ran = run_job(args, hosts, jobs[n], resume[0]["started"] if resume else time.time(), resume, keep)
            resume = None
            fleets.append(ran.doc)
            kept.clear()
            if ran.stopped:
                stopped = True
                break
            keeper.keep(document(None, judged=False))
            if not any(r.status == "done" for r in ran.runs) and n + 1 < len(jobs):
                lost = jobs[n]  # no host finished it: the jobs after it would fare no better
                break
    except KeyboardInterrupt:
        if not kept and len(fleets) == begun:
            raise  # nothing ran in this session: the file stays as it was (a resumed job's runs with it)
        fleets.extend(kept)  # a job stopped between its last slot and its end keeps every slot saved
        stopped = True
    doc = document(None)
    saved = save_and_show(doc, matrix_lines(doc), args)
    if lost:
        print(f"iosched: no host finished {lost}, so the jobs after it were not run"
              + (f"; `--resume {args.save}` goes on once the hosts can" if args.save and not args.independent
                 else ""), file=sys.stderr)
    if stopped:
        print(STOPPED + (" (with --independent, the jobs that finished)" if args.independent else ""),
              file=sys.stderr)
        return 130
    done = len(fleets) == len(jobs) and all(h["status"] == "done" for f in fleets for h in f["hosts"])
    return 0 if saved and done and matrix_unjudged(doc) is None else 1


def report_fleet_matrix(doc: object, args: argparse.Namespace) -> None:
    """`report FLEET-MATRIX.json`: each job's hosts judged again and pooled, Holm over the matrix."""
    read_fleet_matrix(doc, args.file)
    assert isinstance(doc, dict)
    if args.plot_file:
        raise BadInput("a fleet is charted host by host in the terminal (--plot); --plot-file takes one compare")
    doc["pooled"] = matrix_pooled(doc["fleets"], args.alpha, args.metric)
    if args.json:
        print(json.dumps(doc, indent=1))
    elif args.csv:
        sys.stdout.write(hosts_runs_csv([(h["host"], read_experiment(h["result"], h["host"]))
                                         for f in doc["fleets"] for h in f["hosts"] if h["result"] is not None],
                                        jobs=[f["job"] for f in doc["fleets"] for h in f["hosts"]
                                              if h["result"] is not None]))
    else:
        sys.stdout.write("\n".join(matrix_lines(doc)) + "\n")
    for f in doc["fleets"] if args.plot else ():
        for h in f["hosts"]:
            if h["result"] is not None:
                view = as_matrix(read_experiment(h["result"], h["host"]))
                print("\n" + printable(f"{f['job']} on {h['host']}:"), flush=True)
                plot_result(view, judge_matrix(view, args.alpha, args.metric), args)
