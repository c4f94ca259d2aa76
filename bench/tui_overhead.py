#!/usr/bin/env python3
"""CPU and memory of the running TUI next to btop and glances, and time to the first full frame.

Figures, not assertions. Needs root and tmux; btop and glances are measured when installed
(Debian: apt-get install btop glances). Each program runs alone in tmux at the same refresh (1 s).
Usage: python3 bench/tui_overhead.py [--seconds 60] [--devices 40] [--load]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

from common import extra_loop_devices, measure_process, tmux_session  # noqa: E402

ROOT = HERE.parent


def programs(run_dir: str) -> dict[str, str]:
    progs = {"iosched": f"cd {ROOT} && IOSCHED_RUN_DIR={run_dir} {sys.executable} -m iosched -i 1"}
    if shutil.which("btop"):
        progs["btop"] = "btop --update 1000"
    if shutil.which("glances"):
        progs["glances"] = "glances -t 1"
    return progs


def first_frame_seconds(run_dir: str, width: int = 120, height: int = 40) -> float:
    """From process start until the device table header and the footer are both on the screen."""
    start = time.monotonic()
    with tmux_session("bench-first", programs(run_dir)["iosched"], width, height):
        while time.monotonic() - start < 20:
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", "bench-first"],
                                    capture_output=True, text=True).stdout
            if "Scheduler" in screen and "Quit" in screen and "CPU" in screen:
                return time.monotonic() - start
            time.sleep(0.01)
    return float("nan")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--devices", type=int, default=40)
    p.add_argument("--load", action="store_true", help="run a fio randread load on one extra device")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as run_dir, extra_loop_devices(args.devices) as loops:
        fio = None
        if args.load:
            fio = subprocess.Popen(["fio", "--name=b", f"--filename={loops[0]}", "--direct=1", "--rw=randread",
                                    "--bs=4k", "--iodepth=8", "--ioengine=libaio", "--time_based",
                                    f"--runtime={int(args.seconds * 8)}", "--thread"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            frames = [first_frame_seconds(run_dir) for _ in range(3)]
            print(f"time to first full frame (120x40): {', '.join(f'{f:.2f}' for f in frames)} s")
            load = "under fio load" if args.load else "idle"
            print(f"{args.devices} extra loop devices, {load}, {args.seconds:.0f} s each, refresh 1 s")
            for size in ((200, 50), (80, 24)):
                for name, cmd in programs(run_dir).items():
                    with tmux_session(f"bench-{name}", cmd, *size) as pid:
                        time.sleep(3)  # past start-up
                        cpu, rss = measure_process(pid, args.seconds)
                    print(f"  {size[0]}x{size[1]}  {name:<8} {cpu:5.2f}% of a core   RSS {rss:6.1f} MB")
        finally:
            if fio is not None:
                fio.kill()
                fio.wait()


if __name__ == "__main__":
    main()
