#!/usr/bin/env python3
"""What running `--cmd-metric` patterns in a child process costs a run, beside matching them in iosched itself.

For a pgbench-like output (a few lines) and for the largest output read (its last MiB), the median time of the
child's search (core/experiment/pattern_search.py: start, read, match, answer) and of the same match in this
process; then how long a runaway pattern holds a run (the deadline) and how long the flag takes to refuse one.
Usage: python3 bench/pattern_child.py [--repeat 30]
"""

from __future__ import annotations

import argparse
import contextlib
import re
import statistics
import time

from iosched.core.base.errors import BadInput
from iosched.core.experiment import pattern_search
from iosched.core.experiment.cmd_metrics import parse_cmd_metrics
from iosched.core.experiment.pattern_search import RUN_DEADLINE_S, search

PATTERNS = [r"^tps = ([0-9.]+)", r"latency average = ([0-9.]+) ms"]
SHORT = "starting vacuum...end.\nlatency average = 1.234 ms\ntps = 8123.4 (without initial connection time)\n"
LONG = ("progress: 1.0 s, 8000.0 tps, lat 1.2 ms stddev 0.3\n" * 20_000)[-(1 << 20):] + SHORT


def median_ms(f, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def in_process(text: str) -> None:
    for p in PATTERNS:
        list(re.compile(p, re.MULTILINE).finditer(text))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    for name, text in (("a few lines", SHORT), ("1 MiB", LONG)):
        child = median_ms(lambda t=text: search(PATTERNS, [t], RUN_DEADLINE_S), args.repeat)
        here = median_ms(lambda t=text: in_process(t), args.repeat)
        print(f"{name:>12}: child {child:6.1f} ms, in process {here:6.1f} ms, cost of the child {child - here:5.1f} ms")
    t0 = time.monotonic()
    got = search([r"x=(?:a*a*a*)([0-9]+)"], ["x=" + "a" * 3000 + "!"], RUN_DEADLINE_S)
    print(f"a runaway pattern: stopped after {time.monotonic() - t0:.2f} s (deadline {RUN_DEADLINE_S:g} s), "
          f"slow pattern {got.slow}")
    t0 = time.monotonic()
    with contextlib.suppress(BadInput):
        parse_cmd_metrics(["x=(a+)+$"])
    print(f"the flag refuses (a+)+$ in {time.monotonic() - t0:.2f} s (probe deadline "
          f"{pattern_search.PROBE_DEADLINE_S:g} s); a sound flag is probed in "
          f"{median_ms(lambda: pattern_search.search(PATTERNS, pattern_search.probes(PATTERNS), 2), 5):.0f} ms")


if __name__ == "__main__":
    main()
