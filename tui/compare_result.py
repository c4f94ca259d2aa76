"""The compare screen's result as text: a compare's summary (the answer first, its runs as dots; core/present's, as
the command line prints it), or with details every metric, every comparison and the tables; a matrix's table (the
charts follow it in compare_run.py's results pane)."""

from __future__ import annotations

from pathlib import Path

from iosched.core.base.terminal_text import printable_text
from iosched.core.documents.document import AlternationDoc, CompareDoc, MatrixDoc
from iosched.core.present.report import text_report
from iosched.core.present.summary import Ways

MORE = "ctrl+d: every metric, every comparison and the charts"
LESS = "ctrl+d: back to the summary"
# The form's fields and the screen's key where the command line would name its flags.
WAYS = Ways(details="ctrl+d", runs="{n} repeats", duration="a duration of {s}", runtime="a longer runtime")


def result_text(doc: CompareDoc | AlternationDoc | MatrixDoc, saved: Path | None, details: bool = False) -> str:
    """The report of a finished experiment or matrix (judged), and where it was saved."""
    if isinstance(doc, MatrixDoc):
        from iosched.core.present.matrix import matrix_text

        assert doc.judgement is not None
        report = matrix_text(doc, doc.judgement)
    else:
        assert doc.judgement is not None
        report = text_report(doc, doc.judgement, verdict_first=True, details=details, more=MORE, ways=WAYS)
        if details:
            report = f"{LESS}\n\n{report}"
    if saved is not None:
        report += f"\nSaved to {saved}: `iosched report FILE` shows it again (--plot draws it).\n"
    return printable_text(report)  # a resumed file's words: shown, never escape sequences
