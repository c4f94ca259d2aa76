#!/usr/bin/env python3
"""Soak: the TUI at 0.25 s for a long time while devices come and go and a job starts and stops.

`iosched demo` runs in tmux (its sandbox loop device is selected); every 5 s one loop device of a small pool
is attached or detached; every minute `j` + Enter starts the suggested job on the sandbox and `x` stops it
30 s later. Every minute the TUI process's RSS, open fds and threads are printed; at the end the growth after
the warm-up (the first 10 minutes, or a fifth of a shorter run). Needs root, tmux and fio.
Usage: python3 bench/soak.py [--minutes 60] [--pool 3] [--warmup 10] [--trace-dir DIR]
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

from common import rss_mb, tmux_session, tree_pids  # noqa: E402

ROOT = HERE.parent
SESSION = "bench-soak"


def tui_pid(pane: int) -> int | None:
    for pid in tree_pids(pane):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(b"python" in a for a in cmd[:1]) and any(b"iosched" in a for a in cmd[1:]):
            return pid
    return None


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _detach_under(directory: str) -> None:
    """Whatever loop device still has its backing file in our temp dir (the sandbox, should the TUI fail)."""
    out = subprocess.run(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        name, _, back = line.partition(" ")
        if back.strip().startswith(directory):
            subprocess.run(["losetup", "-d", name], capture_output=True)


def keys(*k: str) -> None:
    subprocess.run(["tmux", "send-keys", "-t", SESSION, *k], capture_output=True)


class Pool:
    """Loop devices over sparse files, attached and detached in turn; all detached at the end."""

    def __init__(self, tmp: str, size: int) -> None:
        self.files = [Path(tmp, f"pool{i}.img") for i in range(size)]
        for f in self.files:
            subprocess.run(["truncate", "-s", "64M", str(f)], check=True)
        self.attached: dict[Path, str] = {}
        self.n = 0

    def toggle(self) -> None:
        f = self.files[self.n % len(self.files)]
        self.n += 1
        if f in self.attached:
            subprocess.run(["losetup", "-d", self.attached.pop(f)], capture_output=True)
        else:
            out = subprocess.run(["losetup", "-f", "--show", str(f)], capture_output=True, text=True)
            if out.returncode == 0:
                self.attached[f] = out.stdout.strip()

    def close(self) -> None:
        for dev in self.attached.values():
            subprocess.run(["losetup", "-d", dev], capture_output=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--minutes", type=float, default=60)
    p.add_argument("--pool", type=int, default=3)
    p.add_argument("--warmup", type=float, default=10, help="minutes before the RSS baseline")
    p.add_argument("--trace-dir", help="run under tracemalloc (bench/traced_iosched.py), dumps every 5 min here")
    args = p.parse_args()
    warmup = min(args.warmup, args.minutes / 5)
    with tempfile.TemporaryDirectory(prefix="iosched-soak-") as tmp:
        pool = Pool(tmp, args.pool)
        run_dir = Path(tmp, "run")
        env, program = f"IOSCHED_RUN_DIR={run_dir}", "-m iosched.cli"
        if args.trace_dir:
            env += f" TRACE_DIR={Path(args.trace_dir).resolve()}"
            program = str(HERE / "traced_iosched.py")
        cmd = f"cd {ROOT} && {env} {sys.executable} {program} -i 0.25 demo --size 1G --dir {tmp}"
        rows: list[tuple[float, float, int, int]] = []
        try:
            with tmux_session(SESSION, cmd, 120, 40) as pane:
                time.sleep(4)
                pid = tui_pid(pane)
                if pid is None:
                    sys.exit("the TUI did not start")
                print(f"TUI pid {pid}: 0.25 s refresh, 120x40, a pool of {args.pool} loop devices toggled every "
                      f"5 s, a job started every minute and stopped 30 s later", flush=True)
                start = time.monotonic()
                next_toggle, next_job, next_stop, next_row = start, start + 5, None, start
                jobs = ran = 0
                seen_fio = False
                while (now := time.monotonic()) - start < args.minutes * 60:
                    if not Path(f"/proc/{pid}").exists():
                        sys.exit(f"the TUI exited after {(now - start) / 60:.1f} min")
                    if now >= next_toggle:
                        pool.toggle()
                        next_toggle += 5
                    if now >= next_job:
                        keys("Escape")  # whatever dialog is open; alone, or ESC + j reads as Alt+j
                        time.sleep(0.5)
                        keys("j")
                        time.sleep(0.5)
                        keys("Enter")
                        jobs += 1
                        next_job += 60
                        next_stop = now + 30
                    if next_stop is not None and not seen_fio:
                        seen_fio = any(_comm(c) == "fio" for c in tree_pids(pid))
                        ran += seen_fio
                    if next_stop is not None and now >= next_stop:
                        keys("x")
                        next_stop, seen_fio = None, False
                    if now >= next_row:
                        row = ((now - start) / 60, rss_mb(pid), fds(pid), threads(pid))
                        rows.append(row)
                        print(f"  {row[0]:5.1f} min  RSS {row[1]:6.1f} MB  fds {row[2]:3d}  threads {row[3]:2d}",
                              flush=True)
                        next_row += 60
                    time.sleep(0.1)
                rows.append(((time.monotonic() - start) / 60, rss_mb(pid), fds(pid), threads(pid)))
                keys("x")
                keys("q")
                time.sleep(1)
                keys("y")  # quit confirmed: the TUI detaches the demo sandbox itself
                deadline = time.monotonic() + 20
                while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
                    time.sleep(0.2)
        finally:
            pool.close()
            _detach_under(tmp)
    base = next(r for r in rows if r[0] >= warmup)
    end = rows[-1]
    print(f"{end[0]:.1f} min, {jobs} jobs started ({ran} seen running fio), {pool.n} attach/detach steps; no crash")
    print(f"RSS {rows[0][1]:.1f} MB at start, {base[1]:.1f} MB after {base[0]:.1f} min, {end[1]:.1f} MB at the end: "
          f"{end[1] - base[1]:+.1f} MB after the warm-up")
    print(f"fds {min(r[2] for r in rows)}-{max(r[2] for r in rows)} (end {end[2]}), "
          f"threads {min(r[3] for r in rows)}-{max(r[3] for r in rows)} (end {end[3]})")


if __name__ == "__main__":
    main()
