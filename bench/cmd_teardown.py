#!/usr/bin/env python3
"""What ending a command's process tree costs a `--cmd` run: the time from start to the figures for a command that
returns at once, one that leaves a child behind (`(sleep 300 &)`), and one whose child calls setsid; with a cgroup
per run (where it can be made) and with only the process group and session. Also how many children outlived
their run (none is the answer). Needs root for the cgroup.
Usage: python3 bench/cmd_teardown.py [--runs 20]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import time
from pathlib import Path

from iosched.core.experiment import commands
from iosched.core.experiment.control import Control
from iosched.core.settings.cmd_cgroup import own_cgroup

CASES = {
    "returns at once": "echo v=3",
    "leaves a child": "(sleep 300.5 & echo pid=$!); echo v=3",
    "child calls setsid": "setsid sh -c 'sleep 300.5 & echo pid=$!'; echo v=3",
}


def alive(pid: int) -> bool:
    try:
        return b"300.5" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    real_open = commands.open_cmd_cgroup
    modes = [("cgroup", real_open)] if own_cgroup() is not None else []
    modes.append(("group+session", lambda root="/": None))
    print(f"{'mode':<14} {'command':<20} {'median ms':>9} {'max ms':>7} {'left':>5}")
    for mode, opener in modes:
        commands.open_cmd_cgroup = opener  # type: ignore[assignment]
        for name, cmd in CASES.items():
            times, left = [], 0
            for _ in range(args.runs):
                t0 = time.monotonic()
                _figures, output, failed = commands.run_cmd(cmd, Control(), lambda: None)
                times.append((time.monotonic() - t0) * 1000)
                assert failed is None, failed
                pids = [int(w[4:]) for w in output.split() if w.startswith("pid=")]
                for p in pids:
                    if alive(p):  # what the group and session cannot reach: counted, then ended here
                        left += 1
                        os.kill(p, signal.SIGKILL)
            print(f"{mode:<14} {name:<20} {statistics.median(times):9.1f} {max(times):7.1f} {left:5d}")
    commands.open_cmd_cgroup = real_open  # type: ignore[assignment]


if __name__ == "__main__":
    main()
