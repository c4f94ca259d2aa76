"""core/base/terminal_text.py: the one sanitiser for text from outside on its way to a terminal or a page."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from iosched.core.base.terminal_text import holds_control, printable, printable_lines, printable_text

# What a terminal acts on: C0 controls (ESC, BEL, CR, BS), DEL, C1 controls (CSI as one character), the
# bidirectional overrides and isolates, line and paragraph separators.
ACTED_ON = [chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0), 0x200E, 0x200F, *range(0x202A, 0x202F),
                             *range(0x2066, 0x206A), 0x2028, 0x2029, 0xFEFF)]
outside_text = st.lists(st.one_of(st.characters(), st.sampled_from([*ACTED_ON, "\r\n"])), max_size=200).map("".join)


@given(outside_text)
def test_nothing_a_terminal_acts_on_comes_through(text):
    line = printable(text)
    assert line.isprintable() and not any(c in line for c in ACTED_ON)
    page = printable_text(text)
    assert all(c.isprintable() or c in "\n\t" for c in page.replace("\r\n", "\n"))
    assert page.count("\n") == text.count("\n") and page.count("\t") == text.count("\t")


@given(outside_text)
def test_printable_text_is_left_alone_and_the_rest_is_shown_not_dropped(text):
    assert printable(printable(text)) == printable(text)  # what was made printable stays as it is
    if text.isprintable():
        assert printable(text) == text == printable_text(text)
    for c in text:
        if not c.isprintable():
            assert repr(c)[1:-1] in printable(text)  # shown escaped: \x1b, \u202e, never dropped
    assert holds_control(text) == (printable_text(text) != text)


def test_a_title_setting_and_screen_clearing_name_is_shown_escaped():
    name = "loop0\x1b]0;owned\x07\x1b[2J\r\u202e"
    assert printable(name) == "loop0\\x1b]0;owned\\x07\\x1b[2J\\r\\u202e"
    assert printable_lines(["a\nb", "c"]) == ["a\\nb", "c"] and printable_text("a\nb\x1b") == "a\nb\\x1b"


@dataclass(frozen=True)
class _Inner:
    words: list[str]


@dataclass(frozen=True)
class _Doc:
    name: str
    inner: _Inner | None
    table: dict[str, float]


def test_a_document_holding_an_escape_anywhere_is_told():
    plain = _Doc("loop0", _Inner(["a\nb", "c\td"]), {"iops": 1.0})
    assert not holds_control(plain)
    assert holds_control(_Doc("loop0", _Inner(["ok", "\x1b[2J"]), {}))
    assert holds_control(_Doc("loop0", None, {"bfq\x07": 1.0}))
    assert holds_control(_Doc("\x9b2J", None, {}))
