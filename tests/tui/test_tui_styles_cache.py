"""Closed dialogs and notifications leave no line caches behind (Textual's StylesCache colour cache kept the
StylesCache of up to 1024 gone widgets, and every line they rendered: about 0.3 MB a minute in the soak)."""

from __future__ import annotations

import gc

from textual._styles_cache import StylesCache
from textual.widget import Widget
from tui_support import SteppedSampler, open_and_close_dialogs

from iosched.tui.app import IoschedApp

from fixtree import FixTree


def alive() -> tuple[int, int]:
    """StylesCaches and widgets alive (every widget has one StylesCache)."""
    gc.collect()
    objects = gc.get_objects()
    return (sum(1 for o in objects if isinstance(o, StylesCache)),
            sum(1 for o in objects if isinstance(o, Widget)))


async def test_dialogs_and_notifications_leave_no_line_caches_behind(tmp_path):
    tree = FixTree(tmp_path)
    tree.add_disk("sda", "8:0")
    app = IoschedApp(root=tmp_path, sampler=SteppedSampler(tmp_path), auto_tick=False, watch_udev=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        for i in range(6):  # a dialog leaves tens of caches: six cycles are far past the bound
            await open_and_close_dialogs(pilot, app, 1)
            app.notify(f"note {i}", timeout=0.01)
            await pilot.pause(0.05)
        await pilot.pause(0.2)
        caches, widgets = alive()
        assert widgets >= 10  # the main screen's widgets are counted
        assert caches <= widgets + 10, f"{caches} line caches for {widgets} widgets alive"
