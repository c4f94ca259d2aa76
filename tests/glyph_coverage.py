"""Which characters the TUI draws that the browser page must supply itself (see docs/web_glyphs.py)."""

from __future__ import annotations

from pathlib import Path

import textual_serve

REPO = Path(__file__).resolve().parent.parent
ROBOTO = Path(textual_serve.__file__).parent / "static/fonts/RobotoMono-VariableFont_wght.ttf"
BRAILLE = range(0x2800, 0x2900)  # the live charts' dots, made with chr() rather than written out
XTERM_DRAWS = range(0x2500, 0x25A0)  # box drawing and block elements: xterm.js paints these itself


def drawn_characters() -> set[int]:
    """Every non-ASCII character written in the TUI's sources and the text charts, and the braille block."""
    chars = set(BRAILLE)
    for path in [*(REPO / "tui").glob("*.py"), *(REPO / "core").glob("*.py"), *(REPO / "themes").glob("*.tcss")]:
        chars.update(ord(c) for c in path.read_text() if ord(c) > 127)
    return chars


def font_covers(font_path_or_file) -> set[int]:
    from fontTools.ttLib import TTFont

    return set(TTFont(font_path_or_file).getBestCmap())


def glyphs_to_ship() -> set[int]:
    return {c for c in drawn_characters() if c not in XTERM_DRAWS} - font_covers(ROBOTO)
