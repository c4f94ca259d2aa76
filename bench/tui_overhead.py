#!/usr/bin/env python3
"""CPU and memory of the running TUI next to glances and btop, in one run; time to the first full frame.

Figures, not assertions. Needs root, tmux and fio; glances and btop are benchmark-only (Debian:
apt-get install glances btop). Each program runs alone in its own tmux server at the same size and refresh,
with extra loop devices attached; CPU is that of the process tree over the measured window after a warm-up.
btop reads its refresh from $XDG_CONFIG_HOME/btop/btop.conf (`update_ms`), which the run writes.

Scenarios: idle at 1 s; one device under a fio randread load at 1 s (for iosched the loaded device is the
selected one, so its graphs scroll every second); iosched idle at 0.25 s. Then where iosched's time goes
per tick (bench/tui_profile.py: headless, fixture data, cProfile). --baseline REF also measures that git
revision of iosched (same package layout) in the same run, for a before/after on the same machine state.

Usage: python3 bench/tui_overhead.py [--seconds 30] [--warmup 5] [--devices 40] [--rounds 1] [--baseline REF]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent

from common import extra_loop_devices, measure_process  # noqa: E402

ROOT = HERE.parent
SIZE = (200, 50)


@contextlib.contextmanager
def tmux_alone(name: str, command: str, width: int, height: int) -> Iterator[int]:
    """``command`` in a tmux server of its own (no other pane shares its event loop); yields the pane's pid."""
    tmux = ["tmux", "-L", f"iosched-bench-{name}"]
    subprocess.run([*tmux, "kill-server"], capture_output=True)
    for _ in range(3):  # a server just killed on the same socket can make a new one exit at once
        started = subprocess.run([*tmux, "new-session", "-d", "-s", name, "-x", str(width), "-y", str(height),
                                  command], capture_output=True)
        if started.returncode == 0:
            break
        time.sleep(0.3)
    else:
        raise RuntimeError(f"tmux could not start {name}: {started.stderr.decode().strip()}")
    try:
        pid = int(subprocess.run([*tmux, "display-message", "-p", "-t", name, "#{pane_pid}"],
                                 capture_output=True, text=True, check=True).stdout)
        yield pid
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def send_keys(name: str, *keys: str) -> None:
    subprocess.run(["tmux", "-L", f"iosched-bench-{name}", "send-keys", "-t", name, *keys], check=True)


def screen(name: str) -> str:
    return subprocess.run(["tmux", "-L", f"iosched-bench-{name}", "capture-pane", "-p", "-t", name],
                          capture_output=True, text=True).stdout


def baseline_tree(ref: str, into: Path) -> Path:
    """The iosched package of git revision ``ref``, laid out for PYTHONPATH (cli/ is the package root)."""
    src = into / "src"
    src.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    pkg = into / "pkg" / "iosched"
    shutil.copytree(src / "cli", pkg)
    for sub in ("core", "tui", "themes"):
        shutil.copytree(src / sub, pkg / sub)
    return into / "pkg"


class Programs:
    def __init__(self, tmp: Path, baseline: Path | None) -> None:
        self.tmp, self.baseline = tmp, baseline
        self.xdg = tmp / "xdg"

    def btop_config(self, interval: float) -> None:
        conf = self.xdg / "btop" / "btop.conf"
        conf.parent.mkdir(parents=True, exist_ok=True)
        conf.write_text(f"update_ms = {int(interval * 1000)}\n")

    def command(self, name: str, interval: float) -> str:
        run_dir = tempfile.mkdtemp(dir=self.tmp)  # its own journal and instance lock
        if name == "iosched":
            return f"cd {self.tmp} && IOSCHED_RUN_DIR={run_dir} {sys.executable} -m iosched.cli -i {interval}"
        if name == "baseline":
            return (f"cd {self.tmp} && PYTHONPATH={self.baseline} IOSCHED_RUN_DIR={run_dir} "
                    f"{sys.executable} -m iosched.cli -i {interval}")
        if name == "glances":
            return f"glances -t {interval}"
        if name == "btop":
            self.btop_config(interval)
            return f"XDG_CONFIG_HOME={self.xdg} btop --utf-force"
        raise ValueError(name)

    def available(self) -> list[str]:
        names = ["iosched"] + (["baseline"] if self.baseline else [])
        return names + [n for n in ("glances", "btop") if shutil.which(n)]


def select_device(name: str, device: str) -> None:
    """Move iosched's table cursor to ``device`` (rows are sorted by name), so its graphs are the ones drawn."""
    from iosched.core.kernel.devices import list_devices

    names = sorted(d.name for d in list_devices())
    send_keys(name, *(["Down"] * names.index(device)))


def measure(programs: Programs, name: str, interval: float, warmup: float, seconds: float,
            select: str | None = None) -> tuple[float, float]:
    with tmux_alone(name, programs.command(name, interval), *SIZE) as pid:
        time.sleep(1.5)
        if select and name in ("iosched", "baseline"):
            select_device(name, select)
        time.sleep(max(0.0, warmup - 1.5))
        return measure_process(pid, seconds)


def first_frame_seconds(programs: Programs, name: str, width: int, height: int) -> float:
    """From process start until the device table header, the footer and the CPU pane are all on the screen."""
    start = time.monotonic()
    with tmux_alone(f"{name}-first", programs.command(name, 1.0), width, height):
        while time.monotonic() - start < 20:
            shown = screen(f"{name}-first")
            if "Scheduler" in shown and "Quit" in shown and "CPU" in shown:
                return time.monotonic() - start
            time.sleep(0.01)
    return float("nan")


def breakdown(pythonpath: Path | None) -> str:
    """tui_profile.py's figures with the selected device under load, then idle."""
    env = None if pythonpath is None else {"PYTHONPATH": str(pythonpath), "PATH": "/usr/bin:/bin"}
    parts = []
    for extra in ([], ["--idle"]):
        out = subprocess.run([sys.executable, str(HERE / "tui_profile.py"), *extra], capture_output=True, text=True,
                             env=env)
        parts.append(out.stdout.rstrip() or out.stderr.strip().splitlines()[-1])
    return "\n".join(parts)


@contextlib.contextmanager
def fio_load(device: str, seconds: float) -> Iterator[None]:
    fio = subprocess.Popen(["fio", "--name=bench", f"--filename={device}", "--direct=1", "--rw=randread",
                            "--bs=4k", "--iodepth=8", "--ioengine=libaio", "--time_based",
                            f"--runtime={int(seconds)}", "--readonly"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        yield
    finally:
        # The whole group: fio's job processes outlive a killed parent and would load the next scenario.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(fio.pid, signal.SIGKILL)
        fio.wait()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--warmup", type=float, default=5)
    p.add_argument("--devices", type=int, default=40)
    p.add_argument("--rounds", type=int, default=1, help="repeat each measurement; the median is shown")
    p.add_argument("--baseline", metavar="REF", help="also measure this git revision of iosched")
    args = p.parse_args()
    cpu = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"{args.devices} extra loop devices, {SIZE[0]}x{SIZE[1]}, each program alone in tmux, "
          f"{args.warmup:.0f} s warm-up then {args.seconds:.0f} s, {args.rounds} round(s), median; "
          f"{cpu} CPUs, load average {' '.join(load)} at start")
    with tempfile.TemporaryDirectory(prefix="iosched-bench-") as tmp, \
            extra_loop_devices(args.devices) as loops:
        base = baseline_tree(args.baseline, Path(tmp)) if args.baseline else None
        programs = Programs(Path(tmp), base)
        names = programs.available()
        label = {"baseline": f"iosched@{args.baseline}"}

        for name in [n for n in names if n in ("iosched", "baseline")]:
            frames = [first_frame_seconds(programs, name, w, h) for w, h in ((120, 40), (200, 50)) for _ in range(3)]
            print(f"{label.get(name, name)}: first full frame after {', '.join(f'{f:.2f}' for f in frames[:3])} s "
                  f"(120x40), {', '.join(f'{f:.2f}' for f in frames[3:])} s (200x50)")

        results: dict[tuple[str, str], list[tuple[float, float]]] = {}
        scenarios = [("idle, 1 s", 1.0, False, names), ("fio load, 1 s", 1.0, True, names),
                     ("idle, 0.25 s", 0.25, False, [n for n in names if n in ("iosched", "baseline")])]
        for scenario, interval, loaded, who in scenarios:
            for _ in range(args.rounds):
                for name in who:  # interleaved, so drift in the machine's load spreads over all
                    runtime = args.seconds + args.warmup + 10
                    with fio_load(loops[0], runtime) if loaded else contextlib.nullcontext():
                        figures = measure(programs, name, interval, args.warmup, args.seconds,
                                          select=Path(loops[0]).name if loaded else None)
                    results.setdefault((scenario, name), []).append(figures)

        print(f"\n{'':<16}" + "".join(f"{label.get(n, n):>22}" for n in names))
        medians: dict[tuple[str, str], float] = {}
        for scenario, _, _, who in scenarios:
            row = f"{scenario:<16}"
            for name in names:
                if name not in who:
                    row += f"{'':>22}"
                    continue
                figures = results[(scenario, name)]
                c = statistics.median(f[0] for f in figures)
                rss = statistics.median(f[1] for f in figures)
                medians[(scenario, name)] = c
                row += f"{f'{c:5.2f}% {rss:5.1f} MB':>22}"
            print(row)
        print("(CPU: % of one core, process tree; RSS at the end of the window)")
        for scenario in ("idle, 1 s", "fio load, 1 s"):
            ours = medians.get((scenario, "iosched"))
            for other in ("glances", "btop", "baseline"):
                theirs = medians.get((scenario, other))
                if ours is not None and theirs:
                    print(f"  {scenario}: iosched / {label.get(other, other)} = {ours / theirs:.2f}")

    print("\nWhere iosched's time goes per tick (bench/tui_profile.py):")
    print(breakdown(None))
    if args.baseline:
        with tempfile.TemporaryDirectory(prefix="iosched-bench-") as tmp:
            print(f"the same for {label['baseline']}:")
            print(breakdown(baseline_tree(args.baseline, Path(tmp))))


if __name__ == "__main__":
    main()
