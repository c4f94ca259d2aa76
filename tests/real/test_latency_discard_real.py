"""Discards move no data: `iosched latency` keeps them out of MB/s (as iostat keeps them out of rkB/s + wkB/s)
and shows them as requests of their own; `top` keeps them out of a process's bytes. A real loop device under
blkdiscard and direct reads and writes, checked against iostat."""

from __future__ import annotations

import json
import subprocess
import time
from datetime import datetime

import pytest
from test_tracer_real import samples_until

from iosched.cli.latency import latency_json, latency_text
from iosched.core.trace.tracer import Tracer

from conftest import need_real

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


MiB = 1 << 20


def iostat_kb(name: str) -> dict[str, int]:
    out = subprocess.run(["iostat", "-d", "-k", "-o", "JSON", name], capture_output=True, text=True, check=True)
    (disk,) = json.loads(out.stdout)["sysstat"]["hosts"][0]["statistics"][0]["disk"]
    return {k: disk[k] for k in ("kB_read", "kB_wrtn", "kB_dscd")}


def run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)


def test_discards_are_requests_not_throughput(loopdev):
    need_real("bpftrace", "setpriv", "iostat", "blkdiscard", "dd")
    tracer = Tracer(interval=0.5, devices=[loopdev.name])
    tracer.start()
    try:
        tracer.wait_ready()
        before = iostat_kb(loopdev.name)
        run("dd", "if=/dev/urandom", f"of={loopdev.path}", "bs=1M", "count=8", "oflag=direct")
        run("blkdiscard", "-o", "0", "-l", str(256 * MiB), loopdev.path)
        run("dd", f"if={loopdev.path}", "of=/dev/null", "bs=1M", "count=4", "iflag=direct")
        time.sleep(0.2)  # the last completions land in diskstats
        after = iostat_kb(loopdev.name)
        samples = samples_until(tracer, time.monotonic())
    finally:
        tracer.stop()
    moved = {k: after[k] - before[k] for k in after}
    assert moved["kB_dscd"] >= 256 * 1024 and moved["kB_read"] + moved["kB_wrtn"] >= 12 * 1024
    devs = [s.devices[loopdev.name] for s in samples if loopdev.name in s.devices]
    traced = sum(d.bytes for d in devs)
    # iostat's rkB/s + wkB/s over the same window: the discarded 256 MiB are in neither.
    iostat_bytes = (moved["kB_read"] + moved["kB_wrtn"]) * 1024
    assert abs(traced - iostat_bytes) <= 0.01 * iostat_bytes, (traced, iostat_bytes)
    discards = [d.ops["discard"] for d in devs if "discard" in d.ops]
    assert sum(o.ios for o in discards) > 0 and all(o.bytes == 0 for o in discards)
    assert sum(o.extent_bytes for o in discards) == moved["kB_dscd"] * 1024
    assert all(o.device.total for o in discards)  # their latencies are kept
    # The per-process figures: blkdiscard's requests are counted, its 256 MiB range is not (its bytes are the
    # few reads with which it looks for a signature before discarding).
    by_comm = [p for s in samples for p in s.processes if p.comm == "blkdiscard"]
    assert by_comm and sum(p.ios for p in by_comm) > 0 and sum(p.bytes for p in by_comm) < 16 * MiB
    # What the command prints: the discard row has no MB/s, the device's bytes are the data alone.
    busy = next(s for s in samples if "discard" in s.devices.get(loopdev.name, devs[0]).ops)
    row = next(line for line in latency_text(busy, datetime.now(), [loopdev.name]).splitlines()
               if line.split()[:1] == ["discard"])
    assert row.split()[2] == "-"
    obj = latency_json(busy, datetime.now(), [loopdev.name])["devices"][loopdev.name]
    assert obj["bytes"] == busy.devices[loopdev.name].bytes and obj["ops"]["discard"]["bytes"] == 0
