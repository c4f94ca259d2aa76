"""The compare screen's result as text: the verdict first, then the secondary metrics and tables (the charts follow
it in compare_run.py's results pane)."""

from __future__ import annotations

from pathlib import Path

from iosched.core.documents.document import AlternationDoc, CompareDoc, MatrixDoc
from iosched.core.present.report import text_report


def result_text(doc: CompareDoc | AlternationDoc | MatrixDoc, saved: Path | None) -> str:
    """The report of a finished experiment or matrix (judged), and where it was saved."""
    if isinstance(doc, MatrixDoc):
        from iosched.core.present.matrix import matrix_text

        assert doc.judgement is not None
        report = matrix_text(doc, doc.judgement)
    else:
        assert doc.judgement is not None
        report = text_report(doc, doc.judgement, verdict_first=True)
    if saved is not None:
        report += f"\nSaved to {saved}: `iosched report FILE` shows it again (--plot draws it).\n"
    return report

