"""Textual CSS themes shipped as package data: base layout plus one file per theme."""

from __future__ import annotations

from pathlib import Path

THEMES_DIR = Path(__file__).parent
THEME_NAMES = ("dark", "light", "mono")


def stylesheets() -> list[Path]:
    """The base stylesheet and every theme's; theme rules are scoped by a ``theme-NAME`` class on the app."""
    return [THEMES_DIR / "base.tcss", *(THEMES_DIR / f"{name}.tcss" for name in THEME_NAMES)]
