"""The process a user's regular expressions run in (core/experiment/pattern_search.py starts it and kills it at its
deadline): Python's `re` cannot be stopped from outside once a pattern backtracks without end.

Run as a script, ``python -I -S pattern_child.py``: the standard library alone, so it starts in about 20 ms and
nothing of the user's environment reaches it. It reads one JSON object from stdin, ``{"patterns": [...], "texts":
[...]}``, and for each pattern in turn writes one JSON line: the pattern's index and, for each text, the text of its
last match (its one group, or the whole match; cut past ``MAX_TEXT`` characters) or null where it has none. A
pattern's line is written as soon as it is done, so the parent knows which one its deadline stopped.
"""

from __future__ import annotations

import json
import re
import sys

MAX_TEXT = 400  # no figure is written with more characters; one past it says "longer"


def last_match_text(pattern: re.Pattern[str], text: str) -> str | None:
    """The last match's group (or the whole match) in ``text``, cut to MAX_TEXT + 1 characters; None: no match."""
    found = None
    for found in pattern.finditer(text):  # noqa: B007 - the loop keeps the last match
        pass
    if found is None:
        return None
    got = found.group(1) if pattern.groups else found.group(0)
    return (got or "")[: MAX_TEXT + 1]


def main() -> None:
    job = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    texts = job["texts"]
    for i, source in enumerate(job["patterns"]):
        regex = re.compile(source, re.MULTILINE)
        line = json.dumps([i, [last_match_text(regex, t) for t in texts]])  # ASCII: escapes whatever it holds
        sys.stdout.buffer.write(line.encode("ascii") + b"\n")
        sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
