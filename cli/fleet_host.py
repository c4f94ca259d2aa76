"""`iosched fleet-host DEV --schedulers A,B --job NAME --session HEX`: the host end of a lockstep `compare --hosts`,
started by the controller over SSH (core/fleet/fleet_host.py). Its input is the controller's lines, its output
one JSON answer a line; the end of its input, a signal, `bye` or `--idle-s` seconds without a line puts the device
back."""

from __future__ import annotations

import argparse
import sys

from iosched.core.base.errors import BadInput
from iosched.core.documents.params import parse_variants
from iosched.core.fleet.fleet_host import HostEnd, encode, serve_lines
from iosched.core.load.jobs import CATALOG


def cmd_fleet_host(args: argparse.Namespace) -> int:
    job = CATALOG.get(args.job)
    if job is None or job.cgroup_weights:
        raise BadInput(f"{args.job[:40]!r} is no catalog job a fleet runs")
    end = HostEnd(args.device, parse_variants(args.schedulers), job, args.session, args.root)

    def say(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    # The controller's lines, bounded as they are read and never a decoding error (a longer line is refused).
    sys.stdin.reconfigure(errors="replace")  # type: ignore[union-attr]
    lines = iter(lambda: sys.stdin.readline(4096), "")
    with end.held() as ready:
        say(encode(ready))
        bye = serve_lines(end, lines, say, args.idle_s)
    if bye:  # after the put-back, so the switches include it
        say(encode({"ok": True, "bye": True, "switches": end.switches()}))
    return 0
