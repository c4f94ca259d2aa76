"""How many terminal columns text takes, and cutting it to a number of columns (for plain-text tables).

East Asian wide and full-width characters take two columns, combining marks and format characters none, the
rest one: what terminals (and Rich, in the TUI) do. Pure functions of the text; ASCII takes the fast path.
"""

from __future__ import annotations

import unicodedata


def char_cells(c: str) -> int:
    if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1


def cell_width(text: str) -> int:
    """Columns ``text`` takes on a terminal."""
    return len(text) if text.isascii() else sum(char_cells(c) for c in text)


def head_cells(text: str, width: int) -> str:
    """The longest start of ``text`` that fits ``width`` columns (a wide character that would straddle the
    edge is left out, so the result may be one column short)."""
    if text.isascii():
        return text[:max(0, width)]
    used = 0
    for i, c in enumerate(text):
        used += char_cells(c)
        if used > width:
            return text[:i]
    return text


def tail_cells(text: str, width: int) -> str:
    """The longest end of ``text`` that fits ``width`` columns."""
    return head_cells(text[::-1], width)[::-1]


def pad_cells(text: str, width: int) -> str:
    """``text`` with spaces after it up to ``width`` columns (as str.ljust does for one-column characters)."""
    return text + " " * max(0, width - cell_width(text))


def printable(text: str) -> str:
    """Text from outside (a remote host, a saved file) as it may reach a terminal: control characters, escape
    sequences included, shown escaped, never acted on."""
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
