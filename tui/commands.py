"""Command palette entries: "loop3: scheduler -> bfq" for every device and available scheduler."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from iosched.tui.app import IoschedApp


class SchedulerCommands(Provider):
    def _commands(self) -> list[tuple[str, str, str]]:
        app: IoschedApp = self.app  # type: ignore[assignment]
        out = []
        for dev in app.devices:
            for sched in dev.schedulers:
                if sched != dev.scheduler:
                    out.append((f"{dev.name}: scheduler -> {sched}", dev.name, sched))
        return out

    async def discover(self) -> Hits:
        app: IoschedApp = self.app  # type: ignore[assignment]
        for text, dev, sched in self._commands():
            yield DiscoveryHit(text, partial(app.start_switch, dev, sched), help="switch the IO scheduler now")

    async def search(self, query: str) -> Hits:
        app: IoschedApp = self.app  # type: ignore[assignment]
        matcher = self.matcher(query)
        for text, dev, sched in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), partial(app.start_switch, dev, sched),
                          help="switch the IO scheduler now")
