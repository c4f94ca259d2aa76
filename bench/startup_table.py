"""The S suite's start-up table on this machine: the bundled start-up (a cold Python start, 1563 reads) replayed onto
a loop device on this machine's disk under each scheduler, alone and beside the S suite's loads, in one command
(`iosched compare LOOP --startup --jobs startup-under-load`), beside S#2's published figures for shape, not value.

    sudo python3 bench/startup_table.py [--schedulers none,mq-deadline,kyber,bfq] [--repeat 2] [--cap 20]

Attaches a loop device over a file in /var/tmp (on the disk: a device in memory never makes a request wait), writes
every block of it once (a read of a sparse file's hole never reaches the disk), runs the compare, prints the command,
its verdict and the table (mean start-up time per load and scheduler; "≥" where a run was ended at the cap, a lower
bound) and how long it took. docs/make_startup_example.py puts the same into docs/startup.md. The loop device and its
file are removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from common import extra_loop_devices  # noqa: E402

# S#2 (Algodev-github/S, its README's start-up figures): gnome-terminal's start-up, seconds, beside ten sequential
# readers, on the rotational disk of its author's machine.
S2_SHAPE = {"bfq": 0.74, "none": 2.11, "mq-deadline": 2.18, "kyber": 2.18}
S2_LOAD = "seq-readers-10"


def cells(doc: dict) -> dict[tuple[str, str], list[dict]]:
    """Each (load, scheduler)'s valid runs' start-up timings."""
    out: dict[tuple[str, str], list[dict]] = {}
    for r in doc["runs"]:
        if r.get("valid") and r.get("startup") is not None:
            out.setdefault((r["workload"], r["variant"]), []).append(r["startup"])
    return out


def table(doc: dict) -> str:
    """Mean start-up time per load (rows) and scheduler (columns), S#2's shape beside the row it matches."""
    labels = [v["label"] for v in doc["variants"]]
    found = cells(doc)
    heads = ["load beside the start-up", *labels, "S#2 (gnome-terminal)"]
    rows = []
    for w in (w["name"] for w in doc["workloads"]):
        load = w.split(" beside ", 1)[1] if " beside " in w else "none (alone)"
        row = [load]
        for v in labels:
            runs = found.get((w, v), [])
            if not runs:
                row.append("-")
                continue
            mean = statistics.fmean(s["startup_s"] for s in runs)
            row.append(("≥" if any(s["over_cap"] for s in runs) else "") + f"{mean:.2f} s")
        s2 = " ".join(f"{k} {v:.2f}" for k, v in S2_SHAPE.items()) if load == S2_LOAD else ""
        rows.append([*row, s2])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    lines = ["  ".join(c.ljust(wd) for c, wd in zip(heads, widths))]
    lines += ["  ".join(c.ljust(wd) for c, wd in zip(r, widths)) for r in rows]
    return "\n".join(x.rstrip() for x in lines)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--schedulers", default="none,mq-deadline,kyber,bfq")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--cap", default="20", help="--startup-cap: a run past this many times the time alone ends")
    ap.add_argument("--size", default="1G", help="the loop device's size")
    ap.add_argument("--save", type=Path, help="keep the compare's JSON here")
    return ap.parse_args(argv)


def run(a: argparse.Namespace) -> tuple[str, float, int]:
    """The command, its output and the table, as one text; the seconds it took and its runs. SystemExit with the
    compare's status when it failed."""
    args = ["--schedulers", a.schedulers, "--startup", "bundled", "--jobs", "startup-under-load", "--repeat",
            str(a.repeat), "--startup-cap", a.cap, "--settle", "0.2"]
    with tempfile.TemporaryDirectory(prefix="iosched-bench-") as work, \
            extra_loop_devices(1, size=a.size, direct=True, under="/var/tmp") as (path,):
        # Ends with "no space left": the device is full, as meant.
        subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=4M", "oflag=direct", "status=none"],
                       check=False, capture_output=True)
        save = a.save or Path(work, "startup.json")
        t0 = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "iosched.cli", "compare", Path(path).name, *args,
                              "--save", str(save)], capture_output=True, text=True, cwd=ROOT)
        took = time.monotonic() - t0
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            raise SystemExit(out.returncode)
        doc = json.loads(save.read_text())
    text = "\n".join([f"$ sudo iosched compare loopN {' '.join(args)}", out.stdout.rstrip(), "",
                      "Mean start-up time per load and scheduler (≥: a run ended at the cap, a lower bound):",
                      table(doc)])
    return text, took, len(doc["runs"])


def main() -> int:
    text, took, runs = run(parse())
    print(text)
    print(f"\n({took:.0f} s of machine time; {runs} runs)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
