#!/usr/bin/env python3
"""Memory of the TUI over a long run: RSS printed every few minutes.

History is bounded (1200 points per series), so RSS should level off once the window is full (5 minutes at
0.25 s, 20 at 1 s). Needs root and tmux.
Usage: python3 bench/tui_memory.py [--minutes 60] [--every 5] [--devices 10] [--interval 0.25] [--size 120x40]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

from common import extra_loop_devices, process_cpu_seconds, rss_mb, tmux_session, tree_pids  # noqa: E402

ROOT = HERE.parent


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--minutes", type=float, default=60)
    p.add_argument("--every", type=float, default=5)
    p.add_argument("--devices", type=int, default=10)
    p.add_argument("--interval", type=float, default=0.25)
    p.add_argument("--size", default="120x40", help="the terminal, WIDTHxHEIGHT")
    args = p.parse_args()
    width, height = (int(n) for n in args.size.split("x"))
    with tempfile.TemporaryDirectory() as run_dir, extra_loop_devices(args.devices):
        cmd = f"cd {ROOT} && IOSCHED_RUN_DIR={run_dir} {sys.executable} -m iosched.cli -i {args.interval:g}"
        with tmux_session(f"bench-memory-{os.getpid()}", cmd, width, height) as pane:
            time.sleep(3)
            start = time.monotonic()
            print(f"refresh {args.interval:g} s, {args.devices} extra loop devices, {width}x{height}", flush=True)
            while True:
                pids = tree_pids(pane)
                elapsed = (time.monotonic() - start) / 60
                cpu = sum(process_cpu_seconds(p) for p in pids)
                print(f"  {elapsed:5.1f} min  RSS {sum(rss_mb(p) for p in pids):6.1f} MB  CPU so far {cpu:6.1f} s",
                      flush=True)
                if elapsed >= args.minutes:
                    break
                time.sleep(args.every * 60)


if __name__ == "__main__":
    main()
