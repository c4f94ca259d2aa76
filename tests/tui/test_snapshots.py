"""SVG snapshots of the main screen, the scheduler picker and the help screen, on fixture data.

Update after an intended change with: .venv/bin/pytest tests/tui/test_snapshots.py --snapshot-update
"""

from __future__ import annotations

import pytest
from tui_support import SteppedSampler, populated_tree, set_counters

from iosched.tui.app import IoschedApp


def make_app(tmp_path) -> tuple[IoschedApp, object]:
    tree = populated_tree(tmp_path / "root")
    app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False)
    return app, tree


def ticks(app: IoschedApp, tree, n: int = 30):
    async def run_before(pilot) -> None:
        await pilot.pause()  # the live screen is the app's default screen: let it mount first
        for step in range(1, n + 1):
            set_counters(tree, step)
            app.live.tick()
        await pilot.press("down")  # select sda, the HDD with a steady read load
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_main_screen(snap_compare, tmp_path, size):
    app, tree = make_app(tmp_path)
    assert snap_compare(app, terminal_size=size, run_before=ticks(app, tree))


def after_key(app: IoschedApp, tree, key: str, n: int = 30):
    before = ticks(app, tree, n)

    async def run_before(pilot) -> None:
        await before(pilot)
        await pilot.press(key)
        await pilot.pause()

    return run_before


def test_scheduler_picker(snap_compare, tmp_path):
    app, tree = make_app(tmp_path)
    assert snap_compare(app, terminal_size=(100, 30), run_before=after_key(app, tree, "s"))


def test_help_screen(snap_compare, tmp_path):
    app, tree = make_app(tmp_path)
    assert snap_compare(app, terminal_size=(100, 30), run_before=after_key(app, tree, "question_mark", 3))


def test_job_picker_at_80x24(snap_compare, tmp_path):
    app, tree = make_app(tmp_path)
    assert snap_compare(app, terminal_size=(80, 24), run_before=after_key(app, tree, "j", 3))


def test_compare_form_at_80x24(snap_compare, tmp_path):
    app, tree = make_app(tmp_path)
    assert snap_compare(app, terminal_size=(80, 24), run_before=after_key(app, tree, "c", 3))
