"""`iosched advise --hosts FILE|H1,H2 [DEV] --yes`: the advice on every host, each host's own iosched running the whole
advice at its own pace over SSH (as `compare --hosts --independent`), then pooled per device model: whether the
hosts agree (and who does not, by how much) before the one answer per model and the udev rule that keeps it on every
disk of that model. `--save` keeps every host's advice and the pools in one file; `report FILE` decides every host
again from its runs and pools again.

The command line's part: every flag checked before any host is reached, the plan built (core/advice/hosts.py) and
run by the experiment service, its outcome shown (core/present/hosts_advice_report.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from iosched.cli.fleet import on_event
from iosched.core.advice.hosts import HostsAdvice, HostsAdvicePlan, decided_hosts
from iosched.core.advice.hosts_lockstep import LockstepAdvicePlan, check_lockstep
from iosched.core.base.decode import DecodeError, decode
from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.documents.document import FleetAdviceDoc
from iosched.core.documents.saved import MAX_DEPTH
from iosched.core.experiment import service
from iosched.core.experiment.control import Cancelled
from iosched.core.experiment.results import check_save_path
from iosched.core.fleet.fleet import parse_hosts
from iosched.core.present.hosts_advice_report import hosts_advice_lines, undecided
from iosched.core.present.result_file import ResultFile
from iosched.core.present.worded import worded_json

# Each host plans and tests on its own device: what names a place or a file on this machine, or needs a person at
# each host, does not reach them.
NOT_WITH_HOSTS = (("--observe", "observe"), ("--replay", "replay"), ("--on", "on"), ("--dir", "dir"),
                  ("--destroy-data", "destroy_data"), ("--fill", "fill"), ("--steady", "steady"),
                  ("--persist", "persist"), ("--dry-run", "dry_run"), ("--markdown", "markdown"))


def check_hosts_args(args: argparse.Namespace) -> HostsAdvice:
    """What an advice on many hosts cannot take, refused in one sentence before any host is reached."""
    for flag, dest in NOT_WITH_HOSTS:
        if getattr(args, dest, None):
            raise BadInput(f"--hosts: {flag} does not apply (each host's own iosched plans and tests its own device; "
                           "run `iosched advise` on a host for it); nothing was changed")
    if not args.yes:
        raise BadInput("--hosts runs each host's plan without showing it first: add --yes (`iosched advise DEV "
                       "--dry-run` on a host shows its plan); nothing was changed")
    candidates = ",".join(v.label for v in args.candidates) if args.candidates else None
    settings = HostsAdvice(goals=args.goal, candidates=candidates, budget_s=args.budget, runtime=args.runtime,
                           size=args.size, settle=args.settle, alpha=args.alpha, job=args.job, cmd=args.cmd,
                           ssh=args.ssh, iosched=args.remote_iosched)
    if getattr(args, "lockstep", False):
        check_lockstep(settings)
    else:
        settings.check()
    return settings


def cmd_advise_hosts(args: argparse.Namespace) -> int:
    settings = check_hosts_args(args)
    hosts = parse_hosts(args.hosts, args.device)
    if args.save is not None:
        check_save_path(args.save)
    saver = ResultFile(Path(args.save), keep_empty=True) if args.save is not None else None
    plan = LockstepAdvicePlan(settings, hosts) if args.lockstep else HostsAdvicePlan(settings, hosts)
    outcome = service.run(plan, saver, on_event)
    doc = outcome.doc
    if outcome.status != "final":
        if outcome.error is not None and not isinstance(outcome.error, KeyboardInterrupt):
            raise outcome.error
        _show(doc, args)
        print("iosched: stopped (Ctrl-C): every host puts its device back; the answers cover the hosts that finished",
              file=sys.stderr)
        raise Cancelled(outcome.reason or "cancelled")
    _show(doc, args)
    if outcome.save_error:
        print(f"iosched: warning: the advice could not be saved to {outcome.save_error}", file=sys.stderr)
    elif args.save is not None:
        print(f"iosched: saved to {args.save} (`iosched report {args.save}` decides it again)", file=sys.stderr)
    if outcome.save_refused:
        return 2
    return 1 if undecided(doc) else 0  # 1: a host gave no advice, or a model could not decide every goal


def _show(doc: FleetAdviceDoc, args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps(worded_json(doc), indent=1))
    else:
        sys.stdout.write("\n".join(hosts_advice_lines(doc)) + "\n")


def report_hosts_advice(parsed: object, args: argparse.Namespace) -> int:
    """`iosched report ADVICE.json` of an advice on many hosts: every host decided again from its runs and pooled
    again, as `advise --hosts` printed it; 1 when it could not decide, as `advise --hosts` exits."""
    if args.csv or args.plot or args.plot_file or args.metric or getattr(args, "markdown", None) is not None:
        raise BadInput("an advice on many hosts is shown as it was decided: --csv, --plot, --metric and --markdown "
                       "apply to one host's (report a host's own --save)")
    try:
        doc = decided_hosts(decode(FleetAdviceDoc, parsed, max_depth=MAX_DEPTH))
    except (DecodeError, IoschedError) as e:
        raise BadInput(f"{args.file} is not a saved iosched advice on many hosts: {e}") from None
    _show(doc, args)
    return 1 if undecided(doc) else 0
