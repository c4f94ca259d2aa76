#!/usr/bin/env python3
"""`report` and `replay` of a two-day recording (300k samples at 0.5 s): time and peak RSS.

report: the real command, under /usr/bin/time. replay: the real `iosched replay FILE` in tmux: time to its
first frame, to the first frame with data (the part read so far), to the whole file read, peak RSS
(VmHWM), and how long `q` takes to end it while it is still reading. Needs tmux.
Usage: python3 bench/big_recording.py [--samples 300000] [--busy 2] [--idle 6]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))

from common import tmux_session  # noqa: E402
from recording_support import write_recording  # noqa: E402


def hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def screen(name: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True).stdout


def wait_for(cond, limit: float = 300.0) -> float:
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > limit:
            raise SystemExit("gave up waiting")
        time.sleep(0.02)
    return time.monotonic()


def replay(path: Path, quit_early: bool) -> None:
    name = f"bench-replay-{os.getpid()}"
    cmd = f"cd {ROOT} && exec {sys.executable} -m iosched.cli replay {path}"
    start = time.monotonic()
    with tmux_session(name, cmd, 120, 40) as pane:
        first = wait_for(lambda: "replay " in screen(name))
        if quit_early:
            subprocess.run(["tmux", "send-keys", "-t", name, "q"], check=True)
            t = time.monotonic()
            wait_for(lambda: not Path(f"/proc/{pane}").exists() or "replay " not in screen(name), 60)
            print(f"replay, q while reading: first frame {first - start:.2f} s, gone {time.monotonic() - t:.2f} s "
                  "after q")
            return
        data = wait_for(lambda: "/" in screen(name).split("replay ", 1)[-1].split("\n", 1)[0]
                        and "+" in screen(name))
        done = wait_for(lambda: "so far" not in screen(name) and ",/. step" in screen(name))
        peak = hwm_mb(pane)
        subprocess.run(["tmux", "send-keys", "-t", name, "q"], check=True)
        print(f"replay: first frame {first - start:.2f} s, first data {data - start:.2f} s, whole file read "
              f"{done - start:.2f} s, peak RSS {peak:.0f} MB")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--samples", type=int, default=300_000)
    p.add_argument("--busy", type=int, default=2)
    p.add_argument("--idle", type=int, default=6)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = write_recording(Path(tmp, "two-days.jsonl"), args.samples, busy=args.busy, idle=args.idle,
                               switch_every=7200)
        print(f"{args.samples} samples at 0.5 s, {args.busy} busy and {args.idle} idle disks, "
              f"{path.stat().st_size / 1e6:.0f} MB", flush=True)
        for flags in ([], ["--csv"]):
            out = subprocess.run(["/usr/bin/time", "-f", "%e %M", sys.executable, "-m", "iosched.cli", "report",
                                  str(path), *flags], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 text=True, check=True)
            secs, kb = out.stderr.split()[-2:]
            print(f"report {' '.join(flags)}: {float(secs):.1f} s, peak RSS {int(kb) / 1024:.0f} MB", flush=True)
        replay(path, quit_early=False)
        replay(path, quit_early=True)


if __name__ == "__main__":
    main()
