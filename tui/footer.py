"""The key footer, without the slow leak of Textual's own.

Textual's Footer recomposes whenever the active screen's bindings change (every dialog opened or closed) and
data-binds ``compact`` into each new key. The watcher list on the footer keeps an entry per key ever made:
Textual drops closed ones only when ``compact`` changes, which it never does here. Opening and closing a
dialog once a minute grew the TUI by about 1 MB a minute. This footer drops the entries of removed keys
after each recompose.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class KeysFooter(Footer):
    def bindings_changed(self, screen: Screen) -> None:
        # Textual's Footer draws no keys while the app lacks focus, and its web driver blurs the app at start:
        # a browser tab showed a blank key bar until the viewer clicked the terminal (or for good, when that
        # first click's focus reached the app before its start-up blur). The keys are drawn focus or not.
        self._bindings_ready = True
        if self.is_attached and screen is self.screen:
            self.call_after_refresh(self.recompose)

    async def recompose(self) -> None:
        await super().recompose()
        watchers = getattr(self, "__watchers", None)  # Textual's per-object watcher lists, by attribute
        if not isinstance(watchers, dict):
            return
        for entries in watchers.values():
            entries[:] = [(node, callback) for node, callback in entries
                          if not (getattr(node, "_closing", False) or getattr(node, "_closed", False))]
