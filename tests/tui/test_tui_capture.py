"""The live screen's capture (C) on a real loop device at 80x24: the status line counts it, C again ends it, its
files are whole, the compare screen offers it as `replay: FILE`, and the replay runs and is judged there. A
read-only view refuses to capture; quitting mid-capture still writes it whole."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_tui_jobs import wait_until
from tui_support import wait_for_exit

from iosched.core.base.encode import encode
from iosched.core.load.iolog import read_capture
from iosched.tui.app import IoschedApp
from iosched.tui.compare_form import CompareForm
from iosched.tui.compare_screen import CompareScreen
from iosched.tui.dialogs import ConfirmScreen
from iosched.tui.widgets.status_bar import StatusBar

from conftest import need_real

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def whole_captures(directory: Path) -> list[str]:
    """How each capture in ``directory`` ended (each read whole, with reads in it)."""
    metas = [read_capture(log).meta for log in sorted(directory.glob("*.iolog"))]
    assert all(m.reads > 0 for m in metas)
    return [m.ended for m in metas]


def fio_on(path: str, seconds: int = 2) -> None:
    subprocess.run(["fio", "--name=m", f"--filename={path}", "--rw=randrw", "--bs=4k", "--iodepth=4",
                    "--ioengine=libaio", "--direct=1", f"--runtime={seconds}", "--time_based", "--output=/dev/null"],
                   check=True, timeout=60)


def live_app(loop, tmp_path: Path, monkeypatch, **kw: object) -> IoschedApp:
    need_real("fio", "setpriv")
    monkeypatch.setenv("IOSCHED_RESULTS_DIR", str(tmp_path / "results"))
    return IoschedApp(interval=0.25, watch_udev=False, focus=loop.name, **kw)  # type: ignore[arg-type]


async def start_capturing(app: IoschedApp, pilot) -> StatusBar:
    """C on the selected device, until the status line says the capture runs."""
    await pilot.pause()
    await pilot.press("C")
    bar = app.query_one(StatusBar)
    assert await wait_until(pilot, lambda: "● capturing 00:" in bar.plain_text())
    return bar


async def test_capture_then_replay_from_the_compare_screen(tmpfs_loop, tmp_path, monkeypatch):
    loop = tmpfs_loop
    app = live_app(loop, tmp_path, monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        live = app.live
        bar = await start_capturing(app, pilot)
        assert live.selected_device().name == loop.name
        fio_on(loop.path, 1)
        assert await wait_until(pilot, lambda: " requests (C stops)" in bar.plain_text()
                                and "capturing 00:00, 0 requests" not in bar.plain_text())
        assert len(bar.plain_text()) <= 78
        await pilot.press("C")
        assert await wait_until(pilot, lambda: live.capturing.last is not None and not live.capturing.running, 20)
        assert "capturing" not in bar.plain_text()
        cap = read_capture(live.capturing.last)
        assert cap.meta.reads > 1000 and cap.meta.writes > 1000 and cap.meta.device.name == loop.name
        assert cap.iolog.parent == tmp_path / "results" / "captures"
        await pilot.press("c")
        assert await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen))
        form = app.screen.query_one(CompareForm)
        await pilot.pause()
        plan, runs = form.plan("/", destroy=False)
        assert plan.replay is not None and plan.replay.path == str(cap.iolog) and plan.replay.mode == "fast"
        # The focused device is the demo's: its preset (6 runs per variant at most, until a verdict) holds.
        assert plan.job is None and plan.runtime is None and runs == 12 and plan.until_verdict == 6, plan
        await pilot.press("ctrl+r")
        screen = app.screen
        assert await wait_until(pilot, lambda: screen.doc is not None and screen.doc.judgement is not None, 90)
        doc = encode(screen.doc)
        assert doc["workload"]["replay"]["requests"] == cap.meta.requests and doc["primary_metric"] == "mb_s"
        assert len(doc["runs"]) in (8, 12) and all(r["valid"] for r in doc["runs"])  # at a look, or all
        await pilot.press("escape")
        await pilot.press("q")
        await pilot.pause()
        if isinstance(app.screen, ConfirmScreen):
            await pilot.press("y")
        await wait_for_exit(app)
    assert loop.current() == loop.initial_scheduler


async def test_quitting_mid_capture_writes_it_whole_and_read_only_refuses(tmpfs_loop, tmp_path, monkeypatch):
    loop = tmpfs_loop
    app = live_app(loop, tmp_path, monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        live = app.live
        await start_capturing(app, pilot)
        fio_on(loop.path, 1)
        await pilot.press("q")
        await pilot.pause()
        if isinstance(app.screen, ConfirmScreen):
            await pilot.press("y")
        await wait_for_exit(app)
    live.wait_for_children()
    assert whole_captures(tmp_path / "results" / "captures") == ["stopped"]

    ro = live_app(loop, tmp_path, monkeypatch, read_only=True)
    async with ro.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("C")
        await pilot.pause()
        assert not ro.live.capturing.running
