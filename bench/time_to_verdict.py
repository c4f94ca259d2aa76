"""Time to a verdict under the honest boundary: batch runs against live alternation, each with an A/A arm.

On a loop device over a sparse, never-written file, random 4k reads are CPU-bound, so bfq's per-IO cost
shows as ~30-40% fewer IOPS than none. Each method runs `--until-verdict` with the variants
none, bfq, none: the second `none` is an A/A control judged beside bfq (Holm across both), which must come
out "no significant difference". The time is the wall time from the start of the experiment to the run or
turn at which the sequential boundary (core/statistics/sequential.py) was crossed; "-" means it never was. Each
experiment is a plan of the experiment service, as `compare --until-verdict` runs it.

Each experiment runs under each load named: quiet (whatever else the machine runs: its load average is printed
beside each figure) and cpu (a busy loop per CPU started by this script, bench/common.py ``cpu_hog``). Each prints one
line starting "summary:": the time to the verdict, the runs it took, the effect its runs measured (the second arm
against the first, with its interval), the answer and the load average before and after. `--variants A,B` sets the
two arms (default none,bfq: bfq's per-request cost, 30-50% fewer IOPS on tmpfs as measured; a pair with a smaller
difference, e.g. mq-deadline,bfq, shows a smaller effect).

`--speed` is the two-arm case on a fast device in one command (a few minutes): none against bfq, batch runs of
0.5 s with 0.2 s of settle, a loop device over tmpfs, three experiments quiet and three beside the CPU hog
(`--speed --loads quiet`: the quiet three alone, about a minute).

Run as root: python3 -m bench.time_to_verdict [--runtime 2] [--settle 0.5] [--max-runs 12] [--every 1.6]
  [--duration 60] [--repeat 3] [--methods batch,alternation] [--no-control] [--loads quiet,cpu] [--under DIR]
  [--speed]  (--no-control: none, bfq only)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from pathlib import Path

from bench.common import cpu_hog, extra_loop_devices, load_average
from iosched.core.documents.document import JudgementDoc
from iosched.core.documents.params import parse_variants
from iosched.core.experiment import service
from iosched.core.experiment.alternation import AlternationPlan
from iosched.core.experiment.compare import ComparePlan
from iosched.core.experiment.events import Event, RunEnded
from iosched.core.experiment.local_plan import TargetRequest
from iosched.core.load.jobs import CATALOG
from iosched.core.present.sentences import interim_lines


def one(dev: str, args: argparse.Namespace, alternate: bool) -> tuple[float | None, JudgementDoc, int]:
    """One experiment through the service until its boundary: when it crossed (None: never), its verdict and the
    runs (or turns) it took."""
    variants = parse_variants(f"{args.variants},{args.variants.split(',')[0]}" if not args.no_control
                              else args.variants)
    t0 = time.monotonic()
    crossed: list[float] = []
    ran: list[int] = []

    def event(e: Event) -> None:
        if isinstance(e, RunEnded):
            ran.append(e.index)
        if isinstance(e, RunEnded) and e.standing is not None:
            for line in interim_lines(e.standing):
                print(f"    {time.monotonic() - t0:6.1f}s  {line}", flush=True)
            if not crossed and e.standing.decided_at is not None:
                crossed.append(time.monotonic() - t0)

    plan: AlternationPlan | ComparePlan
    if alternate:
        most = int(args.duration // args.every) // len(variants) // 2
        job = CATALOG["randread-q16t2"].scaled(runtime=args.duration + 10)
        plan = AlternationPlan(dev, variants, job=job, every=args.every, duration=args.duration, until_verdict=most,
                               target=TargetRequest(raw=True))
    else:
        job = CATALOG["randread-q16t2"].scaled(runtime=args.runtime)
        plan = ComparePlan(dev, variants, job=job, settle=args.settle, until_verdict=args.max_runs,
                           target=TargetRequest(raw=True))
    outcome = service.run(plan, None, event)
    assert outcome.doc.judgement is not None
    return (crossed[0] if crossed else None), outcome.doc.judgement, len(ran)


def effect_words(ratio: float | None, ci: tuple[float, float] | None) -> str:
    """The effect the runs measured, the second variant against the first, as a signed change with its interval."""
    if ratio is None:
        return "effect -"
    words = f"effect {ratio - 1:+.0%}"
    return words + (f" (CI {ci[0] - 1:+.0%} to {ci[1] - 1:+.0%})" if ci else "")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime", type=float, default=2.0, help="seconds per batch run")
    ap.add_argument("--settle", type=float, default=0.5, help="batch: seconds of settle before each run")
    ap.add_argument("--max-runs", type=int, default=12, help="batch: most runs per variant")
    ap.add_argument("--every", type=float, default=1.6, help="alternation: seconds per turn (1 s discarded)")
    ap.add_argument("--duration", type=float, default=60.0, help="alternation: most seconds")
    ap.add_argument("--repeat", type=int, default=3, help="experiments per method")
    ap.add_argument("--methods", default="batch,alternation")
    ap.add_argument("--no-control", action="store_true", help="two arms only, without the A/A arm")
    ap.add_argument("--variants", default="none,bfq",
                    help="the two arms, the first the baseline (default none,bfq: bfq's cost, ~30-40%% on tmpfs)")
    ap.add_argument("--loads", help="quiet, cpu (a busy loop per CPU), or both: quiet,cpu (default quiet; with "
                    "--speed both)")
    ap.add_argument("--under", default=None, help="where the loop device's file lies (default: the temp directory)")
    ap.add_argument("--speed", action="store_true",
                    help="two arms, batch, 0.5 s runs, 0.2 s settle, on tmpfs, quiet and under the CPU hog")
    args = ap.parse_args()
    if args.speed:
        args.no_control, args.methods, args.runtime, args.settle = True, "batch", 0.5, 0.2
        args.loads, args.under = args.loads or "quiet,cpu", args.under or "/dev/shm"
    methods = args.methods.split(",")
    loads = (args.loads or "quiet").split(",")
    results: dict[tuple[str, str], list[tuple[float | None, JudgementDoc, str]]] = {}
    with extra_loop_devices(1, "1G", direct=True, under=args.under) as (path,):
        dev = Path(path).name
        first = args.variants.split(",")[0]
        arms = args.variants.replace(",", ", ") + ("" if args.no_control else f", {first} (A/A control)")
        print(f"device {dev} (file under {args.under or 'the temp directory'}); job randread-q16t2; variants {arms}; "
              f"alpha 0.05; batch {args.runtime:g} s runs, {args.settle:g} s settle, at most {args.max_runs} per "
              f"variant; alternation {args.every:g} s turns (1 s discarded), at most {args.duration:g} s; "
              f"{os.cpu_count()} CPUs")
        for load in loads:
            with cpu_hog() if load == "cpu" else contextlib.nullcontext(0) as hogs:
                for i in range(args.repeat):
                    for name, alternate in (("batch", False), ("alternation", True)):
                        if name not in methods:
                            continue
                        before = load_average()
                        print(f"{name} #{i + 1}, {load}{f' ({hogs} busy loops)' if hogs else ''}, load average "
                              f"{before}:", flush=True)
                        at, j, runs = one(dev, args, alternate)
                        results.setdefault((name, load), []).append((at, j, before.split()[0]))
                        prim = [c for c in j.comparisons if c.primary]
                        c = prim[0] if prim else None
                        when = f"verdict after {at:.1f} s" if at is not None else "no verdict"
                        answer = ("-" if c is None else "significant" if c.significant else "no difference")
                        print(f"  summary: {name}, {load}: {when}, {runs} runs, "
                              f"{effect_words(c.ratio if c else None, c.ci95 if c else None)}, {answer}, "
                              f"load average {before.split()[0]} before, {load_average().split()[0]} after",
                              flush=True)
    print()
    base, other = args.variants.split(",")[:2]
    print(f"{'method':<12} {'load':<6} {'verdict after':>14}  {'load avg':>8}  {other} vs {base} (primary, IOPS)"
          "             A/A control")
    for (name, load), rows in results.items():
        for at, j, avg in rows:
            prim = {c.variant: c for c in j.comparisons if c.primary}
            arm, ctl = prim[other], prim.get(f"{base}#2")
            when = f"{at:.1f} s" if at is not None else "-"
            ci = (f"ratio {arm.ratio:.2f} (CI {arm.ci95[0]:.2f}-{arm.ci95[1]:.2f})"
                  if arm.ratio and arm.ci95 else "-")
            aa = "-" if ctl is None else "SIGNIFICANT" if ctl.significant else "no difference"
            print(f"{name:<12} {load:<6} {when:>14}  {avg:>8}  {ci:<38}  {aa}")
        times = [at for at, _, _ in rows if at is not None]
        if times:
            print(f"{name:<12} {load:<6} median {statistics.median(times):.1f} s over {len(times)} of {len(rows)}")


if __name__ == "__main__":
    main()
