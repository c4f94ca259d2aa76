"""Scrollbars drawn in whole cells.

Textual draws a thumb's ends with eighth-block glyphs ("▆", "▂") for a smoother bar; read as text (capture-pane, a
screen reader, a terminal without colour) they are glyphs standing in the middle of a row, as in the job picker's
list. Here a thumb is whole cells of its colour, the same bar a cell coarser.
"""

from __future__ import annotations

from typing import ClassVar

from textual.scrollbar import ScrollBar, ScrollBarRender


class WholeCellScrollBar(ScrollBarRender):
    VERTICAL_BARS: ClassVar[list[str]] = [" "] * 8
    HORIZONTAL_BARS: ClassVar[list[str]] = [" "] * 8


def whole_cell_scrollbars() -> None:
    """Every scrollbar of the app drawn in whole cells (Textual's documented way: its class's renderer)."""
    ScrollBar.renderer = WholeCellScrollBar
