"""Command palette entries: "loop3: scheduler -> bfq" for every device and available scheduler, and "loop3: advise
(which scheduler?)" for every device with one."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from iosched.tui.app import IoschedApp
    from iosched.tui.live_screen import LiveScreen

SWITCH_HELP = "switch the IO scheduler now"
ADVISE_HELP = "observe, plan, test and decide which scheduler suits this disk (nothing changes before you run it)"


class SchedulerCommands(Provider):
    def _commands(self) -> list[tuple[str, Callable[[], object], str]]:
        live = self._live()
        if live is None:  # a replay: nothing to switch
            return []
        out: list[tuple[str, Callable[[], object], str]] = []
        for dev in live.devices:
            for sched in dev.schedulers:
                if sched != dev.scheduler:
                    out.append((f"{dev.name}: scheduler -> {sched}", partial(live.settings.start_switch, dev.name,
                                                                             sched), SWITCH_HELP))
        for dev in live.devices:
            if dev.has_scheduler:
                out.append((f"{dev.name}: advise (which scheduler?)", partial(live.action_advise, dev.name),
                            ADVISE_HELP))
        return out

    def _live(self) -> LiveScreen | None:
        app: IoschedApp = self.app  # type: ignore[assignment]
        return app.live

    async def discover(self) -> Hits:
        for text, run, help_text in self._commands():
            yield DiscoveryHit(text, run, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, run, help_text in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), run, help=help_text)
