"""The status line's text fitted to its width: whole parts are left out by priority; only when what must stay
is still too long is the end cut, after a whole word. ``FittedLine``: a row of parts fitted so each time it is
drawn."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static

from iosched.core.base.cells import cut_at_word
from iosched.tui.plain import plain

# Priorities: a part of a higher number goes first when the line is too long.
KEEP, USEFUL, EXTRA, SPARE = 0, 1, 2, 3


def fit_parts(parts: Sequence[tuple[str, int]], width: int, sep: str = "  ") -> str:
    """``parts`` (text, priority) in display order, joined by ``sep``; while the line is wider than ``width``
    the part of the highest priority number (the rightmost among equals) is left out. If the parts that
    must stay (priority 0) still do not fit, the line is cut at the end with "…"."""
    shown = [(i, text, prio) for i, (text, prio) in enumerate(parts) if text]

    def length(items: list[tuple[int, str, int]]) -> int:
        return sum(cell_len(t) for _, t, _ in items) + cell_len(sep) * max(0, len(items) - 1)

    while length(shown) > width:
        droppable = [item for item in shown if item[2] > KEEP]
        if not droppable:
            break
        worst = max(droppable, key=lambda item: (item[2], item[0]))
        shown.remove(worst)
    return cut_at_word(sep.join(t for _, t, _ in shown), width) if width > 0 else ""


class FittedLine(Static):
    """One row whose parts are fitted to its width each time it is drawn (a resize too): whole parts left out by
    priority, never a word cut where a whole part could go. ``content`` keeps every part."""

    DEFAULT_CSS = "FittedLine { height: 1; }"

    def __init__(self, id: str | None = None, sep: str = "   ") -> None:
        super().__init__("", id=id, markup=False)
        self.sep = sep
        self.parts: tuple[tuple[str, int], ...] = ()

    def show(self, *parts: str | tuple[str, int]) -> None:
        """The parts in display order: a text (which stays, cut at a word if it must) or (text, priority)."""
        self.parts = tuple(p if isinstance(p, tuple) else (p, KEEP) for p in parts)
        self.update(plain(self.sep.join(t for t, _ in self.parts if t)))

    def render(self) -> Text:
        return Text(fit_parts(self.parts, self.content_size.width, self.sep), no_wrap=True)
