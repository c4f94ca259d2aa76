"""Does `iosched advise` hold its --budget? The wall time of the whole command (Python's start, observe, a command
timed, plan, pilot, tests, decide) against the budget, for each kind of workload (the catalog's throughput,
latency and interactive tests, a --cmd, an --observe), and the smallest budget the plan accepts for one goal on a
loop device, run at that budget. On a loop device this script makes; the load average is printed with the figures,
since a loaded machine is what the budget must hold under.

Each case runs the real command line (`--yes --json`), so what is measured is what a user waits for; the advice's
own record (`budget`: elapsed, stopped at the budget, runs short) is printed beside it. "held" is wall ≤ budget.

    sudo .venv/bin/python bench/advise_budget.py [--cases all|quick] [--under /dev/shm]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

from common import extra_loop_devices

# (what, arguments, budget in seconds; None: the smallest the plan accepts, from --dry-run --json)
CASES = {
    "quick": [
        ("--cmd 'sleep 0.3', 2 variants", ["--goal", "throughput", "--cmd", "sleep 0.3", "--candidates",
                                           "mq-deadline", "--settle", "0"], 40),
    ],
    "all": [
        ("README: --goal throughput --budget 3m", ["--goal", "throughput"], 180),
        ("latency, 2 candidates", ["--goal", "latency", "--candidates", "none,bfq"], 90),
        ("interactive, 2 candidates", ["--goal", "interactive", "--candidates", "none,bfq"], 120),
        ("--cmd 'sleep 0.3', 2 variants", ["--goal", "throughput", "--cmd", "sleep 0.3", "--candidates",
                                           "mq-deadline", "--settle", "0"], 40),
        ("--observe 5s, 2 variants", ["--goal", "throughput", "--observe", "5s", "--candidates", "mq-deadline"], 100),
        ("smallest for throughput, 2 variants", ["--goal", "throughput", "--candidates", "mq-deadline"], None),
    ],
}


def advise(dev: str, extra: list[str], budget: float, dry: bool = False) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "iosched.cli", "advise", dev, *extra, "--budget", f"{budget:g}", "--json",
            "--dry-run" if dry else "--yes"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=budget * 3 + 120)


def smallest(dev: str, extra: list[str]) -> float:
    """The smallest budget the plan accepts: the plan's own figure, from a dry run over a generous budget."""
    r = advise(dev, extra, 3600, dry=True)
    if r.returncode != 0:
        raise SystemExit(f"advise --dry-run failed ({r.returncode}): {r.stderr[-2000:]}")
    return float(math.ceil(json.loads(r.stdout)["plan"]["smallest_s"]))


def reader(dev: str, seconds: float) -> subprocess.Popen[bytes]:
    """Something for --observe to see: direct 4 KiB reads of the device for ``seconds``."""
    return subprocess.Popen(["timeout", f"{seconds:g}", "dd", f"if=/dev/{dev}", "of=/dev/null", "bs=4k",
                             "iflag=direct", "count=10000000"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_case(dev: str, extra: list[str], budget: float) -> dict[str, object]:
    feeder = reader(dev, 15) if "--observe" in extra else None
    try:
        t0 = time.monotonic()
        r = advise(dev, extra, budget)
        wall = time.monotonic() - t0
    finally:
        if feeder is not None:
            feeder.kill()
            feeder.wait()
    if r.returncode not in (0, 1):
        return {"wall": wall, "error": r.stderr.strip().splitlines()[-1][:160] if r.stderr.strip() else "?"}
    doc = json.loads(r.stdout)
    runs = sum(len(part["runs"]) for t in doc["tests"] for part in (t["pilot"], t["result"]) if part is not None)
    answer = "; ".join(f"{g['goal']}: " + (f"switch to {g['recommended']}" if g["outcome"] == "switch" else
                                           "keep, shown equal" if g["outcome"] == "keep-equal" else
                                           f"cannot tell ({', '.join(g['reasons'])})")
                       for g in doc["advice"]) or "no answer"
    return {"wall": wall, "plan": doc["plan"]["seconds"], "runs": runs, "budget": doc.get("budget") or {},
            "answer": answer}


def load_average() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", choices=sorted(CASES), default="all")
    ap.add_argument("--under", default=None, help="where the loop devices' files lie (default: the temp directory)")
    args = ap.parse_args()
    print(f"load average before: {load_average()} on {os.cpu_count()} CPUs", flush=True)
    print(f"{'case':<40} {'budget':>6} {'plan':>6} {'wall':>6} {'held':>5} {'runs':>5} {'stopped':>7}  answer")
    with extra_loop_devices(1, "1G", direct=True, under=args.under) as (path,):
        dev = path.removeprefix("/dev/")
        for name, extra, budget in CASES[args.cases]:
            b = smallest(dev, extra) if budget is None else float(budget)
            got = run_case(dev, extra, b)
            for _ in range(3):  # the smallest accepted: the dry run's figure, a few seconds on where it was refused
                if budget is not None or "error" not in got:
                    break
                b += 5
                got = run_case(dev, extra, b)
            wall = float(got["wall"])  # type: ignore[arg-type]
            if "error" in got:
                print(f"{name:<40} {b:>5.0f}s {'':>6} {wall:>5.0f}s {'':>5} {'':>5} {'':>7}  refused: {got['error']}",
                      flush=True)
                continue
            rec = got["budget"]
            assert isinstance(rec, dict)
            held = "yes" if wall <= b else "NO"
            plan = float(got["plan"])  # type: ignore[arg-type]
            print(f"{name:<40} {b:>5.0f}s {plan:>5.0f}s {wall:>5.0f}s {held:>5} {got['runs']:>5} "
                  f"{'yes' if rec.get('stopped') else 'no':>7}  {got['answer']}", flush=True)
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
