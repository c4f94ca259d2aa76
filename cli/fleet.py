"""`iosched compare --hosts FILE|h1,h2 DEV --schedulers A,B --job NAME`: the compare on every host at once over SSH,
in lockstep (core/fleet/lockstep.py) or each host by itself (`--independent`, core/fleet/fleet.py), then
judged per host and pooled (cli/pooled.py); `--save` keeps the whole fleet in one file, `report` reads it again.
`--jobs GROUP` runs one such fleet per job (cli/fleet_matrix.py, which also picks between the two)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from iosched.cli.matrix import plot_result
from iosched.cli.pooled import pooled_verdict
from iosched.core.base.cells import printable
from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.documents.document import FleetDoc, FleetMatrixDoc
from iosched.core.documents.metrics import METRIC_NAMES, check_roles, is_metric, metric_label
from iosched.core.documents.params import parse_variants
from iosched.core.documents.saved import read_experiment, read_fleet
from iosched.core.documents.schema_version import SCHEMA_VERSION
from iosched.core.experiment.results import check_save_path, save_result
from iosched.core.fleet.fleet import Host, HostRun, check_host_result, parse_hosts, run_fleet
from iosched.core.fleet.lockstep import Lockstep, job_file_text, run_lockstep
from iosched.core.load.jobs import CATALOG
from iosched.core.present.report import hosts_runs_csv
from iosched.core.statistics.matrix_judge import as_matrix, judge_matrix
from iosched.core.statistics.stats import holm


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
    if not args.schedulers:
        raise BadInput("--schedulers is required (e.g. none,bfq)")
    parse_variants(args.schedulers)  # each host checks them against its device; the words are checked here
    if not jobs or any(j not in CATALOG for j in jobs):
        raise BadInput("--hosts runs catalog jobs (`iosched jobs` lists them): a job file lies on this machine only")
    if args.metric is not None:
        if not is_metric(args.metric):
            raise BadInput(f"unknown --metric {args.metric!r}; one of: {', '.join(METRIC_NAMES)}, or ROLE:METRIC")
        check_roles(args.metric, [(j, CATALOG[j].role_names) for j in jobs])
    if args.until_verdict and not 4 <= args.max_runs <= 200:
        raise BadInput("--max-runs must be between 4 and 200")
    if args.independent:
        return
    if args.drop_caches:
        raise BadInput("--drop-caches is for hosts that go at their own pace: add --independent")
    for job in jobs:
        if CATALOG[job].cgroup_weights:
            raise BadInput(f"{job} runs one fio per role, each in its own cgroup, which fio's server cannot: "
                           "add --independent")
        job_file_text(CATALOG[job].scaled(size=args.size), args.runtime, "/dev/sdx")  # what each host's server runs


def check_remote(iosched: str, ssh: str) -> None:
    """The hosts' iosched command (one word, quoted on their command line) and this machine's ssh client."""
    if not iosched or len(iosched) > 1024 or iosched.startswith("-") or not iosched.isprintable():
        raise BadInput("--remote-iosched takes the iosched command on the hosts: a path or a name, printable, not "
                       "an option")
    if shutil.which(ssh) is None:
        raise BadInput(f"{printable(ssh[:60])}: no such command here (the fleet reaches its hosts with OpenSSH's "
                       "client: apt install openssh-client)")


def remote_argv(args: argparse.Namespace, host: Host, job: str) -> list[str]:
    """The compare each host's iosched runs, from the checked values only."""
    argv = [args.remote_iosched, "compare", host.device, "--schedulers", args.schedulers, "--job", job,
            "--json", "--settle", repr(args.settle), "--alpha", repr(args.alpha)]
    if args.repeat is not None:
        argv += ["--repeat", str(args.repeat)]
    if args.runtime is not None:
        argv += ["--runtime", repr(args.runtime)]
    if args.size is not None:
        argv += ["--size", str(args.size)]
    if args.until_verdict:
        argv += ["--until-verdict", "--max-runs", str(args.max_runs)]
    if args.metric:
        argv += ["--metric", args.metric]
    if args.drop_caches is not None:
        argv.append("--drop-caches" if args.drop_caches else "--no-drop-caches")
    return argv


def resumed(args: argparse.Namespace, doc: object) -> int:
    """`--resume FILE`: the saved fleet ``doc``, read whole, its plan put in ``args`` (a flag that says otherwise
    is refused); the slot to go on from. BadInput, one sentence, before any host is reached."""
    path = args.resume
    if not isinstance(doc, dict) or doc.get("kind") != "fleet":
        raise BadInput(f"{path} is not a saved iosched fleet compare: `compare --hosts … --save` writes one")
    fleet = read_fleet(doc, path)
    plan_from(args, fleet, path, {"--job": (args.job, fleet.job)})
    args.job = fleet.job
    first = next_slot(fleet)
    if first is None:
        raise BadInput(f"{path} has ended (every run it planned, or every host decided): `iosched report {path}` "
                       "judges it")
    return first


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


def next_slot(fleet: FleetDoc) -> int | None:
    """The slot a saved fleet goes on from (None: it has ended, every slot run or every host decided). Every slot
    up to the last any host finished is done: a host that missed some (it was lost) joins after them."""
    first = max((r.index + 1 for h in fleet.hosts if h.result is not None for r in h.result.runs), default=0)
    ended = [h.result.status for h in fleet.hosts if h.result is not None]
    if first >= fleet.repeat * len(parse_variants(fleet.schedulers)) or (ended and set(ended) == {"final"}):
        return None
    return first


class Keeper:
    """Saves a document after every slot, so a controller that dies loses no finished run; a failed save is said
    once, and the runs go on (their result is shown at the end)."""

    def __init__(self, path: str | None) -> None:
        self.path, self.failed = path, False

    def keep(self, doc: dict[str, Any]) -> None:
        if self.path is None:
            return
        try:
            save_result(doc, self.path)
        except (OSError, BadInput) as e:
            if not self.failed:
                print(f"iosched: warning: the runs so far could not be saved to {self.path}: "
                      f"{getattr(e, 'strerror', None) or e}", file=sys.stderr)
            self.failed = True


def said(host: str, line: str) -> None:
    """A host's words, on this terminal: no control characters (escape sequences) from it."""
    shown = printable(line[:500])
    if shown.strip():
        print(f"[{host}] {shown}", file=sys.stderr, flush=True)


@dataclass
class JobRun:
    """How one job's fleet compare ended: its document, each host's run, and whether Ctrl-C stopped it."""

    doc: dict[str, Any]
    runs: list[HostRun]
    stopped: bool


def run_job(args: argparse.Namespace, hosts: list[Host], job: str, started: float,
            resume: tuple[dict[str, Any], int] | None, keep: Callable[[dict[str, Any]], None]) -> JobRun:
    """One catalog job's compare on every host, in lockstep or each by itself; ``resume``: the saved fleet of this
    job and the slot to go on from. ``keep`` hears the document after every slot. Ctrl-C before a slot of this
    session ended is re-raised (nothing to judge); after one, the finished runs are judged and returned."""
    repeat = args.max_runs if args.until_verdict else (args.repeat or 3)
    variants = parse_variants(args.schedulers)

    def document(runs: list[HostRun]) -> dict[str, Any]:
        doc: dict[str, Any] = {"version": SCHEMA_VERSION, "kind": "fleet",
                               "mode": "independent" if args.independent else "lockstep", "started": started,
                               "finished": time.time(), "job": job, "schedulers": args.schedulers,
                               "repeat": repeat, "until_verdict": bool(args.until_verdict),
                               "runtime_s": args.runtime, "size": args.size,
                               "settle_s": args.settle, "hosts": [_host_json(r) for r in runs]}
        doc["pooled"] = pooled_fleet(doc, args.alpha, args.metric)
        return doc

    stopped: list[HostRun] = []

    def slot_ended(runs: list[HostRun]) -> None:
        stopped[:] = runs
        keep(document(runs))

    if args.independent:
        runs = run_fleet(hosts, lambda h: remote_argv(args, h, job), said, args.ssh, args.remote_iosched)
    else:
        catalog_job = CATALOG[job].scaled(size=args.size)
        saved_fleet, first = resume or (None, 0)
        kept = {h["host"]: h["result"] for h in (saved_fleet or {}).get("hosts", []) if h["result"] is not None}
        plan = Lockstep(variants, args.schedulers, catalog_job, args.runtime, repeat, args.settle, args.remote_iosched,
                        args.ssh, first, kept, bool(args.until_verdict), args.alpha,
                        args.metric or catalog_job.primary or "iops")
        try:
            runs = run_lockstep(hosts, plan, said, slot_ended)
        except KeyboardInterrupt:
            if not any(r.doc for r in stopped):
                raise
            runs = stopped  # the finished runs, judged and shown (and saved by the last keep)
    for r in runs:
        if r.doc is not None:
            try:
                read_experiment(r.doc, r.host.name)
                check_host_result(r.doc)
                labels = [v["label"] for v in r.doc["variants"]]
                if labels != [v.label for v in variants]:  # an iosched of another version there, say
                    raise IoschedError(f"it compared {','.join(labels)[:200]}, not {args.schedulers}")
            except IoschedError as e:
                if r.status != "failed":  # a failed host keeps the reason it failed for
                    r.status, r.reason = "failed", f"its result did not read back: {e}"
                r.doc = None
    return JobRun(document(runs), runs, runs is stopped)


def cmd_fleet(args: argparse.Namespace, saved_doc: object) -> int:
    """One job on every host; ``saved_doc``: the parsed `--resume` file (None: none)."""
    first = resumed(args, saved_doc) if saved_doc is not None else 0
    check_fleet_args(args, [args.job] if args.job else [])
    hosts = parse_hosts(args.hosts, args.device)
    check_remote(args.remote_iosched, args.ssh)
    if isinstance(saved_doc, dict):
        same_hosts(hosts, saved_doc["hosts"], args.resume)
        args.save = args.save or args.resume
    if args.save is not None:
        check_save_path(args.save)
    started = saved_doc["started"] if isinstance(saved_doc, dict) else time.time()
    print(f"iosched: {args.job} under {args.schedulers} on {len(hosts)} hosts, {how(args)}", file=sys.stderr,
          flush=True)
    keeper = Keeper(args.save)
    ran = run_job(args, hosts, args.job, started, (saved_doc, first) if isinstance(saved_doc, dict) else None,
                  keeper.keep)
    saved = save_and_show(ran.doc, fleet_lines(ran.doc), args)
    if ran.stopped:
        print(STOPPED, file=sys.stderr)
        return 130
    if unjudged(ran.doc) is not None:
        return 1  # an experiment that cannot judge has failed, whatever its hosts did
    return 0 if saved and all(r.status == "done" for r in ran.runs) else 1


STOPPED = "iosched: stopped (Ctrl-C): every host puts its device back; the results cover the runs that finished"


def how(args: argparse.Namespace) -> str:
    """The fleet's mode, in words, for its first line."""
    return ("each by its own iosched over SSH" if args.independent else
            "in lockstep: each variant on every host together, fio's client driving a fio server on each")


def save_and_show(doc: dict[str, Any], lines: list[str], args: argparse.Namespace) -> bool:
    """The result saved (--save) and shown (--json, else ``lines``); whether it was saved (or nothing asked it).
    With --json, a result that cannot be judged says so on stderr, first."""
    saved = save_final(doc, args.save)
    if args.json:
        cannot = unjudged(doc) if doc["kind"] == "fleet" else matrix_unjudged(doc)
        if cannot is not None:
            print(f"iosched: {printable(cannot)}", file=sys.stderr, flush=True)
        print(json.dumps(doc, indent=1))
    else:
        sys.stdout.write("\n".join(lines) + "\n")
    if saved and args.save is not None:
        print(f"iosched: saved to {args.save} (`iosched report {args.save}` judges it again)", file=sys.stderr)
    return saved


def same_hosts(hosts: list[Host], saved_hosts: list[dict[str, Any]], path: str) -> None:
    """``--resume``: the hosts named are the saved ones, with the same devices."""
    named = {h.name: h.device for h in hosts}
    was = {h["host"]: h["device"] for h in saved_hosts}
    if named != was:
        raise BadInput(f"--hosts names other hosts or devices than {path}: "
                       + ", ".join(f"{h} {d}" for h, d in was.items()))


def pooled_fleet(doc: dict[str, Any], alpha: float, metric: str | None,
                 adjust: Callable[[list[float]], list[float]] = holm,
                 correction: str = "Holm-corrected over the variants") -> dict[str, Any] | None:
    """Over the hosts with runs to judge (a stopped or unfinished fleet's too: the runs that finished)."""
    done = [(h["host"], h["result"]) for h in doc["hosts"]
            if h["status"] != "failed" and h["result"] is not None and h["result"]["runs"]]
    return pooled_verdict(done, alpha, metric, adjust, correction) if len(done) >= 2 else None


def save_final(doc: dict[str, Any], path: str | None) -> bool:
    """The whole fleet's result in one file; a failed save is said, and the result still shown."""
    if path is None:
        return True
    try:
        save_result(doc, path)
    except (OSError, BadInput) as e:
        print(f"iosched: warning: the result could not be saved to {path}: {getattr(e, 'strerror', None) or e}",
              file=sys.stderr)
        return False
    return True


def report_fleet(doc: object, args: argparse.Namespace) -> None:
    """`report FLEET.json`: each host's compare judged again and pooled, as `compare --hosts` showed it."""
    read_fleet(doc, args.file)
    assert isinstance(doc, dict)
    if args.plot_file:
        raise BadInput("a fleet is charted host by host in the terminal (--plot); --plot-file takes one compare")
    doc["pooled"] = pooled_fleet(doc, args.alpha, args.metric)
    if args.json:
        print(json.dumps(doc, indent=1))
    elif args.csv:
        sys.stdout.write(hosts_runs_csv([(h["host"], read_experiment(h["result"], h["host"])) for h in doc["hosts"]
                                         if h["result"] is not None]))
    else:
        sys.stdout.write("\n".join(fleet_lines(doc)) + "\n")
    for h in doc["hosts"] if args.plot else ():
        if h["result"] is not None:
            view = as_matrix(read_experiment(h["result"], h["host"]))
            print("\n" + printable(f"{h['host']}:"), flush=True)
            plot_result(view, judge_matrix(view, args.alpha, args.metric), args)


def _host_json(r: HostRun) -> dict[str, Any]:
    return {"host": r.host.name, "device": r.host.device, "status": r.status, "reason": r.reason or None,
            "scheduler_before": r.before, "scheduler_after": r.after, "put_back": r.put_back, "result": r.doc}


def unjudged(doc: dict[str, Any]) -> str | None:
    """Why a fleet's result cannot be judged (None: it can): fewer than two hosts with runs to pool, or no variant
    that two hosts could be judged on."""
    pooled = doc["pooled"]
    if pooled is None:
        kept = sum(1 for h in doc["hosts"] if h["status"] != "failed" and h["result"] is not None
                   and h["result"]["runs"])
        failed = sum(1 for h in doc["hosts"] if h["status"] == "failed")
        return (f"cannot judge: {kept} of {len(doc['hosts'])} hosts finished runs to pool, and it takes two"
                + (f" ({failed} failed: see why below)" if failed else ""))
    if not any(row.get("ratio") is not None for row in pooled["pooled"]):
        return f"cannot judge: fewer than two hosts could be judged on {metric_label(pooled['metric'])}"
    return None


def matrix_unjudged(doc: dict[str, Any]) -> str | None:
    """Why a fleet matrix cannot be judged (None: every job it ran can)."""
    cannot = [f["job"] for f in doc["fleets"] if unjudged(f) is not None]
    if not cannot:
        return None
    return f"cannot judge {', '.join(cannot)[:400]}: each job says why below"


def fleet_lines(doc: dict[str, Any]) -> list[str]:
    cannot = unjudged(doc)
    lines = [cannot] if cannot is not None else []  # the answer first: here, that there is none
    lines.append("hosts:")
    for h in doc["hosts"]:
        what = "done" if h["status"] == "done" else f"{h['status']}: {h['reason']}"
        lines.append(f"  {h['host']} ({h['device']}): {what}; {h['put_back']}")
    pooled = doc["pooled"]
    if pooled is None:
        return [printable(line) for line in lines]
    lines.append(f"per host ({metric_label(pooled['metric'])}, against {pooled['baseline']}):")
    for h in pooled["hosts"]:
        lines += [f"  {h['host']}: {c['verdict']}" for c in h["judgement"]["comparisons"] if c.get("primary")]
    lines.append("pooled:")
    lines += [f"  {row['sentence']}" for row in pooled["pooled"]]
    lines.append(f"  method: {pooled['method']}, "
                 f"{pooled.get('correction', 'Holm-corrected over the variants')}, alpha {pooled['alpha']:g}")
    return [printable(line) for line in lines]  # hosts' words and a saved file's strings: never escape codes
