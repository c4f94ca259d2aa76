"""Command palette entries: "loop3: scheduler -> bfq" for every device and available scheduler, and "loop3: advise
(which scheduler?)" for every device with one; a device another process holds open, or another iosched has under
load, is marked in its entries ("· in use by fio (pid 4242)"), so another user's loop device is not taken for a
spare one. A name (a device's, a process's comm) is shown as it is, never read as markup (tui/plain.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.fuzzy import Matcher

from iosched.core.base.terminal_text import printable
from iosched.core.experiment.busy import other_loads
from iosched.core.kernel.processes import device_users
from iosched.tui.plain import plain

if TYPE_CHECKING:
    from iosched.tui.app import IoschedApp
    from iosched.tui.live_screen import LiveScreen

SWITCH_HELP = "switch the IO scheduler now"
ADVISE_HELP = "observe, plan, test and decide which scheduler suits this disk (nothing changes before you run it)"


def in_use(users: dict[str, list[str]], loads: dict[str, str], device: str) -> str:
    """" · in use by fio (pid 4242)": who holds ``device`` besides this iosched, in a few words ("" for nobody)."""
    who = ([f"iosched ({loads[device]})"] if device in loads else []) + users.get(device, [])
    if not who:
        return ""
    more = f" and {len(who) - 2} more" if len(who) > 2 else ""
    return f" · in use by {', '.join(who[:2])}{more}"


def highlighted(matcher: Matcher, text: str) -> Content:
    """``text`` with what ``matcher`` matched in it highlighted, never read as markup (Matcher.highlight reads it)."""
    content = plain(text)
    _, offsets = matcher.fuzzy_search.match(matcher.query, text)
    for at in offsets:
        if not text[at].isspace():
            content = content.stylize(matcher.match_style, at, at + 1)
    return content


class SchedulerCommands(Provider):
    users: dict[str, list[str]]
    loads: dict[str, str]

    async def startup(self) -> None:
        """Who holds each device, read in a thread as the palette opens (a look at every process's open files)."""
        self.users, self.loads = {}, {}
        live = self._live()
        if live is None:
            return
        names, root = [d.name for d in live.devices], live.monitor.root
        self.users, self.loads = await asyncio.to_thread(lambda: (device_users(names, root), other_loads(root)))

    def _commands(self) -> list[tuple[str, Callable[[], object], str]]:
        live = self._live()
        if live is None:  # a replay: nothing to switch
            return []
        users, loads = getattr(self, "users", {}), getattr(self, "loads", {})
        out: list[tuple[str, Callable[[], object], str]] = []
        for dev in live.devices:
            mark = in_use(users, loads, dev.name)
            for sched in dev.schedulers:
                if sched != dev.scheduler:
                    out.append((printable(f"{dev.name}: scheduler -> {sched}{mark}"),
                                partial(live.settings.start_switch, dev.name, sched), SWITCH_HELP))
        for dev in live.devices:
            if dev.has_scheduler:
                out.append((printable(f"{dev.name}: advise (which scheduler?){in_use(users, loads, dev.name)}"),
                            partial(live.action_advise, dev.name), ADVISE_HELP))
        return out

    def _live(self) -> LiveScreen | None:
        app: IoschedApp = self.app  # type: ignore[assignment]
        return app.live

    async def discover(self) -> Hits:
        for text, run, help_text in self._commands():
            yield DiscoveryHit(plain(text), run, text=text, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, run, help_text in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, highlighted(matcher, text), run, text=text, help=help_text)
