"""A matrix under --until-verdict against fixed --repeat: its false-positive rate and the runs it saves.

Seeded simulation through the run loop's own decisions (core/experiment/matrix.py ``simulate_matrix``) and the
matrix judge: an A/A matrix (no difference anywhere) for the matrix-wide false-positive rate, then a matrix where
every variant is ``--effect`` times the baseline, for the share of matrices that decided every cell and the runs
they took, against the smallest fixed --repeat that reaches the same power.

    .venv/bin/python bench/matrix_sequential.py [--workloads 3] [--variants 3] [--max-runs 16] [--cv 0.2]
"""

from __future__ import annotations

import argparse
import random
import time

from iosched.core.experiment.matrix import simulate_matrix as simulate
from iosched.core.statistics.matrix_judge import judge_matrix
from iosched.core.statistics.matrix_sequential import matrix_sequential_plan, state


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", type=int, default=3)
    ap.add_argument("--variants", type=int, default=3)
    ap.add_argument("--max-runs", type=int, default=16)
    ap.add_argument("--cv", type=float, default=0.2, help="run-to-run noise (log scale)")
    ap.add_argument("--effect", type=float, default=0.7, help="every variant's IOPS over the baseline's")
    ap.add_argument("--null-sims", type=int, default=2000)
    ap.add_argument("--sims", type=int, default=400)
    args = ap.parse_args()
    wls = [f"w{i + 1}" for i in range(args.workloads)]
    labels = [f"v{i}" for i in range(args.variants)]
    cells = args.workloads * (args.variants - 1)
    t0 = time.monotonic()
    seq = matrix_sequential_plan(args.max_runs, 0.05, cells)
    print(f"{args.workloads} workloads x {args.variants} variants = {cells} cells, looks at {seq.looks} "
          f"runs per cell, levels {seq.levels[0]:.4f}..{seq.levels[-1]:.4f} "
          f"(boundary in {time.monotonic() - t0:.1f} s)")
    rng = random.Random(1)
    hits = 0
    for _ in range(args.null_sims):
        doc = simulate(rng, seq, args.max_runs, wls, labels, 1.0, args.cv)
        hits += bool(state(doc, {w: "iops" for w in wls}).decided)
    print(f"A/A: significant anywhere in {hits / args.null_sims:.1%} of {args.null_sims} matrices (alpha 5%)")
    decided_all, runs = 0, 0
    for _ in range(args.sims):
        doc = simulate(rng, seq, args.max_runs, wls, labels, args.effect, args.cv)
        runs += len(doc.runs)
        decided_all += len(state(doc, {w: "iops" for w in wls}).decided) == cells
    power = decided_all / args.sims
    print(f"effect x{args.effect} at noise {args.cv:.0%}: every cell decided in {power:.1%} of matrices, "
          f"{runs / args.sims:.0f} runs on average (at most {args.max_runs * args.workloads * args.variants})")
    for n in range(2, 4 * args.max_runs + 1):
        hit = sum(all(c.significant for c in judge_matrix(
            simulate(rng, None, n, wls, labels, args.effect, args.cv), 0.05, planning=False).cells
            if c.variant != labels[0]) for _ in range(args.sims // 2))
        if hit / (args.sims // 2) >= power:
            print(f"fixed --repeat {n} reaches that power: {n * args.workloads * args.variants} runs "
                  f"({hit / (args.sims // 2):.1%})")
            break
    else:
        print("no fixed --repeat up to four times the maximum reaches that power")


if __name__ == "__main__":
    main()
