"""A replayed workload judged on latency measures the disk, not fio, on a real loop device the test makes: a capture
of 1,000 4 KiB reads a second at up to 10 in flight, replayed at its timing under two schedulers. fio replays it at
depth 10 and reaps completions only when that queue fills, so what fio reports is about 10 x the 1 ms gap; the run is
judged on the block layer's figure instead, whose p50 lies within 2x of the device's own r_await measured beside it,
and fio's latency figures are left out of every run, the run's record saying how much of them was fio's own."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from schema_support import problems

from iosched.core.kernel.devices import read_device
from iosched.core.load.iolog import CaptureWriter, write_meta
from iosched.core.load.replay_latency import FIO_FIGURES, MAX_ENGINE_SHARE

from conftest import need_real, run_cli

RATE = 1000  # requests a second
SPAN_S = 3.0
DEPTH = 10  # the deepest the capture saw: fio replays at this depth


def rate_limited_capture(path: Path, device: str) -> Path:
    """4 KiB random reads at RATE a second over SPAN_S seconds from 0.1 s, in flight 1 to DEPTH, as `iosched capture`
    writes them (a capture of a paced reader that sometimes had DEPTH requests out)."""
    doc = read_device(device)
    assert doc is not None
    rnd = random.Random(46)
    count = int(RATE * SPAN_S)
    with open(path, "w") as out:
        w = CaptureWriter(out, f"/dev/{device}", 0)
        for i in range(count):
            w.add(100_000_000 + i * 1_000_000_000 // RATE, 0, rnd.randrange(doc.size_bytes // 4096) * 8, 4096,
                  1 + i % DEPTH)
        end_us = w.finish(int((0.2 + SPAN_S) * 1e9))
    write_meta(w.meta(iolog=path.name, device=doc, kernel=os.uname().release, started="2026-11-27T00:00:00+00:00",
                      duration_s=end_us / 1e6, ended="duration", timestamps="begin", lost=0, untracked=0), path)
    return path


def test_a_replay_judged_on_latency_reports_the_disks_latency_not_fios(tmpfs_loop, tmp_path):
    need_real("fio", "setpriv")
    log = rate_limited_capture(tmp_path / "paced.iolog", tmpfs_loop.name)
    saved = tmp_path / "replay.json"
    r = run_cli("compare", tmpfs_loop.name, "--replay", str(log), "--replay-mode", "timed", "--schedulers",
                "none,mq-deadline", "--repeat", "1", "--settle", "0", "--save", str(saved), timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(saved.read_text())
    assert problems("experiment.schema.json", doc) == []
    assert doc["traced"] and doc["workload"]["replay"]["iodepth"] == DEPTH  # traced without --trace: it is timed
    assert doc["judgement"]["primary_metric"] == "total_p99_us"
    for run in doc["runs"]:
        m, rec = run["metrics"], run["latency"]
        await_us = m["dev_r_await"] * 1000
        assert run["valid"], run["invalid_reason"]
        # The acceptance: the judged figure's p50 within 2x of the device's own r_await, beside it in the same run.
        assert 0.5 <= m["total_p50_us"] / await_us <= 2, (m, rec)
        assert rec["block_kept"] and rec["await_us"] == await_us and 0.5 <= rec["block_mean_us"] / await_us <= 2
        # fio's figure was mostly fio's own waiting: left out, and said so.
        assert rec["fio_mean_us"] > 4 * await_us and rec["engine_share"] > MAX_ENGINE_SHARE, rec
        assert not rec["fio_kept"] and not any(k in m for k in FIO_FIGURES)
        assert rec["note"].startswith("fio's latency is ") and "its latency figures are left out" in rec["note"]
    assert "note: replay latency: judged in the block layer (queue to completion), not on fio's figures; fio's are " \
           "left out of 2 of 2 run(s)" in r.stdout, r.stdout
    assert tmpfs_loop.current() == tmpfs_loop.initial_scheduler


def test_advise_plans_a_captures_latency_in_the_block_layer(tmpfs_loop, tmp_path):
    need_real("fio", "setpriv")
    log = rate_limited_capture(tmp_path / "paced.iolog", tmpfs_loop.name)
    r = run_cli("advise", tmpfs_loop.name, "--replay", str(log), "--goal", "all", "--dry-run", "--json", timeout=60)
    assert r.returncode == 0, r.stderr
    tests = {t["goal"]: t for t in json.loads(r.stdout)["tests"]}
    assert tests["throughput"]["metric"] == "mb_s"
    assert tests["latency"]["metric"] == "total_p99_us" and "in the block layer" in tests["latency"]["how"]
    assert tests["interactive"]["metric"] == "fg:total_p99_us"
    assert tmpfs_loop.current() == tmpfs_loop.initial_scheduler
