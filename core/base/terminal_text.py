"""Text from outside on its way to a terminal or a page: the one sanitiser.

A saved file, a host's answers, a recording, a capture's metadata, a name read from sysfs may hold control
characters: an escape sequence sets a terminal's title, clears its screen, moves its cursor or hides a line, a
carriage return writes over what was shown, a bidirectional override reorders what is read. Whatever iosched shows
of such text goes through here, and every character that is not printable comes out escaped (``\\x1b``,
``\\u202e``), shown, never acted on. The command line applies it to everything it writes (cli/terminal.py), iosched's
own cursor and colour sequences aside; the TUI to the text it puts on screen; a page (``--markdown``, an HTML
chart page) to its text.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["holds_control", "printable", "printable_lines", "printable_text"]

_KEPT = frozenset("\n\t")


def _escaped(c: str) -> str:
    return c if c.isprintable() else repr(c)[1:-1]


def printable(text: str) -> str:
    """``text`` on one line with every character that is not printable shown escaped: control characters (escape
    sequences, carriage returns, line breaks), format characters (bidirectional overrides), separators other than a
    space, unassigned and surrogate code points."""
    return text if text.isprintable() else "".join(_escaped(c) for c in text)


def printable_text(text: str) -> str:
    """``printable``, line breaks (``\\n``, and ``\\r\\n``: CSV's) and tabs kept: text of several lines (a page, a
    command's output). A carriage return alone, which writes over the line, is shown escaped."""
    if text.isprintable():
        return text
    return "\r\n".join("".join(c if c in _KEPT else _escaped(c) for c in part) for part in text.split("\r\n"))


def printable_lines(lines: Iterable[str]) -> list[str]:
    """Each line through ``printable``."""
    return [printable(line) for line in lines]


def holds_control(value: object, _depth: int = 0) -> bool:
    """Whether a document (a dataclass of strings, numbers, lists, dicts and other documents) holds a string with a
    character ``printable_text`` would escape: what a writer that adds its own escape sequences (coloured charts) asks
    before it draws from the document."""
    if _depth > 64:
        return True  # deeper than any document: not drawn in colour
    if isinstance(value, str):
        return printable_text(value) != value
    if isinstance(value, (list, tuple)):
        return any(holds_control(x, _depth + 1) for x in value)
    if isinstance(value, dict):
        return any(holds_control(k, _depth + 1) or holds_control(v, _depth + 1) for k, v in value.items())
    fields = getattr(value, "__dataclass_fields__", None)
    if fields is not None:
        return any(holds_control(getattr(value, name), _depth + 1) for name in fields)
    return False
