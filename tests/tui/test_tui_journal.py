"""The TUI and an unreadable journal: a warning at start, and a switch refused without a change."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_support import SteppedSampler, populated_tree

from iosched.tui.app import IoschedApp

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


def write_bad_journal(run_dir: Path) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "journal.json").write_text('{"entries": [1]}')


def read_journal_text(run_dir: Path) -> str:
    return (run_dir / "journal.json").read_text()


async def test_the_tui_warns_at_start_about_an_unreadable_journal(tmp_path, private_journal):
    write_bad_journal(private_journal)
    tree = populated_tree(tmp_path / "root")
    app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        warnings = [n.message for n in app._notifications if n.severity == "warning"]
        assert any("journal" in m and "is unreadable (entry 1 is not an object)" in m for m in warnings)
        assert not any("Traceback" in n.message or "KeyError" in n.message for n in app._notifications)
    assert read_journal_text(private_journal) == '{"entries": [1]}'


async def test_a_tui_switch_is_refused_while_the_journal_is_unreadable(loopdev, private_journal):
    write_bad_journal(private_journal)
    other = "bfq" if loopdev.current() != "bfq" else "mq-deadline"
    app = IoschedApp(interval=0.25, watch_udev=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.live.settings.start_switch(loopdev.name, other)
        for _ in range(100):
            await pilot.pause(0.05)
            if any(n.severity == "error" for n in app._notifications):
                break
        (err,) = [n for n in app._notifications if n.severity == "error"]
        assert "is unreadable" in err.message and "mv " in err.message and "Traceback" not in err.message
    assert loopdev.current() == loopdev.initial_scheduler
