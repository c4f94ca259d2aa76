#!/usr/bin/env python3
"""What a hostile host costs the controller: peak RSS of `compare --hosts` when one of three hosts sends a gigabyte.

Each case runs the real command line in a child process against three hosts reached through the tests' ssh
stand-in (tests/unit/fleet/fake_host.py, the fleet's real protocol); host 3 sends 1 GiB where the case says
(its device list, its stderr without a newline, its stderr in lines, an independent host's result, a lockstep
answer). fio's client is played (as in tests/unit/fleet/test_fleet_hostile.py): what is measured is the
reading of the hosts. The figure is the child's peak RSS (ru_maxrss), with the time the case took and how host 3
ended. Before the bounds, the device list took the controller to 6.3 GB and the stderr line to 3.2 GB.

The last independent case is the worst a host can do within the bounds: a result just under 64 MiB (the bound, a
saved compare's: about 800 runs with fio's own JSON) that is JSON parsing into the most objects, a list of empty
lists. Hosts' results are parsed one at a time, so this is the most one parse costs, whatever the fleet's size.

Usage: python3 bench/fleet_host_bounds.py [--gib 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FAKE = ROOT / "tests/unit/fleet/fake_host.py"

# The child: the fleet's command line in-process, fio's client played, --json on stdout.
CHILD = r"""
import itertools, sys
from types import SimpleNamespace
from iosched.core.fleet import lockstep
from iosched.cli.main import main

class PlayedFio:
    runs = itertools.count()
    def __init__(self, argv, expected_s=None):
        self.n = next(self.runs)
    def stop(self):
        pass
    def run(self, timeout=None):
        iops = 1000.0 + 37.0 * (self.n % 5)
        return SimpleNamespace(total_ios=int(iops), raw={"jobs": []}, metrics=lambda: {"iops": iops})

lockstep.check_fence = lambda fio, work: None
lockstep.fio_binary = lambda: "fio"
lockstep.fenced = lambda argv, work: argv
lockstep.FioRun = PlayedFio
probe = lockstep._probe_forward
lockstep._probe_forward = lambda local: probe(local, wait_s=0.05)
sys.exit(main(sys.argv[1:]))
"""

CASES = [
    ("independent", "none", {}),
    ("independent", "device list", {"list_flood": "N"}),
    ("independent", "stderr, one line", {"stderr_flood": "N"}),
    ("independent", "stderr, in lines", {"stderr_lines": "N/1000"}),
    ("independent", "result", {"result_flood": "N"}),
    ("independent", "64 MiB of []", {"result_lists": "64M"}),
    ("lockstep", "none", {}),
    ("lockstep", "device list", {"list_flood": "N"}),
    ("lockstep", "stderr, one line", {"stderr_flood": "N"}),
    ("lockstep", "an answer", {"end_flood": "N"}),
]


def one(tmp: Path, mode: str, part: dict[str, str], n: int) -> tuple[float, float, str]:
    sizes = {"N": n, "N/1000": n // 1000, "64M": (64 << 20) - 16}
    hostile = {k: sizes[v] for k, v in part.items()}
    scenario = tmp / "hosts.json"
    scenario.write_text(json.dumps({"h1": {}, "h2": {}, "h3": hostile}))
    ssh = tmp / "ssh"
    ssh.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE} \"$@\"\n")
    ssh.chmod(0o755)
    argv = [sys.executable, "-c", CHILD, "compare", "--hosts", "h1,h2,h3", "sdb", "--schedulers", "none,mq-deadline",
            "--job", "randread-q16t2", "--repeat", "2", "--settle", "0", "--ssh", str(ssh), "--json",
            *(["--independent"] if mode == "independent" else [])]
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env={**os.environ, "FAKE_HOSTS": str(scenario)})
    assert proc.stdout is not None
    out = proc.stdout.read()
    _pid, status, usage = os.wait4(proc.pid, 0)  # the child's own peak (its hosts, reaped by it, are far smaller)
    proc.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.monotonic() - t0
    rss = usage.ru_maxrss
    try:
        host = next(h for h in json.loads(out)["hosts"] if h["host"] == "h3")
        said = host["status"] + (f": {host['reason']}" if host["reason"] else "")
    except (ValueError, StopIteration, KeyError):
        said = f"no result (exit {proc.returncode})"
    return rss / 1024, elapsed, said


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib", type=float, default=1.0)
    a = ap.parse_args()
    n = int(a.gib * (1 << 30))
    print(f"{'mode':<12} {'host 3 sends':<18} {'peak RSS':>9} {'time':>6}  host 3")
    for mode, what, part in CASES:
        with tempfile.TemporaryDirectory(prefix="iosched-bench-") as tmp:
            rss, elapsed, said = one(Path(tmp), mode, part, n)
        shown = "nothing more" if what == "none" else what if "MiB" in what else f"{a.gib:g} GiB: {what}"
        print(f"{mode:<12} {shown:<18} {rss:>6.0f} MB {elapsed:>5.1f}s  {said[:110]}", flush=True)


if __name__ == "__main__":
    main()
