"""Text from outside reaches the screen as it is, never as markup (tui/plain.py): a process's name in the command
palette, a disk's model in the table, an error's words in a notification, a name in a dialog. "[/b]" with nothing
open stopped the widget with a markup error; "[link=…]" made a link; a control character reached the terminal."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st
from test_tui_jobs import select, wait_until
from textual.command import CommandPalette
from textual.widgets import OptionList
from tui_support import SteppedSampler

from iosched.core.base.terminal_text import printable, printable_text
from iosched.tui.app import IoschedApp
from iosched.tui.dialogs import SchedulerPicker
from iosched.tui.plain import marked, plain
from iosched.tui.widgets.device_table import DeviceTable

from fixtree import LAYOUTS, FixTree, add_kernel_disk

COMM = "[/b]x[link=y]["  # a process may name itself so (15 bytes)
MODEL = "[/red]M [link=z]\x1b[2J"


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=200))
def test_outside_text_is_content_never_markup(text):
    assert plain(text).plain == printable_text(text)
    shown = marked("[b]$name[/b]: x", name=text)
    assert shown.plain == printable(text) + ": x"
    assert [(s.start, s.end) for s in shown.spans] == [(0, len(printable(text)))]


def app_on(tree: FixTree) -> IoschedApp:
    return IoschedApp(root=tree.root, sampler=SteppedSampler(tree.root), auto_tick=False, watch_udev=False)


def outside_tree(tree: FixTree, model: str = MODEL) -> FixTree:
    add_kernel_disk(tree, "sda", "8:0", LAYOUTS["6.18"], "mq-deadline")
    tree.write("sys/block/sda/device/model", model + "\n")
    tree.set_diskstats(["   8       0 sda " + " ".join(["0"] * 17)])
    fd = tree.root / "proc/4242/fd"
    fd.mkdir(parents=True)
    os.symlink("/dev/sda", fd / "3")
    tree.write("proc/4242/comm", COMM + "\n")
    return tree


def prompts(app: IoschedApp) -> list[str]:
    options = app.screen.query_one("CommandList", OptionList)
    return [str(options.get_option_at_index(i).prompt.plain) for i in range(options.option_count)]


async def test_a_process_name_in_the_palette_is_shown_as_it_is(tree):
    app = app_on(outside_tree(tree, model="M"))  # the palette's own text alone
    async with app.run_test(size=(120, 40)) as pilot:
        await select(app, pilot, "sda")
        await pilot.press("ctrl+p")
        assert await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"sda")
        want = f"sda: scheduler -> bfq · in use by {COMM} (pid 4242)"
        assert await wait_until(pilot, lambda: any(want in p for p in prompts(app)))
        assert app.return_code is None  # running: no markup error stopped it


async def test_a_model_a_notice_and_a_dialog_show_their_text_as_it_is(tree):
    app = app_on(outside_tree(tree))
    async with app.run_test(size=(120, 40)) as pilot:
        await select(app, pilot, "sda")
        table = app.screen.query_one(DeviceTable)
        assert table.get_cell("sda", "model").plain == printable(MODEL)
        app.notify(f"cannot read {MODEL}", title=COMM, severity="error")
        await pilot.pause()
        shown = list(app._notifications)[-1]
        assert (shown.message, shown.title, shown.markup) == (f"cannot read {printable(MODEL)}", COMM, False)
        app.push_screen(SchedulerPicker(COMM, "mq-deadline", ["mq-deadline", COMM]))
        await pilot.pause()
        label = app.screen.query_one("Label").render()
        assert str(label).startswith(f"{COMM}: IO scheduler")
        assert app.return_code is None
