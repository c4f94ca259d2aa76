"""The TUI at 80x24 as a newcomer reads it, on fixture data: every key of every screen's footer whole (it ended
"q Qui"), the table's columns up to wMB/s beside its scrollbar and its devices in natural order, the compare form's
descriptions whole, the progress bar full once a verdict came early, no eighth-block glyph in the middle of a
row, and the palette marking a device another process holds. tests/tui/test_tmux_e2e.py does it in a real
terminal; tests/tui/test_snapshots.py keeps the pictures."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from test_tui_compare_layout import fixture_app, judged_doc, open_compare, open_demo
from textual.widgets import Select, Static
from tui_support import SteppedSampler, populated_tree, screen_text, set_counters

from iosched.core.experiment.events import RunEnded
from iosched.core.statistics.verdict import RunningVerdict, judge
from iosched.tui.advise_screen import AdviseScreen
from iosched.tui.app import IoschedApp
from iosched.tui.checklist import SchedulerChecklist
from iosched.tui.commands import SchedulerCommands
from iosched.tui.compare_form import CompareForm
from iosched.tui.compare_run import ExperimentEnded, ExperimentEvent

EIGHTHS = {chr(c) for c in range(0x2581, 0x2588)}  # ▁▂▃▄▅▆▇: a scrollbar thumb's end, read as text


def footer_missing(app: IoschedApp) -> list[str]:
    """The keys the screen shows in its footer that its last row does not hold whole ("q Quit", not "q Qui")."""
    row = screen_text(app)[-1]
    shown: dict[str, str] = {}  # an action's first key, as the footer shows it ("f1 Help", not "? Help")
    for _node, b, _enabled, _tip in app.screen.active_bindings.values():
        if b.show:
            shown.setdefault(b.action, f"{app.get_key_display(b)} {b.description}")
    return [key for key in shown.values() if key not in row]


async def test_every_screens_keys_are_whole_in_its_footer(tmp_path):
    app = fixture_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert footer_missing(app) == [] and "^p palette" in screen_text(app)[-1]
        screen = await open_compare(tmp_path, pilot, app)
        assert footer_missing(app) == []
        doc = judged_doc([*screen.query_one(SchedulerChecklist).order, "kyber"])
        screen.post_message(ExperimentEnded(replace(doc, judgement=judge(doc))))  # a result: its details key
        await pilot.pause()
        await pilot.pause()
        screen.resumable = tmp_path / "matrix.json"  # and a matrix to resume: its key too
        screen.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        assert "^d Details" in screen_text(app)[-1] and "^e Resume matrix" in screen_text(app)[-1]
        assert footer_missing(app) == [], screen_text(app)[-1]
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, AdviseScreen) and footer_missing(app) == []


async def test_an_early_verdict_fills_the_progress_bar(tmp_path):
    """Until a verdict, the bar's total is the most runs: a verdict after fewer left it at 67%."""
    app = fixture_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_compare(tmp_path, pilot, app)
        labels = screen.query_one(SchedulerChecklist).order
        doc = judged_doc([*labels, "kyber"])
        screen.query_one("ProgressBar").update(total=len(doc.runs) * 3 // 2, progress=0)  # at most 6 runs each
        screen.running = True
        verdict = RunningVerdict([v.label for v in doc.variants])
        for r in doc.runs:
            verdict.add(r)
            screen.post_message(ExperimentEvent(RunEnded(r.index, 0, r.variant, r, standing=verdict.standing())))
            await pilot.pause()
        (bar,) = [row for row in screen_text(app) if "━" in row]
        assert bar.split()[-1] == f"{100 * len(doc.runs) // (len(doc.runs) * 3 // 2)}%", bar
        screen.post_message(ExperimentEnded(replace(doc, judgement=judge(doc))))
        await pilot.pause()
        await pilot.pause()
        (bar,) = [row for row in screen_text(app) if "━" in row]
        assert bar.split()[-1] == "100%", bar


async def test_the_table_shows_wmb_s_whole_beside_its_scrollbar_in_natural_order(tmp_path):
    """Sixteen devices: the table scrolls, the screen does not (its scrollbar took two columns: "wMB/"); loop10
    comes after loop9, as lsblk lists them."""
    tree = populated_tree(tmp_path / "root")
    for i in range(13):
        tree.add_disk(f"loop{i}", f"7:{i}", scheduler="none [mq-deadline] kyber bfq")
    app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        for step in range(1, 4):
            set_counters(tree, step)
            app.live.tick()
        await pilot.pause()
        rows = screen_text(app)
        assert rows[1].split() == ["Device", "Scheduler", "r/s", "w/s", "r_await", "w_await", "%util", "rMB/s",
                                   "wMB/s"], rows[1]
        names = [row.split()[0] for row in rows[2:] if row.split() and row.split()[0].startswith("loop")]
        assert names == [f"loop{i}" for i in range(len(names))] and len(names) >= 6
        assert app.live.devices[10].name == "loop10" and app.live.devices[13].name == "nvme0n1"
        assert footer_missing(app) == []


async def test_every_job_the_compare_form_offers_is_described_whole(tmp_path):
    """Its description in the rows it has under the job list (the demo's start-up lost its last words)."""
    tree = populated_tree(tmp_path / "root")
    app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False,
                     focus="sda", sandbox="sda")
    app._tree = tree
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_demo(pilot, app)
        form = screen.query_one(CompareForm)
        select = form.query_one("#job", Select)
        cut = []
        for _label, value in select._options:
            select.value = value
            await pilot.pause()
            box = form.query_one("#job-info", Static)
            r = box.region  # its rows on the screen, the column beside it left out
            shown = " ".join(" ".join(row[r.x:r.right] for row in screen_text(app)[r.y:r.bottom]).split())
            if " ".join(str(box.content).split()) != shown:
                cut.append(f"{value}: {shown}")
        assert cut == []


async def test_no_scrollbar_glyph_stands_in_a_row(tmp_path):
    """The job picker's list and the help scroll: their thumbs are whole cells, no "▆▆" among the words."""
    app = fixture_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        for key in ("j", "f1"):
            await pilot.press(key)
            await pilot.pause()
            words = [row for row in screen_text(app) if any(c.isalnum() for c in row)]  # not a box's border
            assert not EIGHTHS & set("".join(words)), (key, words)
            await pilot.press("escape")
            await pilot.pause()


async def test_the_palette_marks_a_device_another_process_holds(tmp_path):
    """Another user's loop device, with their fio on it, is marked where the palette offers to advise or switch."""
    tree = populated_tree(tmp_path / "root")
    tree.add_disk("loop2", "7:2")
    held = tree.root / "proc/4242/fd"
    held.mkdir(parents=True)
    (held / "3").symlink_to("/dev/loop2")
    (tree.root / "proc/4242/comm").write_text("fio\n")
    app = IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        provider = SchedulerCommands(app.screen)
        await provider.startup()
        found = [text for text, _run, _help in provider._commands()]
        assert "loop2: advise (which scheduler?) · in use by fio (pid 4242)" in found
        assert "loop2: scheduler -> bfq · in use by fio (pid 4242)" in found
        assert "sda: advise (which scheduler?)" in found  # nobody's: no mark
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"loop2 advise")
        for _ in range(20):
            await asyncio.sleep(0.05)
            if "in use by fio (pid 4242)" in " ".join(screen_text(app)):
                break
        assert "loop2: advise (which scheduler?) · in use by fio (pid 4242)" in " ".join(screen_text(app))
