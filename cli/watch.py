"""`iosched watch`: iostat-like lines (or JSON lines) from a core Monitor."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import TextIO

from iosched.cli.terminal import columns
from iosched.core.live.monitor import Monitor, Ticker
from iosched.core.live.sampler import Rates

TEXT_COLUMNS = ("r/s", "w/s", "rkB/s", "wkB/s", "rrqm/s", "wrqm/s", "r_await", "w_await", "aqu-sz",
                "rareq-sz", "wareq-sz", "util")
CPU_COLUMNS = ("usr", "nice", "sys", "iowait", "irq", "soft", "steal", "idle")


def _shown(rates: Rates, devices: Iterable[str] | None) -> list[str]:
    """The devices to print: those asked for (in that order) that have a rate this interval, else all."""
    return sorted(rates.disks) if devices is None else [d for d in devices if d in rates.disks]


def rates_to_json(rates: Rates, wall: datetime, devices: Iterable[str] | None) -> dict:
    """One interval under sysstat's own key names (`iostat -x -o JSON`, `mpstat -o JSON`)."""
    names = _shown(rates, devices)
    return {
        "time": wall.isoformat(timespec="seconds"),
        "interval": round(rates.interval, 4),
        "disks": {n: rates.disks[n].sysstat() for n in names},
        "cpu": {k: v.sysstat() for k, v in sorted(rates.cpus.items(), key=lambda kv: _cpu_order(kv[0]))},
    }


def _cpu_order(key: str) -> int:
    return -1 if key == "all" else int(key)


def rates_to_text(rates: Rates, wall: datetime, devices: Iterable[str] | None, columns: int | None = None) -> str:
    """One interval as iostat prints it. ``columns``: a terminal's width, which the table is folded to (the columns
    that do not fit follow in a block of their own under the same device names, as a row never wraps mid-way);
    None (a pipe, a file): every row whole, whatever its width."""
    names = _shown(rates, devices)
    lines = [f"{wall:%H:%M:%S}  interval {rates.interval:.2f}s"]
    cpu = rates.cpus.get("all")
    if cpu is not None:
        c = cpu.sysstat()
        line = "%cpu "
        for pair in (f"{k} {c[k]:5.1f}" for k in CPU_COLUMNS):
            if columns is not None and len(line) + 2 + len(pair) > columns and line.strip():
                lines.append(line)
                line = " " * 5
            line += "  " + pair
        lines.append(line)
    width = max([6, *(len(n) for n in names)])
    per = len(TEXT_COLUMNS) if columns is None else max(1, (columns - width) // 9)
    for i in range(0, len(TEXT_COLUMNS), per):
        shown = TEXT_COLUMNS[i:i + per]
        lines.append(f"{'Device':<{width}} " + " ".join(f"{c:>8}" for c in shown))
        for n in names:
            s = rates.disks[n].sysstat()
            lines.append(f"{n:<{width}} " + " ".join(f"{s[c]:8.2f}" for c in shown))
    return "\n".join(lines) + "\n"


def watch(out: TextIO, interval: float, devices: list[str] | None, as_json: bool, count: int | None,
          root: str | Path = "/", default_devices: list[str] | None = None) -> None:
    """Print one block (or JSON line) per interval until ``count`` intervals or Ctrl-C.

    Deadlines are absolute (start + k*interval) so the output does not drift.
    """
    monitor = Monitor(root=root, capacity=1)  # watch prints each interval once: no history to keep
    monitor.baseline()
    ticker = Ticker(interval)
    shown = devices if devices else default_devices
    while count is None or ticker.k < count:
        ticker.next()
        rates = monitor.step()
        assert rates is not None  # a baseline was taken
        wall = datetime.now().astimezone()
        if as_json:
            out.write(json.dumps(rates_to_json(rates, wall, shown)) + "\n")
        else:
            out.write(rates_to_text(rates, wall, shown, columns(out)) + "\n")  # read each time: a resized window
        out.flush()
