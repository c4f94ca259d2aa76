"""`--plot-file FILE.html`: the result's charts as one HTML page, their colours kept (rich renders it)."""

from __future__ import annotations

import io


def charts_html(charts: list[str], width: int) -> str:
    """The charts as one HTML page (colours kept; text escaped)."""
    from rich.console import Console
    from rich.text import Text

    con = Console(record=True, file=io.StringIO(), width=width + 2, color_system="truecolor")
    for c in charts:
        con.print(Text.from_ansi(c))
        con.print()
    return con.export_html(inline_styles=True)
