"""How deep a TOML text nests, found before a recursive parser sees it.

Python's tomllib reads an array or an inline table by recursion: a 40 kB file of arrays 20,000 levels deep ends in
a RecursionError, not a sentence. ``toml_nesting`` counts the brackets and braces outside strings and comments in
one pass without recursion, so a reader can refuse such a file before tomllib reads it. (JSON's reader raises
RecursionError itself, which each JSON reader catches, and core/base/decode.py bounds the depth it walks.)
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"'''|\"\"\"|[\"'#\[\]{}]")
# Where each kind of string ends (its closing quote included); each alternative starts with its own character, so
# each is read in one pass. A string left open ends the text: tomllib refuses that text anyway.
_ENDS = {
    '"': re.compile(r'(?:[^"\\\n]|\\.)*"'),
    "'": re.compile(r"[^'\n]*'"),
    '"""': re.compile(r'(?:[^"\\]|\\.|"(?!""))*"""', re.DOTALL),
    "'''": re.compile(r"(?:[^']|'(?!''))*'''"),
    "#": re.compile(r"[^\n]*"),
}


def toml_nesting(text: str) -> int:
    """The deepest nesting of arrays and inline tables in ``text`` (a table header counts as its brackets)."""
    depth = deepest = 0
    at = 0
    while (token := _TOKEN.search(text, at)) is not None:
        kind, at = token.group(), token.end()
        if kind in _ENDS:
            end = _ENDS[kind].match(text, at)
            at = end.end() if end is not None else len(text)
        elif kind in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(0, depth - 1)
    return deepest
