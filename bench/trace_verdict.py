"""Does tracing change the verdict? The same comparison with and without ``--trace``, in turns.

A loop device over a file in /dev/shm (CPU-bound: every ns a tracer adds per IO shows) takes the canned
``randread-q16t2`` job under two schedulers; ``iosched compare`` runs once untraced and once with ``--trace``, the
order turning each round. For each pair: both verdicts, whether the traced ratio of the primary metric lies inside
the untraced ratio's 95% CI (the issue's test), and what tracing cost each traced run (the tracer's own µs per IO,
which the result records per run as ``tracer_us_per_io``).

    sudo .venv/bin/python bench/trace_verdict.py [--rounds 2] [--repeat 6] [--runtime 3] [--schedulers none,bfq]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import extra_loop_devices


def compare(dev: str, args: argparse.Namespace, trace: bool) -> dict:
    iosched = shutil.which("iosched") or str(Path(sys.executable).with_name("iosched"))
    cmd = [iosched, "compare", dev, "--schedulers", args.schedulers, "--job", args.job, "--runtime",
           str(args.runtime), "--repeat", str(args.repeat), "--settle", "0.3", "--json",
           "--trace" if trace else "--no-trace"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise SystemExit(f"compare failed ({out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout)


def primary(doc: dict) -> dict:
    (p,) = [c for c in doc["comparisons"] if c["primary"]]
    return p


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=6)
    ap.add_argument("--runtime", type=float, default=3)
    ap.add_argument("--schedulers", default="none,bfq")
    ap.add_argument("--job", default="randread-q16t2")
    ap.add_argument("--json", action="store_true", help="print the pairs as JSON too")
    args = ap.parse_args()
    pairs = []
    with extra_loop_devices(1, size="1G", direct=True, under="/dev/shm") as (dev,):
        subprocess.run(["dd", "if=/dev/zero", f"of={dev}", "bs=1M", "count=1024", "oflag=direct", "status=none"],
                       check=True)  # written blocks: reads go through the loop driver, not a sparse hole
        name = Path(dev).name
        for r in range(args.rounds):
            docs = {}
            for trace in ((False, True) if r % 2 == 0 else (True, False)):
                docs[trace] = compare(name, args, trace)
            plain, traced = primary(docs[False]), primary(docs[True])
            cost = [run["metrics"].get("tracer_us_per_io") for run in docs[True]["runs"] if run["valid"]]
            cost = [c for c in cost if c is not None]
            lo, hi = plain["ci95"]
            pairs.append({"round": r + 1, "metric": plain["metric"],
                          "untraced": {"ratio": plain["ratio"], "ci95": plain["ci95"], "verdict": plain["verdict"],
                                       "significant": plain["significant"]},
                          "traced": {"ratio": traced["ratio"], "ci95": traced["ci95"], "verdict": traced["verdict"],
                                     "significant": traced["significant"]},
                          "inside": lo <= traced["ratio"] <= hi,
                          "same_verdict": plain["significant"] == traced["significant"]
                          and (not plain["significant"] or (plain["ratio"] > 1) == (traced["ratio"] > 1)),
                          "tracer_us_per_io": statistics.mean(cost) if cost else None,
                          "tracer_us_per_io_runs": cost})
    print(f"{args.schedulers} · {args.job} · {args.repeat} runs of {args.runtime:g} s per variant, {args.rounds} "
          f"rounds, loop device over /dev/shm")
    print(f"{'round':>5}  {'untraced ratio (95% CI)':>25}  {'traced ratio':>12}  {'inside CI':>9}  "
          f"{'same verdict':>12}  {'tracer µs/IO':>12}")
    for p in pairs:
        u, t = p["untraced"], p["traced"]
        c = "—" if p["tracer_us_per_io"] is None else f"{p['tracer_us_per_io']:.2f}"
        print(f"{p['round']:>5}  {u['ratio']:>8.3f} ({u['ci95'][0]:.3f}–{u['ci95'][1]:.3f})  {t['ratio']:>12.3f}  "
              f"{'yes' if p['inside'] else 'NO':>9}  {'yes' if p['same_verdict'] else 'NO':>12}  {c:>12}")
        print(f"       untraced: {u['verdict']}\n       traced:   {t['verdict']}")
    if args.json:
        print(json.dumps(pairs, indent=1))


if __name__ == "__main__":
    main()
