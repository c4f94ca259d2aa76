"""Command palette entries: "loop3: scheduler -> bfq" for every device and available scheduler."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from iosched.tui.app import IoschedApp
    from iosched.tui.live_screen import LiveScreen


class SchedulerCommands(Provider):
    def _commands(self) -> list[tuple[str, str, str]]:
        live = self._live()
        if live is None:  # a replay: nothing to switch
            return []
        out = []
        for dev in live.devices:
            for sched in dev.schedulers:
                if sched != dev.scheduler:
                    out.append((f"{dev.name}: scheduler -> {sched}", dev.name, sched))
        return out

    def _live(self) -> LiveScreen | None:
        app: IoschedApp = self.app  # type: ignore[assignment]
        return app.live

    async def discover(self) -> Hits:
        live = self._live()
        if live is None:  # a replay: nothing to switch
            return
        for text, dev, sched in self._commands():
            yield DiscoveryHit(text, partial(live.settings.start_switch, dev, sched),
                               help="switch the IO scheduler now")

    async def search(self, query: str) -> Hits:
        live = self._live()
        if live is None:  # a replay: nothing to switch
            return
        matcher = self.matcher(query)
        for text, dev, sched in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), partial(live.settings.start_switch, dev, sched),
                          help="switch the IO scheduler now")
