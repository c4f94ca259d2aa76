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


def cut_at_word(text: str, width: int, mark: str = "…") -> str:
    """``text`` in at most ``width`` columns: whole, or cut after a whole word and ended with ``mark``.

    A bracket the cut would leave open goes with what follows it ("(µs…" says less than nothing); a text
    whose first words fill less than half the room (one long word: a path) is cut inside that word instead.
    """
    if cell_width(text) <= width:
        return text
    room = width - cell_width(mark)
    if room <= 0:
        return head_cells(mark, width)
    head = head_cells(text, room)
    rest = text[len(head):]
    cut = head
    if not rest.startswith(" ") and not head.endswith(" ") and " " in head.strip():  # a word cut in two goes
        cut = head[: head.rstrip().rfind(" ")]
    if cut.count("(") > cut.count(")"):
        cut = cut[: cut.rfind("(")]
    cut = cut.rstrip(" ,;:(·-—")
    if cell_width(cut) < room // 2:
        cut = head
    return cut + mark


def wrap_cells(text: str, width: int, hang: int | None = None) -> list[str]:
    """``text`` (one line) as lines of at most ``width`` columns, broken at spaces, what the terminal would do were
    it not for cutting words in two. The spacing inside each line is kept (a table's columns stay aligned); a
    word longer than a line is cut inside itself. Lines after the first start with ``hang`` spaces (default: the
    text's own indent and two more, so a continuation reads as one, at most half the width); a ``hang`` given
    leaves at least 20 columns of text beside it."""
    if width < 1 or cell_width(text) <= width:
        return [text]
    indent = len(text) - len(text.lstrip(" "))
    pad = " " * (min(indent + 2, width // 2) if hang is None else max(0, min(hang, width - 20)))
    out: list[str] = []
    line, floor = text, indent
    while cell_width(line) > width:
        head = head_cells(line, width)
        cut = max(len(head), floor + 1)  # a wide character that cannot fit goes on the line all the same
        if not line[cut:].startswith(" "):
            space = head.rfind(" ", floor)
            if space > floor and head[:space].strip():
                cut = space
        out.append(line[:cut].rstrip(" "))
        rest = line[cut:].lstrip(" ")
        if not rest:
            return out
        line, floor = pad + rest, len(pad)
    out.append(line)
    return out
