"""What a host sends back over SSH, read within bounds: a line, an answer, a whole stream.

A host is outside input: its iosched may be another version, broken, or not iosched at all. Each read here takes
at most its bound and says, in one sentence naming that bound, when the host went past it; the caller then fails
that host and ends its session (the others go on). Nothing a host sends is kept beyond its bound, so a host
printing a gigabyte costs the controller a bounded buffer, not the gigabyte.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import IO

MAX_SAID_LINE = 64 << 10  # a line on a host's stderr (iosched says one sentence a line)
MAX_SAID = 16 << 20  # all a host says on its stderr in one session (a long compare's progress is a few MiB)
MAX_LIST = 4 << 20  # `iosched list --json`: about 6,000 devices
MAX_ANSWER = 1 << 20  # one answer line of a host's `iosched fleet-host`
MAX_ANSWERS = 64 << 20  # all of a session's answers (a few kB a run)
MAX_RESULT = 64 << 20  # an independent host's compare, as large as a saved one may be (saved.MAX_SAVED_BYTES)

# One host's JSON parsed at a time: a parse holds several times its text, and 64 hosts' at once would not fit.
_PARSING = threading.Lock()


def size_words(n: int) -> str:
    """A bound in words: "64 KiB", "16 MiB"."""
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def read_said(stream: IO[str] | None, on_line: Callable[[str], None], max_line: int = MAX_SAID_LINE,
              max_total: int = MAX_SAID) -> str | None:
    """Each line of a host's stderr to ``on_line`` until its end (None), or the sentence of the bound it broke (the
    rest is left unread: the caller ends the session)."""
    if stream is None:
        return None
    total = 0
    while line := stream.readline(max_line + 1):
        total += len(line)
        if len(line) > max_line:
            return f"it wrote a line longer than {size_words(max_line)} on its stderr (the bound on a line)"
        if total > max_total:
            return f"it wrote more than {size_words(max_total)} on its stderr (the bound on a session's words)"
        on_line(line.rstrip("\n"))
    return None


def read_whole(stream: IO[str] | None, limit: int, what: str) -> tuple[str, str | None]:
    """A host's whole output, and None; or what was read and the sentence of the bound ``what`` broke (the rest
    left unread)."""
    if stream is None:
        return "", None
    out: list[str] = []
    kept = 0
    while chunk := stream.read(min(1 << 16, limit + 1 - kept)):
        out.append(chunk)
        kept += len(chunk)
        if kept > limit:
            return "", f"{what} was larger than {size_words(limit)} (the bound on {what})"
    return "".join(out), None


def parse_json(text: str) -> object:
    """JSON a host sent (within its bound), one host at a time; None when it is not JSON (or nests too deep, or
    holds an integer longer than Python reads)."""
    with _PARSING:
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            return None
