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


# ---- every screen at 80x24, as a newcomer's terminal shows it (tests/tui/test_tui_80x24.py reads them) -------------
def test_scheduler_picker_at_80x24(snap_compare, tmp_path):
    app, tree = make_app(tmp_path)
    assert snap_compare(app, terminal_size=(80, 24), run_before=after_key(app, tree, "s"))


def test_help_screen_at_80x24(snap_compare, tmp_path):
    app, tree = make_app(tmp_path)
    assert snap_compare(app, terminal_size=(80, 24), run_before=after_key(app, tree, "question_mark", 3))


def test_tunables_at_80x24(snap_compare, tmp_path):
    app, tree = make_app(tmp_path)
    assert snap_compare(app, terminal_size=(80, 24), run_before=after_key(app, tree, "u", 3))


def test_palette_at_80x24(snap_compare, tmp_path):
    app, tree = make_app(tmp_path)
    before = after_key(app, tree, "ctrl+p", 3)

    async def run_before(pilot) -> None:
        await before(pilot)
        await pilot.press(*"advise")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_quit_question_at_80x24(snap_compare, tmp_path):
    """Quitting after a switch asks whether to put it back."""
    app, tree = make_app(tmp_path)
    before = ticks(app, tree, 3)

    async def run_before(pilot) -> None:
        await before(pilot)
        app.live.settings.changed.add(("sda", "queue/scheduler"))
        await pilot.press("q")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_advise_screen_at_80x24(snap_compare, tmp_path):
    app, tree = make_app(tmp_path)
    assert snap_compare(app, terminal_size=(80, 24), run_before=after_key(app, tree, "a", 3))


def test_compare_result_at_80x24(snap_compare, tmp_path):
    """A verdict reached early (fewer runs than the most): the bar full, the verdict second, every key whole."""
    from dataclasses import replace

    from test_tui_compare_layout import judged_doc

    from iosched.core.statistics.verdict import judge
    from iosched.tui.checklist import SchedulerChecklist
    from iosched.tui.compare_run import ExperimentEnded

    app, tree = make_app(tmp_path)
    before = after_key(app, tree, "c", 3)

    async def run_before(pilot) -> None:
        await before(pilot)
        screen = app.screen
        doc = judged_doc([*screen.query_one(SchedulerChecklist).order, "kyber"])
        screen.query_one("ProgressBar").update(total=len(doc.runs) * 2, progress=len(doc.runs))
        screen.post_message(ExperimentEnded(replace(doc, judgement=judge(doc))))
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


@pytest.fixture
def utc(monkeypatch):
    """The wall clock a replay shows, the same on every machine."""
    import time

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_replay_screen_at_80x24(snap_compare, tmp_path, utc):
    from recording_support import write_recording

    path = write_recording(tmp_path / "rec.jsonl", 120, busy=2, idle=2, switch_every=40)
    app = IoschedApp(replay=path, replay_name="rec.jsonl")

    async def run_before(pilot) -> None:
        for _ in range(100):  # the recording is read in a worker
            await pilot.pause(0.05)
            if not app.workers:
                break
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
