"""Make the example of docs/contention.md: the contention group under every scheduler on a scratch loop device.

    sudo python3 docs/make_contention_example.py

Attaches a loop device over a file in /var/tmp (on a disk, not tmpfs: the effects of this group are about requests
that wait, and a device in memory never makes them wait), writes every block of it once, runs
`iosched compare … --jobs contention` on it (each job judged on its own metric), writes docs/contention-example.txt
(the table, the verdict lines and every role's figures) and replaces the block between the `contention-example`
markers in docs/contention.md with the command, the table and the sentences. The loop device and its file are removed
afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402
from common import extra_loop_devices  # noqa: E402

START, END = "<!-- contention-example:start -->", "<!-- contention-example:end -->"
ARGS = ["--schedulers", "none,mq-deadline,kyber,bfq", "--jobs", "contention", "--runtime", "6", "--repeat", "3",
        "--settle", "0.5"]
ROLE_COLUMNS = ("fg:clat_p50_us", "fg:clat_p99_us", "bg:mb_s", "fairness_jain", "be0:share", "w500:share")


def role_table(doc: dict) -> str:
    """Per job and scheduler, the mean of each role figure the group is about (blank where a job has none)."""
    jobs = [w["name"] for w in doc["workloads"]]
    labels = [v["label"] for v in doc["variants"]]
    means: dict[tuple[str, str], dict[str, list[float]]] = {}
    for r in doc["runs"]:
        if r.get("valid", True):
            cell = means.setdefault((r["workload"], r["variant"]), {})
            for k in ROLE_COLUMNS:
                if r["metrics"].get(k) is not None:
                    cell.setdefault(k, []).append(r["metrics"][k])
    heads = ["job", "scheduler", "fg p50 ms", "fg p99 ms", "bg MB/s", "Jain index", "be0 share", "w500 share"]
    rows = []
    for w in jobs:
        for v in labels:
            cell = means.get((w, v), {})
            vals = []
            for k in ROLE_COLUMNS:
                xs = cell.get(k)
                if not xs:
                    vals.append("")
                    continue
                x = sum(xs) / len(xs)
                digits = f"{x / 1000:.2f}" if k.endswith("_us") else f"{x:.0f}" if k.endswith("mb_s") else f"{x:.2f}"
                vals.append(digits)
            rows.append([w if v == labels[0] else "", v, *vals])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    out = ["  ".join(h.ljust(wd) if i < 2 else h.rjust(wd) for i, (h, wd) in enumerate(zip(heads, widths)))]
    out += ["  ".join(c.ljust(wd) if i < 2 else c.rjust(wd) for i, (c, wd) in enumerate(zip(r, widths))) for r in rows]
    return "\n".join(x.rstrip() for x in out)


def main() -> int:
    work = tempfile.TemporaryDirectory(prefix="iosched-example-")
    with work, extra_loop_devices(1, size="4G", direct=True, under="/var/tmp") as (path,):
        dev = Path(path).name
        # Every block written first: a read of a hole in a sparse backing file never reaches the disk, and a
        # reader beside writers would be fast or slow by where it happened to read, not by the scheduler.
        subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=4M", "oflag=direct", "status=none"], check=False)
        save = Path(work.name, "contention-example.json")
        # No --raw: nothing is mounted from the device, so the jobs run on it raw anyway.
        cmd = [sys.executable, "-m", "iosched.cli", "compare", dev, *ARGS, "--save", str(save)]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            return out.returncode
        doc = json.loads(save.read_text())
    figures = role_table(doc)
    (HERE / "contention-example.txt").write_text(out.stdout + "\nEach role's means:\n" + figures + "\n")
    shown = " ".join(["iosched compare", "loopN", *ARGS])
    common.put_in_page(HERE / "contention.md", START, END,
                       "\n".join([f"$ {shown}", out.stdout.rstrip(), "", "Each role's means:", figures]))
    print("docs/contention.md and docs/contention-example.txt written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
