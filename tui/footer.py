"""The key footer: every key whole at any width, and without the slow leak of Textual's own.

Textual's Footer lays its keys out in a row and cuts whatever passes the right edge, under the palette's hint: at
80 columns the compare screen's footer ended "q Qui". This footer decides before it makes its keys how they fit:
with Textual's spacing, else compact (one space between keys), else without the palette's hint (ctrl+p still opens
it, and the help lists it); each choice made again when the width changes.

Textual's Footer also recomposes whenever the active screen's bindings change (every dialog opened or closed) and
data-binds ``compact`` into each new key. The watcher list on the footer keeps an entry per key ever made:
Textual drops closed ones only when ``compact`` changes, which it rarely does here. Opening and closing a dialog
once a minute grew the TUI by about 1 MB a minute. This footer drops the entries of removed keys after each
recompose.
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer

# Cells a key takes besides its key and description: Textual's spacing (" k " + "description "), compact ("k" +
# " description" + a margin); the palette's hint also has its border.
SPACED, COMPACT, PALETTE = 3, 2, 4


class KeysFooter(Footer):
    def bindings_changed(self, screen: Screen) -> None:
        # Textual's Footer draws no keys while the app lacks focus, and its web driver blurs the app at start:
        # a browser tab showed a blank key bar until the viewer clicked the terminal (or for good, when that
        # first click's focus reached the app before its start-up blur). The keys are drawn focus or not.
        self._bindings_ready = True
        if self.is_attached and screen is self.screen:
            self.call_after_refresh(self.recompose)

    def compose(self) -> ComposeResult:
        if self._bindings_ready:
            self._fit(self.size.width or self.app.size.width)
        yield from super().compose()

    def on_resize(self, event: events.Resize) -> None:
        if self._bindings_ready and self._layout(event.size.width) != (self.compact, self.show_command_palette):
            self.call_after_refresh(self.recompose)

    def _layout(self, width: int) -> tuple[bool, bool]:
        """(compact, the palette's hint shown) that keeps every key whole at ``width`` cells."""
        shown: dict[str, int] = {}  # one key per action, as Textual's footer shows them
        for _node, binding, _enabled, _tooltip in self.screen.active_bindings.values():
            if binding.show and binding.action not in shown:
                shown[binding.action] = (Text(self.app.get_key_display(binding)).cell_len
                                         + Text(binding.description).cell_len)
        palette = 0
        if self.app.ENABLE_COMMAND_PALETTE and self.app.COMMAND_PALETTE_BINDING in self.screen.active_bindings:
            _node, binding, _enabled, _tooltip = self.screen.active_bindings[self.app.COMMAND_PALETTE_BINDING]
            palette = Text(self.app.get_key_display(binding)).cell_len + Text(binding.description).cell_len + PALETTE
        keys = list(shown.values())
        if sum(keys) + SPACED * len(keys) + palette <= width:
            return False, True
        return True, sum(keys) + COMPACT * len(keys) + palette <= width

    def _fit(self, width: int) -> None:
        compact, palette = self._layout(width)
        self.set_reactive(Footer.compact, compact)  # read by each key as it is made (its data binding)
        self.set_class(compact, "-compact")
        self.set_reactive(Footer.show_command_palette, palette)

    async def recompose(self) -> None:
        await super().recompose()
        watchers = getattr(self, "__watchers", None)  # Textual's per-object watcher lists, by attribute
        if not isinstance(watchers, dict):
            return
        for entries in watchers.values():
            entries[:] = [(node, callback) for node, callback in entries
                          if not (getattr(node, "_closing", False) or getattr(node, "_closed", False))]
