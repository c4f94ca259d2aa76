"""A markdown page (`report --markdown`, `advise --markdown`) to stdout or to a file."""

from __future__ import annotations

import sys
from pathlib import Path

from iosched.core.base.outfile import write_file
from iosched.core.base.terminal_text import printable_text


def write_markdown(path: str, text: str) -> None:
    """The page to stdout ('-') or to a file through the one writer, its escapes shown, never acted on."""
    if path == "-":
        sys.stdout.write(text)
        return
    write_file(Path(path), printable_text(text))
    print(f"iosched: the markdown report is in {path}", file=sys.stderr)
