"""Recordings made to measure: the lines `iosched record` writes, for as many samples and devices as a test
needs (a real recorder would take two days for a two-day recording)."""

from __future__ import annotations

import json
from pathlib import Path


def device(name: str, scheduler: str = "none") -> dict:
    return {"name": name, "maj_min": "7:0", "size_bytes": 1 << 30, "rotational": False, "removable": False,
            "read_only": False, "scheduler": scheduler, "schedulers": ["none", "mq-deadline", "bfq"],
            "nr_requests": 64, "read_ahead_kb": 128}


def header(devices: list[str], interval: float = 0.5) -> str:
    return json.dumps({"t": "header", "version": 1, "start_wall": 1.7e9, "interval": interval, "devices": None,
                       "kernel": "6.1", "host": "test", "inventory": [device(d) for d in devices]},
                      separators=(",", ":"))


def write_recording(path: Path, samples: int, interval: float = 0.5, busy: int = 1, idle: int = 3,
                    cpus: int = 2, switch_every: int = 0) -> Path:
    """``busy`` disks doing 100 reads an interval, ``idle`` ones written once; a scheduler switch on the first
    busy disk every ``switch_every`` samples (0: none)."""
    names = [f"vd{chr(97 + i)}" for i in range(busy)] + [f"loop{i}" for i in range(idle)]
    with open(path, "w") as f:
        f.write(header(names, interval) + "\n")
        cpu_names = ["all", *map(str, range(cpus))]
        scheds = ("none", "bfq")
        for n in range(samples):
            disks = {name: [253, i, 100 * n, 0, 800 * n, 50 * n, 0, 0, 0, 0, 0, 45 * n, 50 * n]
                     for i, name in enumerate(names[:busy])}
            if n == 0:
                disks.update({name: [7, i] + [0] * 11 for i, name in enumerate(names[busy:])})
            c = {k: [100 * n, 0, 50 * n, 300 * n, 2 * n, 0, 1, 0, 0, 0] for k in cpu_names}
            f.write(json.dumps({"t": "s", "m": round(10 + n * interval, 4), "d": disks, "c": c},
                               separators=(",", ":")) + "\n")
            if switch_every and n and n % switch_every == 0:
                old, new = scheds[(n // switch_every + 1) % 2], scheds[(n // switch_every) % 2]
                f.write(json.dumps({"t": "e", "m": round(10 + n * interval, 4), "dev": names[0],
                                    "name": "scheduler", "old": old, "new": new}, separators=(",", ":")) + "\n")
    return path
