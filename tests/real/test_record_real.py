"""Record and replay on a real loop device under fio, with a scheduler switch in the middle; `record` in the
order of arguments docs/commands.md gives."""

from __future__ import annotations

import json
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iosched.core.base.errors import BadInput
from iosched.core.live.recording import load
from iosched.tui.app import IoschedApp
from iosched.tui.widgets.device_table import DeviceTable
from iosched.tui.widgets.line_chart import LineChart

from conftest import need_real, run_cli

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "iosched.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, **kw)


@pytest.fixture
def recorded(loopdev, tmp_path):
    """8 s at 0.5 s; fio randread for 5 s from about 1 s in; switched none -> bfq about 2.5 s into fio;
    `watch --json` alongside. fio starts only once both have their baseline, so both see all of its IO."""
    need_real("fio")
    if loopdev.current() == "bfq":
        # A loop node keeps its scheduler across attachments: one left on bfq would make the switch a no-op.
        (loopdev.sysdir / "queue/scheduler").write_text("none")
        loopdev.initial_scheduler = "none"
    f = tmp_path / "rec.jsonl"
    rec = cli("record", str(f), loopdev.name, "-i", "0.5", "--duration", "8")
    watch = cli("watch", loopdev.name, "-i", "0.5", "-c", "16", "--json")
    first = watch.stdout.readline()  # printed after watch's first interval: its baseline is long taken
    deadline = time.monotonic() + 10
    while (not f.exists() or len(f.read_text().splitlines()) < 2) and time.monotonic() < deadline:
        time.sleep(0.05)
    fio = subprocess.Popen(["fio", "--name=r", f"--filename={loopdev.path}", "--rw=randread", "--bs=4k",
                            "--direct=1", "--ioengine=libaio", "--iodepth=16", "--time_based", "--runtime=5",
                            "--thread", "--output-format=json"], stdout=subprocess.PIPE, text=True)
    time.sleep(2.5)
    assert run_cli("set", loopdev.name, "bfq").returncode == 0  # as a person would, from another shell
    fio_out, _ = fio.communicate(timeout=60)
    assert rec.wait(timeout=30) == 0, rec.stderr.read()
    out, _ = watch.communicate(timeout=30)
    return loopdev, f, [json.loads(line) for line in (first + out).splitlines()], fio_out


async def test_recording_matches_the_live_view_and_replays_with_the_marker(recorded):
    loop, f, watched, fio = recorded
    rec = load(f)
    assert rec.header.devices == [loop.name] and not rec.truncated
    assert len(rec.samples) == 17
    (ev,) = rec.events  # the switch only: the tunables it reset are not separate news
    assert (ev.device, ev.name, ev.old, ev.new) == (loop.name, "scheduler", loop.initial_scheduler, "bfq")
    t_switch = ev.time - rec.samples[0].time
    assert 2.0 <= t_switch <= 6.0
    rates = list(rec.rates())
    # The same IO counted three ways: the recording, the live `watch --json`, and fio's own total.
    fio_ios = json.loads(fio[fio.index("{"):])["jobs"][0]["read"]["total_ios"]
    rec_ios = sum(r.disks[loop.name].r_s * r.interval for r in rates if loop.name in r.disks)
    live_ios = sum(w["disks"][loop.name]["r/s"] * w["interval"] for w in watched if loop.name in w["disks"])
    assert rec_ios == pytest.approx(fio_ios, rel=0.02)
    assert live_ios == pytest.approx(fio_ios, rel=0.02)
    busy_rec = [r.disks[loop.name].r_s for r in rates if r.disks.get(loop.name) and r.disks[loop.name].r_s > 1000]
    busy_live = [w["disks"][loop.name]["r/s"] for w in watched if w["disks"].get(loop.name, {}).get("r/s", 0) > 1000]
    assert statistics.median(busy_rec) == pytest.approx(statistics.median(busy_live), rel=0.15)

    app = IoschedApp(replay=rec, replay_name=f.name)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.view.selected_device().name == loop.name
        assert [m.label for m in app.monitor.markers] == ["bfq"]
        assert "bfq" in app.query_one("#chart-iops", LineChart).plain_text()
        table = app.query_one(DeviceTable)
        assert "bfq" in str(table.get_cell(loop.name, "sched"))
        await pilot.press("g")  # back to the start: before the switch
        assert app.view.replay.pos == 1
        assert loop.initial_scheduler in str(table.get_cell(loop.name, "sched"))
        await pilot.press("s")  # nothing to switch in a replay
        await pilot.pause()
        assert app.screen is app.screen_stack[0]
        await pilot.press("G", "q")


def test_a_cut_off_recording_still_replays_up_to_the_cut(tmp_path, loopdev):
    need_real()
    f = tmp_path / "rec.jsonl"
    assert run_cli("record", str(f), loopdev.name, "-i", "0.2", "--duration", "1").returncode == 0
    full = load(f)
    data = f.read_bytes()
    f.write_bytes(data[: len(data) - 40])  # a crash in the middle of writing the last line
    cut = load(f)
    assert cut.truncated and len(cut.samples) == len(full.samples) - 1
    r = run_cli("report", str(f))
    assert r.returncode == 0 and "cut off" in r.stdout
    csv_rows = run_cli("report", str(f), "--csv").stdout.splitlines()
    assert csv_rows[0].startswith("time,interval,device,r/s,w/s")
    f.write_text("not a recording\n")
    with pytest.raises(BadInput):
        load(f)


def test_record_survives_hangup_under_nohup(tmp_path, loopdev):
    need_real("nohup")
    f = tmp_path / "rec.jsonl"
    p = subprocess.Popen(["nohup", sys.executable, "-m", "iosched.cli", "record", str(f), loopdev.name, "-i", "0.2"],
                         cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        p.send_signal(signal.SIGHUP)  # what a dropped SSH session sends
        time.sleep(1.0)
        assert p.poll() is None, "the recording died with the session"
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=10) == 0
        assert len(load(f).samples) >= 8
    finally:
        if p.poll() is None:
            p.kill()
    assert run_cli("record", str(f), loopdev.name).returncode == 2  # never overwrites a recording


def test_record_in_the_documented_order_records_the_device(loopdev, tmp_path):
    rec = tmp_path / "rec.jsonl"
    r = run_cli("record", str(rec), "-i", "0.5", loopdev.name, "--duration", "1")
    assert r.returncode == 0, r.stderr
    recording = load(str(rec))
    assert recording.header.devices == [loopdev.name]
    assert len(recording.samples) >= 2 and loopdev.name in recording.samples[0].disks
