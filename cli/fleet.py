"""`iosched compare --hosts FILE|h1,h2 DEV --schedulers A,B --job NAME`: the compare on every host at once, each by
its own iosched over SSH (core/experiment/fleet.py), then judged per host and pooled (cli/pooled.py)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from iosched.cli.pooled import pooled_verdict
from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.experiment.fleet import Host, HostRun, parse_hosts, run_fleet
from iosched.core.experiment.metrics import metric_label
from iosched.core.experiment.saved import check_experiment
from iosched.core.load.jobs import CATALOG


def check_fleet_args(args: argparse.Namespace) -> None:
    """What a fleet compare cannot take, refused in one sentence before any host is reached."""
    for flag, given in (("--jobs", args.jobs), ("--study", args.study), ("--resume", args.resume),
                        ("--alternate", args.alternate), ("--cmd", args.cmd), ("--background", args.background),
                        ("--replay", args.replay), ("--plan", args.plan), ("--save", args.save),
                        ("--plot", args.plot or args.plot_file), ("--dir", args.dir), ("--csv", args.csv),
                        ("--destroy-data", args.destroy_data), ("--trace", args.trace), ("--raw", args.raw)):
        if given:
            raise BadInput(f"--hosts runs one catalog job on every host: {flag} does not apply")
    if not args.schedulers:
        raise BadInput("--schedulers is required (e.g. none,bfq)")
    if not args.job or args.job not in CATALOG:
        raise BadInput("--hosts runs a catalog job (`iosched jobs` lists them): a job file lies on this machine only")


def remote_argv(args: argparse.Namespace, host: Host) -> list[str]:
    """The compare each host's iosched runs, from the checked values only."""
    argv = [args.remote_iosched, "compare", host.device, "--schedulers", args.schedulers, "--job", args.job,
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


def cmd_fleet(args: argparse.Namespace) -> int:
    check_fleet_args(args)
    hosts = parse_hosts(args.hosts, args.device)
    print(f"iosched: {args.job} under {args.schedulers} on {len(hosts)} hosts, each by its own iosched over SSH",
          file=sys.stderr, flush=True)

    def said(host: str, line: str) -> None:
        # A host's words reach this terminal: no control characters (escape sequences) from it.
        shown = "".join(ch if ch.isprintable() else "?" for ch in line)[:500]
        if shown.strip():
            print(f"[{host}] {shown}", file=sys.stderr, flush=True)

    runs = run_fleet(hosts, lambda h: remote_argv(args, h), said, args.ssh, args.remote_iosched)
    done: list[tuple[str, dict[str, Any]]] = []
    for r in runs:
        if r.status == "done" and r.doc is not None:
            try:
                done.append((r.host.name, check_experiment(r.doc, r.host.name)))
            except IoschedError as e:
                r.status, r.reason = "failed", f"its result did not read back: {e}"
    pooled = pooled_verdict(done, args.alpha, args.metric) if len(done) >= 2 else None
    if args.json:
        print(json.dumps({"kind": "fleet", "hosts": [_host_json(r) for r in runs], "pooled": pooled}, indent=1))
    else:
        sys.stdout.write("\n".join(fleet_lines(runs, pooled)) + "\n")
    return 0 if all(r.status == "done" for r in runs) else 1


def _host_json(r: HostRun) -> dict[str, Any]:
    return {"host": r.host.name, "device": r.host.device, "status": r.status, "reason": r.reason or None,
            "scheduler_before": r.before, "scheduler_after": r.after, "put_back": r.put_back, "result": r.doc}


def fleet_lines(runs: list[HostRun], pooled: dict[str, Any] | None) -> list[str]:
    lines = ["hosts:"]
    for r in runs:
        what = "done" if r.status == "done" else f"{r.status}: {r.reason}"
        lines.append(f"  {r.host.name} ({r.host.device}): {what}; {r.put_back}")
    if pooled is None:
        lines.append("fewer than two hosts finished: nothing to pool")
        return lines
    lines.append(f"per host ({metric_label(pooled['metric'])}, against {pooled['baseline']}):")
    for h in pooled["hosts"]:
        lines += [f"  {h['host']}: {c['verdict']}" for c in h["judgement"]["comparisons"] if c.get("primary")]
    lines.append("pooled:")
    lines += [f"  {row['sentence']}" for row in pooled["pooled"]]
    lines.append(f"  method: {pooled['method']}, Holm-corrected over the variants, alpha {pooled['alpha']:g}")
    return lines
