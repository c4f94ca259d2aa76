"""How long `iosched advise` takes to decide one goal on a fast device when the effect is large (≥ 30%).

A loop device over a sparse file on tmpfs is a fast device (non-rotational, a random 4 KiB read is CPU-bound), and
on it bfq's per-request cost shows as ~30-45% fewer IOPS than none. The device is set to bfq first (it is this
script's own), so the throughput goal's test, the catalog's saturating random read, has a candidate at least 30%
better than what the device has: the right answer is a switch (to none, or kyber or mq-deadline, which cost as
little). Each case runs the real command line, `iosched advise DEV --goal throughput --yes --json` with the plan's
defaults (on a fast device: 1 s runs, 0.1 s settle, core/advice/plan.py), and times the whole command (Python's
start, observe, plan, pilot, tests, decide, put back). Two cases: every candidate the plan offers (the four
schedulers and the class's tunings: 7 variants) and one candidate (`--candidates none`: 2 variants).

Each case runs under each load named: quiet (whatever else the machine runs: the load average is printed beside
each figure) and cpu (a busy loop per CPU started by this script, bench/common.py ``cpu_hog``). Each advice prints one
line starting "summary:": its wall time, its runs (the pilot's and the tests', the variants that left early and at
how many runs a variant), the answer with the effect it measured, and the load average before and after.

    sudo .venv/bin/python bench/advise_speed.py [--loads quiet|cpu|quiet,cpu] [--cases all,one] [--repeat 1]

The quiet case alone, both cases once, takes about two minutes on a quiet machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import cpu_hog, extra_loop_devices, load_average

CASES = {"all": ("every candidate", []), "one": ("one candidate (none)", ["--candidates", "none"])}


def advise(dev: str, extra: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    argv = [sys.executable, "-m", "iosched.cli", "advise", dev, "--goal", "throughput", *extra, "--yes", "--json"]
    t0 = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    return time.monotonic() - t0, r


def summary(r: subprocess.CompletedProcess[str]) -> dict[str, object]:
    """What the advice said: its outcome, the switch and its effect, the runs it took, the pilot's noise."""
    if r.returncode not in (0, 1):
        return {"error": (r.stderr.strip().splitlines() or ["?"])[-1][:160]}
    doc = json.loads(r.stdout)
    test = doc["tests"][0]
    runs = sum(len(part["runs"]) for part in (test["pilot"], test["result"]) if part is not None)
    pilot = len(test["pilot"]["runs"]) if test["pilot"] is not None else 0
    goal = doc["advice"][0] if doc["advice"] else None
    effect = goal.get("effect") if goal else None
    return {"outcome": goal["outcome"] if goal else "no answer", "to": goal["recommended"] if goal else None,
            "reasons": goal["reasons"] if goal else [],
            "effect": effect, "runs": runs, "variants": len(test["variants"]), "per_variant": test["runs"],
            "noise": test.get("noise"), "run_s": test["run_s"], "pilot": pilot,
            "left": [f"{d['variant']} at {d['at']}" for d in test["dropped"]],
            "looked": test["looked"], "looks": test["looks"]}


def runs_words(got: dict[str, object]) -> str:
    """The runs an advice took: the pilot's and the tests', the variants, and those that left early (at how many runs
    a variant)."""
    runs, pilot, left = got["runs"], got["pilot"], got["left"]
    assert isinstance(runs, int) and isinstance(pilot, int) and isinstance(left, list)
    early = f"; left early: {', '.join(left)}" if left else ""
    return f"{runs} runs ({pilot} pilot + {runs - pilot} tests, {got['variants']} variants{early})"


def answer_words(got: dict[str, object]) -> str:
    """The advice in a few words: its outcome, the switch and the effect it measured, the reasons."""
    effect = f" {got['effect'] * 100:+.0f}% IOPS" if isinstance(got["effect"], float) else ""
    answer = f"switch to {got['to']}{effect}" if got["outcome"] == "switch" else f"{got['outcome']}{effect}"
    if got["reasons"]:
        answer += f" ({', '.join(got['reasons'])})"  # type: ignore[arg-type]
    return answer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loads", default="quiet", help="quiet, cpu (a busy loop per CPU), or both: quiet,cpu")
    ap.add_argument("--cases", default="all,one", help="all (every candidate), one (--candidates none), or both")
    ap.add_argument("--repeat", type=int, default=1, help="advices per case and load")
    ap.add_argument("--under", default="/dev/shm", help="where the loop device's file lies (default: tmpfs)")
    args = ap.parse_args()
    rows: list[tuple[str, str, str, float, dict[str, object]]] = []
    print(f"{os.cpu_count()} CPUs; load average before: {load_average()}", flush=True)
    with extra_loop_devices(1, "1G", direct=True, under=args.under) as (path,):
        dev = path.removeprefix("/dev/")
        Path(f"/sys/block/{dev}/queue/scheduler").write_text("bfq")  # this script's own device: the baseline
        for load in args.loads.split(","):
            with cpu_hog() if load == "cpu" else contextlib.nullcontext(0) as hogs:
                for case in args.cases.split(","):
                    name, extra = CASES[case]
                    for _ in range(args.repeat):
                        before = load_average().split()[0]
                        wall, r = advise(dev, extra)
                        got = summary(r)
                        rows.append((name, f"{load}{f' ({hogs} loops)' if hogs else ''}", before, wall, got))
                        print(f"  {name}, {load}: {got}", flush=True)
                        if "error" in got:
                            print(f"  summary: {name}, {load}: {wall:.0f} s, failed: {got['error']}, load average "
                                  f"{before} before, {load_average().split()[0]} after", flush=True)
                        else:
                            print(f"  summary: {name}, {load}: {wall:.0f} s, {runs_words(got)}, {answer_words(got)}, "
                                  f"load average {before} before, {load_average().split()[0]} after", flush=True)
    print()
    print(f"{'case':<22} {'load':<16} {'load avg':>8} {'wall':>6} {'runs':>5} {'per var':>7} {'noise':>6} "
          f"{'run':>5}  answer")
    for name, load, avg, wall, got in rows:
        if "error" in got:
            print(f"{name:<22} {load:<16} {avg:>8} {wall:>5.0f}s  failed: {got['error']}")
            continue
        noise = f"{got['noise'] * 100:.0f}%" if isinstance(got["noise"], float) else "-"
        answer = answer_words(got)
        print(f"{name:<22} {load:<16} {avg:>8} {wall:>5.0f}s {got['runs']:>5} {got['per_variant']:>7} {noise:>6} "
              f"{got['run_s']:>4g}s  {answer}")
    for name in dict.fromkeys(r[0] for r in rows):
        for load in dict.fromkeys(r[1] for r in rows):
            walls = [w for n, lo, _, w, g in rows if n == name and lo == load and "error" not in g]
            if len(walls) > 1:
                print(f"{name}, {load}: median {statistics.median(walls):.0f} s over {len(walls)}")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
