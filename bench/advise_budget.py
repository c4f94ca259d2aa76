"""Does `iosched advise` hold its --budget? Wall time of the whole command (observe, plan, pilot, tests, decide)
against the budget and against the plan's own estimate, on loop devices this script makes, and the per-run overhead
the plan should count (core/advice/plan.py RUN_OVERHEAD_S: the switch, the tunables written and read back, fio's
start and its result, the looks' judging).

Each case runs the real command line (`--yes --json`), so what is measured is what a user waits for. The per-run
overhead is (wall − the runs' planned length and settle) / runs, the command's start and its observation included:
an upper bound of what the plan's constant must cover.

    sudo .venv/bin/python bench/advise_budget.py [--cases all|quick] [--under /dev/shm]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from common import extra_loop_devices

# (what, goal, arguments, budget in seconds)
CASES = {
    "quick": [
        ("randread-q16t2, 2 candidates", "throughput",
         ["--job", "randread-q16t2", "--runtime", "1", "--settle", "0.3", "--candidates", "none,mq-deadline"], 100),
    ],
    "all": [
        ("randread-q16t2, 2 candidates", "throughput",
         ["--job", "randread-q16t2", "--runtime", "1", "--settle", "0.3", "--candidates", "none,mq-deadline"], 100),
        ("4k-randread, every candidate", "throughput", ["--job", "4k-randread", "--runtime", "2", "--settle", "0.5"],
         240),
        ("interactive-under-writes, 2 candidates", "interactive",
         ["--job", "interactive-under-writes", "--runtime", "3", "--settle", "0.5", "--candidates",
          "mq-deadline,bfq"], 80),
        ("the catalog's three tests", "all", ["--runtime", "2", "--settle", "0.5"], 600),
    ],
}


def run_case(dev: str, goal: str, extra: list[str], budget: float) -> dict[str, float | int | str]:
    argv = [sys.executable, "-m", "iosched.cli", "advise", dev, "--goal", goal, *extra, "--budget", str(budget),
            "--yes", "--json"]
    t0 = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True, timeout=budget * 3 + 120)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(f"advise failed ({r.returncode}): {r.stderr[-2000:]}")
    doc = json.loads(r.stdout)
    runs = planned = 0.0
    settle = float(extra[extra.index("--settle") + 1]) if "--settle" in extra else 1.0
    for t in doc["tests"]:
        for part in (t["pilot"], t["result"]):
            if part is not None:
                runs += len(part["runs"])
                planned += len(part["runs"]) * (t["run_s"] + settle)
    answer = "; ".join(f"{g['goal']}: {g['recommended'] or 'keep'}" for g in doc["advice"])
    return {"wall": wall, "plan": doc["plan"]["seconds"], "runs": int(runs),
            "overhead": (wall - planned) / runs if runs else 0.0, "answer": answer}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", choices=sorted(CASES), default="all")
    ap.add_argument("--under", default=None, help="where the loop devices' files lie (default: the temp directory)")
    ap.add_argument("--repeat", type=int, default=1, help="each case this many times")
    args = ap.parse_args()
    print(f"{'case':<40} {'budget':>6} {'plan':>6} {'wall':>6} {'held':>5} {'runs':>5} {'s/run over':>10}  answer")
    overheads = []
    with extra_loop_devices(1, "1G", direct=True, under=args.under) as (path,):
        dev = path.removeprefix("/dev/")
        for name, goal, extra, budget in CASES[args.cases]:
            for _ in range(args.repeat):
                got = run_case(dev, goal, extra, budget)
                overheads.append(float(got["overhead"]))
                held = "yes" if float(got["wall"]) <= budget else "NO"
                print(f"{name:<40} {budget:>5.0f}s {float(got['plan']):>5.0f}s {float(got['wall']):>5.0f}s {held:>5} "
                      f"{got['runs']:>5} {float(got['overhead']):>9.2f}s  {got['answer']}", flush=True)
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"per-run overhead: median {statistics.median(overheads):.2f} s, largest {max(overheads):.2f} s "
          f"(load average {load})")


if __name__ == "__main__":
    main()
