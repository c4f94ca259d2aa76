"""Tunables and persistence from the TUI, on a real loop device: edit a tunable, mark it, persist a rule."""

from __future__ import annotations

import pytest
from test_tui_jobs import select, wait_until
from textual.geometry import Region
from textual.widgets import Input

from iosched.core.settings.persist import parse_rules
from iosched.tui.app import IoschedApp
from iosched.tui.dialogs import ConfirmScreen, PersistScreen, TunablesScreen
from iosched.tui.rule_dialog import RuleChangeScreen

from conftest import need_real, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


async def test_edit_a_tunable_then_restore_on_quit(tmp_path, make_loop):
    need_real()
    loop = make_loop("64M")
    (loop.sysdir / "queue/scheduler").write_text("mq-deadline")
    app = IoschedApp(interval=0.25, watch_udev=False, rules_file=str(tmp_path / "60-iosched.rules"))
    async with app.run_test(size=(120, 40)) as pilot:
        await select(app, pilot, loop.name)
        await pilot.press("u")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TunablesScreen)
        names = [s.name for s in screen.settings]
        assert "read_expire" in names and "nr_requests" in names
        await pilot.press(*(["down"] * names.index("read_expire")), "enter")
        box = screen.query_one(Input)
        assert box.value == "500"
        box.value = "120"
        await pilot.press("enter")
        assert await wait_until(pilot, lambda: any(m.label == "read_expire=120" for m in app.monitor.markers))
        assert (loop.sysdir / "queue/iosched/read_expire").read_text().strip() == "120"
        # A bad value is refused with a message and changes nothing.
        await pilot.press("u")
        await pilot.pause()
        await pilot.press(*(["down"] * names.index("read_expire")), "enter")
        app.screen.query_one(Input).value = "soon"
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert any("takes an integer" in n.message for n in app._notifications)
        assert (loop.sysdir / "queue/iosched/read_expire").read_text().strip() == "120"
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        # The restore runs in a worker and the app exits once it is done: wait for that, not a set time (under load
        # the test's context would otherwise end the app while the restore is still writing).
        assert await wait_until(pilot, lambda: app.return_code is not None)
    assert app.return_value == 0  # the restore said nothing failed
    assert (loop.sysdir / "queue/iosched/read_expire").read_text().strip() == "500"


async def test_persist_writes_a_rule_after_showing_it(tmp_path, make_loop):
    need_real()
    loop = make_loop("64M")
    rules = tmp_path / "60-iosched.rules"
    # Tuned with iosched before: the rule keeps that too; a value changed by hand (not journaled) is not ours.
    assert run_cli("set", loop.name, "kyber").returncode == 0
    assert run_cli("tune", loop.name, "read_lat_nsec=1000000").returncode == 0
    ra = loop.sysdir / "queue/read_ahead_kb"
    ra_before = ra.read_text().strip()
    ra.write_text("512")
    try:
        app = IoschedApp(interval=0.25, watch_udev=False, rules_file=str(rules))
        async with app.run_test(size=(120, 40)) as pilot:
            await select(app, pilot, loop.name)
            await pilot.press("P")
            await pilot.pause()
            assert isinstance(app.screen, PersistScreen)
            choices = [by for by, _ in app.screen.choices]
            assert choices == ["kernel-name"]  # no serial or model known; a rotational rule would not reach loop*
            assert "not stable" in app.screen.choices[0][1]
            await pilot.press(*(["down"] * choices.index("kernel-name")), "enter")
            await pilot.pause()
            # Before anything is written: the lines the file gains, and why a loop device's name will not do.
            screen = app.screen
            assert isinstance(screen, RuleChangeScreen)
            added = [line for line in screen.diff.splitlines() if line.startswith("+") and "KERNEL==" in line]
            assert len(added) == 1 and f'KERNEL=="{loop.name}"' in added[0] and 'scheduler}="kyber"' in added[0]
            assert screen.warning and "loop device" in screen.warning
            # What the dialog shows, not only what it holds: the whole rule, its last assignment included.
            shown = screen.query_one("#diff Static")
            assert shown.region.right <= screen.query_one("#diff").region.right  # no part of a line off to the side
            strips = shown.render_lines(Region(0, 0, shown.size.width, shown.size.height))
            assert 'read_lat_nsec}="1000000"' in "".join(seg.text for strip in strips for seg in strip).replace(" ", "")
            assert not rules.exists()
            await pilot.press("y")
            await pilot.pause()
            (rule,), _ = parse_rules(rules.read_text())
            assert (rule.by, rule.match, rule.scheduler) == ("kernel-name", loop.name, "kyber")
            assert rule.settings == (("read_lat_nsec", "1000000"),)
            await pilot.press("q")
    finally:
        ra.write_text(ra_before)


async def test_the_value_box_is_on_screen_at_80x24(tmp_path, make_loop):
    need_real()
    loop = make_loop("64M")
    (loop.sysdir / "queue/scheduler").write_text("bfq")  # bfq has the longest list of tunables
    app = IoschedApp(interval=0.25, watch_udev=False, rules_file=str(tmp_path / "60-iosched.rules"))
    async with app.run_test(size=(80, 24)) as pilot:
        await select(app, pilot, loop.name)
        await pilot.press("u")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TunablesScreen)
        await pilot.press(*(["down"] * (len(screen.settings) - 1)), "enter")
        await pilot.pause()
        box = screen.query_one(Input)
        assert box.has_focus
        region = box.region
        assert region.height >= 1 and region.y + region.height <= 24, region
        highlighted = screen.query_one("#settings").highlighted
        assert highlighted == len(screen.settings) - 1
        await pilot.press("escape")
        await pilot.press("q")


async def test_persist_refuses_the_demo_sandbox(tmp_path, make_loop):
    need_real()
    (tmp_path / "iosched-demo-test").mkdir()
    loop = make_loop("64M", tmp_path / "iosched-demo-test")  # where `iosched demo` puts its file
    rules = tmp_path / "60-iosched.rules"
    app = IoschedApp(interval=0.25, watch_udev=False, rules_file=str(rules))
    async with app.run_test(size=(120, 40)) as pilot:
        await select(app, pilot, loop.name)
        await pilot.press("P")
        await pilot.pause()
        assert not isinstance(app.screen, PersistScreen)
        assert any("demo sandbox" in n.message for n in app._notifications)
        await pilot.press("q")
    assert not rules.exists()
