"""Quitting the TUI restores what this session changed and nothing else, on real loop devices."""

from __future__ import annotations

import json

import pytest
from test_tui_jobs import select, wait_until
from tui_support import wait_for_exit

from iosched.core.settings.journal import Journal, default_run_dir
from iosched.core.settings.scheduler import switch_scheduler
from iosched.core.settings.writes import restore
from iosched.tui.app import IoschedApp
from iosched.tui.dialogs import ConfirmScreen

from conftest import need_real, run_cli

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


async def test_quit_restores_only_what_this_session_changed(tmp_path, make_loop):
    need_real()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    outside = make_loop("64M", tmp_path / "a")
    mine = make_loop("64M", tmp_path / "b")
    try:
        # A change made before the TUI opened, the way `iosched set` makes it: journaled.
        switch_scheduler(outside.name, "mq-deadline")
        app = IoschedApp(interval=0.25, watch_udev=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await select(app, pilot, mine.name)
            app.live.settings.start_switch(mine.name, "bfq")
            assert await wait_until(pilot, lambda: app.monitor.markers_of(mine.name) != [])
            assert mine.current() == "bfq"
            await pilot.press("q")
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen)
            question = app.screen.question
            assert f"{mine.name} scheduler" in question and outside.name not in question
            assert "left alone" in question
            await pilot.press("y")
            await wait_for_exit(app)
        assert mine.current() == mine.initial_scheduler
        assert outside.current() == "mq-deadline"  # not this session's: left as it is, still journaled
        left = Journal(default_run_dir("/")).entries()
        assert f"{outside.name}/queue/scheduler" in left
        assert not [k for k in left if k.startswith(f"{mine.name}/")]  # what the switch journaled went with it
    finally:
        restore(devices={outside.name, mine.name})


async def test_quit_summary_names_only_what_was_put_back(tmp_path, capfd, make_loop):
    need_real()
    loop = make_loop("64M")
    try:
        app = IoschedApp(interval=0.25, watch_udev=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await select(app, pilot, loop.name)
            app.live.settings.start_switch(loop.name, "bfq")
            assert await wait_until(pilot, lambda: app.monitor.markers_of(loop.name) != [])
            # The switch journaled nr_requests too; switching back brings it back on its own.
            assert f"{loop.name}/queue/nr_requests" in Journal(default_run_dir("/")).entries()
            capfd.readouterr()
            await pilot.press("q")
            await pilot.pause()
            await pilot.press("y")
            await wait_for_exit(app)
        assert loop.current() == "none"
        # What the app prints as it exits: the one value put back, no "nr_requests: unchanged".
        assert capfd.readouterr().err.splitlines() == [f"{loop.name} scheduler: restored bfq -> none"]
    finally:
        restore(devices={loop.name})


async def test_quit_restores_only_the_entries_this_process_made(tmp_path, private_journal, capfd, make_loop):
    """Another process's entry, and an older iosched's that recorded no process, stay for `iosched restore`."""
    need_real()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    theirs = make_loop("64M", tmp_path / "a")
    mine = make_loop("64M", tmp_path / "b")
    ra = mine.sysdir / "queue/read_ahead_kb"
    ra_before = ra.read_text().strip()
    try:
        assert run_cli("set", theirs.name, "mq-deadline").returncode == 0  # a second process, first on theirs
        path = private_journal / "journal.json"
        journal = json.loads(path.read_text())
        (entry,) = journal["entries"][:1]
        other = entry["pid"]
        assert entry["device"] == theirs.name and other > 0
        # An older iosched changed read_ahead_kb from 96 and journaled no pid.
        journal["entries"].append({"device": mine.name, "attr": "queue/read_ahead_kb", "original": "96",
                                   "changed_at": 1.0})
        path.write_text(json.dumps(journal))
        app = IoschedApp(interval=0.25, watch_udev=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await select(app, pilot, mine.name)
            for device in (theirs.name, mine.name):
                app.live.settings.start_switch(device, "bfq")
                assert await wait_until(pilot, lambda device=device: (device, "queue/scheduler")
                                        in app.live.settings.changed)
            app.live.settings.write_tunable(mine.name, ("read_ahead_kb", "64"))
            assert await wait_until(pilot, lambda: (mine.name, "queue/read_ahead_kb") in app.live.settings.changed)
            capfd.readouterr()
            await pilot.press("q")
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("y")
            await wait_for_exit(app)
        assert mine.current() == "none"  # this process's own switch: put back
        assert theirs.current() == "bfq" and ra.read_text().strip() == "64"  # the others' entries: left
        left = Journal(default_run_dir("/")).entries()
        assert left[f"{theirs.name}/queue/scheduler"].pid == other
        assert left[f"{mine.name}/queue/read_ahead_kb"].pid == 0
        said = " ".join(capfd.readouterr().err.split())  # the exit message is wrapped to the terminal
        assert said == " ".join([
            f"{theirs.name} scheduler: left alone: first changed by pid {other}, not by this one; "
            "`iosched restore` puts it back",
            f"{mine.name} scheduler: restored bfq -> none",
            f"{mine.name} read_ahead_kb: left alone: first changed by an earlier iosched that recorded no process, "
            "not by this one; `iosched restore` puts it back",
        ]), said
        r = run_cli("restore")  # machine-wide: every process's entries, the older iosched's too
        assert r.returncode == 0, r.stderr
        assert theirs.current() == "none" and ra.read_text().strip() == "96"
        assert Journal(default_run_dir("/")).entries() == {}
    finally:
        restore(devices={theirs.name, mine.name})
        ra.write_text(ra_before)
