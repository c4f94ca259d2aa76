#!/usr/bin/env python3
"""Run iosched under tracemalloc and dump a snapshot every few minutes, to find what a long run keeps.

Usage: TRACE_DIR=/tmp/snaps [TRACE_EVERY=300] [TRACE_FRAMES=6] python3 bench/traced_iosched.py ARGS...
(the same arguments as `iosched`). Compare two dumps with `python3 bench/traced_iosched.py --diff A B`.
tracemalloc slows the process and adds its own memory: use it to see what grows, not to measure RSS.
"""

from __future__ import annotations

import collections
import gc
import os
import sys
import threading
import time
import tracemalloc
from pathlib import Path


def _dump_forever(out: Path, every: float) -> None:
    n = 0
    while True:
        time.sleep(every)
        n += 1
        gc.collect()  # garbage awaiting the collector is not what a long run keeps
        tracemalloc.take_snapshot().dump(str(out / f"snap{n:02d}.tm"))
        # Object counts by type catch growth that tracemalloc attributes to a shared allocation site.
        counts = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
        counts.update(widgets())
        lines = [f"{c:9d} {name}" for name, c in counts.most_common() if c >= 20 or name.startswith("widget ")]
        (out / f"types{n:02d}.txt").write_text("\n".join(lines) + "\n")
        (out / f"owners{n:02d}.txt").write_text(owners(os.environ.get("TRACE_OWNED", "Strip")))


def widgets() -> collections.Counter[str]:
    """Widgets alive by class, split into those on a screen and those detached but still referenced."""
    from textual.dom import DOMNode

    return collections.Counter(f"widget {type(o).__qualname__} {'attached' if o.is_attached else 'DETACHED'}"
                               for o in gc.get_objects() if isinstance(o, DOMNode))


CONTAINERS = {"dict", "list", "tuple", "set", "deque", "cell", "FIFOCache", "LRUCache", "Strip"}


def owners(type_name: str, depth: int = 200) -> str:
    """Who keeps the objects of one type alive: the chain of containers up to the first other object."""
    objects = gc.get_objects()
    parents: dict[int, list[object]] = collections.defaultdict(list)
    for o in objects:
        for r in gc.get_referents(o):
            parents[id(r)].append(o)
    tally: collections.Counter[str] = collections.Counter()
    deepest: tuple[int, str] = (0, "")
    for o in objects:
        if type(o).__name__ != type_name:
            continue
        chain, node, seen = [], o, {id(o)}
        for _ in range(depth):
            # Not back round a cycle (a strip divided at its own length caches itself).
            ups = [p for p in parents.get(id(node), ()) if p is not objects and id(p) not in seen]
            if not ups:
                chain.append("(none)")
                break
            node = ups[0]
            seen.add(id(node))
            name = type(node).__qualname__
            chain.append(name if len(ups) == 1 else f"{name}+{len(ups) - 1}")
            if name not in CONTAINERS:
                break
        # A strip kept in another strip's cache kept in another's...: one "Strip x N" instead of the whole chain.
        text = " <- ".join(chain)
        hops = text.count("FIFOCache <- Strip")
        text = text.replace("dict <- FIFOCache <- Strip <- ", "").replace("dict+1 <- FIFOCache <- Strip <- ", "")
        tally[f"[{hops} strip caches up] {text}" if hops else text] += 1
        if hops > deepest[0]:
            text = getattr(o, "text", "")
            deepest = (hops, f"deepest: {hops} caches up, ends at {type(node).__qualname__}, text {text[:100]!r}\n")
    del objects, parents
    return deepest[1] + "".join(f"{c:7d} {chain}\n" for chain, c in tally.most_common(40))


def diff(a: str, b: str, top: int = 25) -> None:
    old, new = tracemalloc.Snapshot.load(a), tracemalloc.Snapshot.load(b)
    for key in ("filename", "traceback"):
        print(f"--- growth by {key}")
        for stat in new.compare_to(old, key)[:top]:
            print(f"{stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+7d} blocks")
            frames = stat.traceback.format() if key == "traceback" else [f"  {stat.traceback[0].filename}"]
            for line in frames[-12:]:
                print("   ", line)


def main() -> None:
    if sys.argv[1:2] == ["--diff"]:
        diff(sys.argv[2], sys.argv[3])
        return
    out = Path(os.environ["TRACE_DIR"])
    out.mkdir(parents=True, exist_ok=True)
    tracemalloc.start(int(os.environ.get("TRACE_FRAMES", "6")))
    every = float(os.environ.get("TRACE_EVERY", "300"))
    threading.Thread(target=_dump_forever, args=(out, every), daemon=True).start()
    from iosched.cli.main import main as iosched_main

    sys.argv = ["iosched", *sys.argv[1:]]
    sys.exit(iosched_main())


if __name__ == "__main__":
    main()
