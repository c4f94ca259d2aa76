"""How together a lockstep fleet moves: the spread of each switch and of each run's load across hosts, and what a
run costs beyond its runtime.

    sudo python3 bench/fleet_lockstep.py [--hosts 3] [--repeat 5] [--runtime 1]

The hosts are network namespaces joined to this one by veth pairs, each with its own sshd and loop device (the
real test's set-up, tests/real/test_fleet_real.py). They share this machine's clock, so each host's session times
(its switches and run windows, on its own monotonic clock from its `started` wall time) can be set side by side.
A run's window is the span its device was busy, seen by the host's sampler every 0.1 s: its start says when the
load began there, to that resolution. With `--settle 0`, the gap between one run's busy span and the next one's
is the lockstep's own cost: the fio clients' end, every host's window closed, the next variant put in place
everywhere, the windows opened, and fio's server starting the job (about a second after its client connects).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT / "tests"), str(ROOT / "tests/real")]

import common  # noqa: E402,F401  (imported first: a kill unwinds through the finally blocks)
from test_fleet_real import host_namespaces  # noqa: E402

from conftest import attach_loop, detach_loop  # noqa: E402


def spread(columns: list[list[float]]) -> list[float]:
    """Per row (a switch, a run), the latest host minus the earliest, in ms."""
    return [(max(row) - min(row)) * 1000 for row in zip(*columns, strict=False)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--runtime", type=float, default=1.0)
    a = ap.parse_args()
    iosched = shutil.which("iosched") or str(ROOT / ".venv/bin/iosched")
    tmp = Path(tempfile.mkdtemp(prefix="iosched-bench-", dir="/dev/shm"))
    loops = []
    try:
        for n in range(a.hosts):
            (tmp / f"disk{n}").mkdir()
            loops.append(attach_loop(tmp / f"disk{n}", "1G"))
        with host_namespaces(tmp, a.hosts) as (addresses, ssh):
            hosts = tmp / "fleet.txt"
            hosts.write_text("".join(f"{h} {lp.name}\n" for h, lp in zip(addresses, loops, strict=True)))
            out = subprocess.run([iosched, "compare", "--hosts", str(hosts), loops[0].name, "--schedulers",
                                  "none,bfq", "--job", "randread-q16t2", "--runtime", f"{a.runtime:g}", "--repeat",
                                  str(a.repeat), "--settle", "0", "--remote-iosched", iosched, "--ssh", str(ssh),
                                  "--json"], capture_output=True, text=True)
            if out.returncode != 0:
                hosts_said = [f"{h['host']}: {h['status']} {h['reason']}" for h in json.loads(out.stdout)["hosts"]]
                raise SystemExit("\n".join([out.stderr, *hosts_said]))
    finally:
        for lp in loops:
            detach_loop(lp)
        shutil.rmtree(tmp, ignore_errors=True)
    results = [h["result"] for h in json.loads(out.stdout)["hosts"]]
    switches = [[r["started"] + t for t, _s in r["switches"]] for r in results]
    starts = [[r["started"] + run["start"] for run in r["runs"]] for r in results]
    gaps = [b["start"] - e["end"] for r in results for e, b in zip(r["runs"], r["runs"][1:], strict=False)]
    lengths = [run["end"] - run["start"] - a.runtime for r in results for run in r["runs"]]
    sw, st = spread(switches), spread(starts)
    print(f"{a.hosts} hosts, {len(starts[0])} runs of {a.runtime:g} s each, settle 0")
    print(f"  switch spread across hosts: median {statistics.median(sw):.1f} ms, max {max(sw):.1f} ms "
          f"({len(sw)} switches)")
    print(f"  load start spread across hosts (sampled every 0.1 s): median {statistics.median(st):.0f} ms, "
          f"max {max(st):.0f} ms")
    print(f"  between loads on a host: median {statistics.median(gaps) * 1000:.0f} ms, "
          f"max {max(gaps) * 1000:.0f} ms")
    print(f"  a run's busy span beyond its runtime: median {statistics.median(lengths) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
