"""Text from outside on its way to the screen: the one way the TUI shows it.

A process's name (comm), a device's name or model, a path, a job's name, a saved file's fields may hold "[b]",
"[link=…]" or an unbalanced "[": read as Textual markup, they would restyle what is shown, make it a link, or stop
the widget with a markup error. What comes from outside is shown through here: as content, never parsed, every
character that is not printable escaped (core/base/terminal_text.py). iosched's own markup stays in templates,
the outside text filled into them as ``$name`` variables, which Textual inserts as they are.
"""

from __future__ import annotations

from textual.content import Content

from iosched.core.base.terminal_text import printable, printable_text

__all__ = ["marked", "plain"]


def plain(text: str) -> Content:
    """``text`` as content: never read as markup, its line breaks kept, every other character that is not printable
    shown escaped."""
    return Content(printable_text(text))


def marked(template: str, **outside: str) -> Content:
    """iosched's own markup ``template`` with each ``$name`` in it the outside text ``outside[name]``, on one line,
    inserted as it is (never read as markup)."""
    return Content.from_markup(template, **{name: printable(value) for name, value in outside.items()})
