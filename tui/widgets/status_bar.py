"""The status line's widget: one line of text."""

from __future__ import annotations

from rich.style import Style

from iosched.tui.widgets.rows import RowsWidget, Runs


class StatusBar(RowsWidget):
    """One line of text; cheaper than a Static, whose update() asks for a new layout."""

    DEFAULT_CSS = "StatusBar { height: 1; }"

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._text = ""

    def set_text(self, text: str) -> None:
        if text != self._text:
            self._text = text
            self.invalidate()

    def build_rows(self, width: int, height: int) -> list[Runs]:
        row = Runs()
        row.add(self._text, Style())
        return [row]
