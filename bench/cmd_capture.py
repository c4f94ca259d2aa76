"""What `iosched capture --cmd` records and what it costs the command.

Exactness: ext4 on a loop device (a file in /var/tmp, on the disk) holds known files (1 KiB to 3 MiB, 24 MiB in
all); `capture --cmd 'cat FILES' --cold` records them: the loop device's read bytes against the files' bytes
(readahead stops at a file's end: the rest is ext4's metadata), and the bytes seen on every disk against what the
kernel's IO accounting charged the command.

Cost: a cold start (the bundled capture's command: Debian's python3 importing 37 modules) timed alone and under a
capture, turns alternating, the cache dropped before each: its wall time from fork to exit either way (a capture's
is the metadata's wall_s, from the gate to the exit), and the capture's CPU per captured request.

    sudo .venv/bin/python bench/cmd_capture.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # first: a kill unwinds through the finally blocks (the loop device is detached)

from iosched.core.load.bundled import bundled_startup
from iosched.core.load.iolog import read_capture


def capture(cmd: str, out: Path, *extra: str) -> dict:
    r = subprocess.run([sys.executable, "-m", "iosched.cli", "capture", "--cmd", cmd, "--cold", "-o", str(out),
                        "--json", *extra], capture_output=True, text=True, timeout=600, check=True)
    return json.loads(r.stdout)


def exactness(where: Path) -> str:
    with common.ext4_on_loop(where, "1G") as (dev, mnt):
        rng = random.Random(41)
        sizes = [1000, 4096, 5000, 65536, 100_000, 1 << 20, 3 << 20, (2 << 20) + 123, 777_777] + [1 << 20] * 16
        for i, size in enumerate(sizes):
            (mnt / f"f{i:02d}").write_bytes(rng.randbytes(size))
        os.sync()
        out = where / "cat.iolog"
        doc = capture(f"cat {mnt}/f* > /dev/null", out, "--every-disk")  # the files on the loop, cat elsewhere
        m = read_capture(out).meta
        (loop,) = [f for f in m.files if f.device.name == Path(dev).name]
        files = sum(sizes)
        c = m.command
        assert c is not None
        return (f"exactness: {len(sizes)} files, {files} bytes; read on {loop.device.name}: {loop.read_bytes} bytes "
                f"({loop.read_bytes / files - 1:+.2%}); every disk {m.read_bytes} seen, {c.accounted_read_bytes} "
                f"charged by the kernel ({m.read_bytes / max(c.accounted_read_bytes, 1) - 1:+.2%}); "
                f"{doc['requests']} requests, capture CPU {doc['cpu_us_per_io']:.1f} µs a request")


def cold_alone(cmd: str) -> float:
    subprocess.run(["sh", "-c", "sync; echo 3 > /proc/sys/vm/drop_caches"], check=True)
    t0 = time.monotonic()
    subprocess.run(["sh", "-c", cmd], check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


def cost(rounds: int, where: Path) -> str:
    cmd = bundled_startup().meta.command
    assert cmd is not None
    alone: list[float] = []
    captured: list[float] = []
    per_io: list[float] = []
    for k in range(rounds):
        for turn in (("alone", "capture") if k % 2 == 0 else ("capture", "alone")):
            if turn == "alone":
                alone.append(cold_alone(cmd.cmd))
            else:
                doc = capture(cmd.cmd, where / f"py{k}.iolog")
                captured.append(doc["command"]["wall_s"])
                per_io.append(doc["cpu_us_per_io"])
    med = statistics.median
    return (f"cost: the bundled start-up's command cold, {rounds} runs each way: {med(alone):.3f} s alone "
            f"(min {min(alone):.3f}), {med(captured):.3f} s captured (min {min(captured):.3f}), "
            f"{med(captured) / med(alone) - 1:+.1%} by the medians; capture CPU {med(per_io):.1f} µs a request "
            "(the tracer's start included)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="iosched-bench-", dir="/var/tmp") as tmp:
        print(exactness(Path(tmp)), flush=True)
        print(cost(args.rounds, Path(tmp)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
