"""The status line's text fitted to its width: whole parts are left out by priority; only when what must stay
is still too long is the end cut."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len

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
    line = sep.join(t for _, t, _ in shown)
    if cell_len(line) > width:
        line = line[:max(0, width - 1)] + "…" if width > 0 else ""
    return line
