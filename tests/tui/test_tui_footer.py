"""Opening and closing dialogs many times leaves no footer keys behind (Textual's Footer kept every key ever
made alive through its watcher list: about 1 MB a minute with a dialog a minute)."""

from __future__ import annotations

import gc

from textual.widgets._footer import FooterKey
from tui_support import SteppedSampler, open_and_close_dialogs

from iosched.tui.app import IoschedApp

from fixtree import FixTree


def footer_keys() -> tuple[int, int]:
    gc.collect()
    keys = [o for o in gc.get_objects() if isinstance(o, FooterKey)]
    return len(keys), sum(1 for k in keys if k.is_attached)


async def test_dialogs_opened_and_closed_leave_no_footer_keys_behind(tmp_path):
    tree = FixTree(tmp_path)
    tree.add_disk("sda", "8:0")
    app = IoschedApp(root=tmp_path, sampler=SteppedSampler(tmp_path), auto_tick=False, watch_udev=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await open_and_close_dialogs(pilot, app, 8)  # a leak of one recompose a cycle is past 2x by then
        await pilot.pause()
        total, attached = footer_keys()
        # Those on screen, and at most one recompose's worth on their way out.
        assert attached > 0
        assert total <= 2 * attached, f"{total} footer keys alive, {attached} on screen"
