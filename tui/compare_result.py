"""The compare screen's result: the verdict first, then the secondary metrics and tables, then the charts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.containers import VerticalScroll
from textual.widgets import Static

from iosched.core.present.report import text_report

if TYPE_CHECKING:
    from textual.screen import Screen


def result_text(doc: dict, saved: Path | None) -> str:
    """The report of a finished experiment or matrix, and where it was saved."""
    if doc.get("kind") == "matrix":
        from iosched.core.present.matrix import matrix_text

        report = matrix_text(doc, doc["judgement"])
    else:
        report = text_report(doc, doc["judgement"], verdict_first=True)
    if saved is not None:
        report += f"\nSaved to {saved}: `iosched report FILE` shows it again (--plot draws it).\n"
    return report


def show_result(screen: Screen, doc: dict, saved: Path | None) -> None:
    """The result in the screen's scrolling results pane, from its top (a second run's verdict too)."""
    screen.query_one("#report", Static).update(result_text(doc, saved))
    from iosched.tui.result_charts import ResultCharts  # plotext loads with the first result

    results = screen.query_one("#results", VerticalScroll)
    results.query(ResultCharts).remove()
    results.mount(ResultCharts(doc))
    results.scroll_home(animate=False)


def page(screen: Screen, pages: int) -> None:
    results = screen.query_one("#results", VerticalScroll)
    results.scroll_to(y=results.scroll_y + pages * max(1, results.scrollable_content_region.height - 1),
                      animate=False)
