"""A device attached while `iosched record` runs: its switches are recorded and replay lists it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from iosched.core.live.recording import load
from iosched.tui.app import IoschedApp
from iosched.tui.widgets.device_table import DeviceTable

from conftest import detach_loop, need_real, run_cli

ROOT = Path(__file__).resolve().parents[2]


def record_while_attaching(tmp_path: Path, make_loop):
    need_real()
    f = tmp_path / "rec.jsonl"
    rec = subprocess.Popen([sys.executable, "-m", "iosched.cli", "record", str(f), "-i", "0.25", "--duration", "5"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 10
    while (not f.exists() or len(f.read_text().splitlines()) < 3) and time.monotonic() < deadline:
        time.sleep(0.05)
    (tmp_path / "disk").mkdir()
    loop = make_loop("64M", tmp_path / "disk")  # attached after the recording's inventory
    try:
        time.sleep(1.0)
        target = "bfq" if loop.current() != "bfq" else "mq-deadline"
        assert run_cli("set", loop.name, target).returncode == 0
        _, err = rec.communicate(timeout=30)
        assert rec.returncode == 0, err
    finally:
        rec.kill()
        detach_loop(loop)  # before the replay: the recording keeps a device that is gone
    return loop, target, load(f), f


async def test_a_device_attached_mid_recording_is_recorded_and_replayed(tmp_path, make_loop):
    loop, target, rec, f = record_while_attaching(tmp_path, make_loop)
    # By backing file: another process's device may have had this loop name when the recording began.
    assert str(loop.file) not in [d.backing_file for d in rec.header.inventory]
    assert str(loop.file) in [d.backing_file for d in rec.attached]
    assert loop.name in [d.name for d in rec.inventory]
    switches = [e for e in rec.events if e.device == loop.name and e.name == "scheduler"]
    assert [(e.old, e.new) for e in switches] == [(loop.initial_scheduler, target)]
    app = IoschedApp(replay=rec, replay_name=f.name)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert loop.name in [d.name for d in app.monitor.devices]
        assert target in str(app.query_one(DeviceTable).get_cell(loop.name, "sched"))
        assert any(m.device == loop.name and m.label == target for m in app.monitor.markers)
        await pilot.press("q")
