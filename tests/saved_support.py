"""Saved files for the tests of their readers: the real ones in tests/data/saved/, `iosched` called in this process,
the one-sentence refusal a hostile file must get, and the mutations that make one (tests/unit/documents/test_saved.py,
and the fleets' in tests/unit/fleet/)."""

from __future__ import annotations

import contextlib
import copy
import io
import json
from pathlib import Path

from hypothesis import strategies as st

from iosched.cli.main import main

SAVED = Path(__file__).parent / "data" / "saved"  # tests/data/saved
# Words of Python's own exceptions: a message that carries them has leaked an exception's text.
PYTHON_WORDS = ("Traceback", "Error", "indices", "attribute", "subscriptable", "unhashable", "NoneType",
                "not supported between", "JSONDecode")


def saved(kind: str) -> dict:
    return json.loads((SAVED / f"{kind}.json").read_text())


def call(*argv: str) -> tuple[int, str, str]:
    """The command in this process: its exit code, stdout and stderr (a traceback fails the test)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:  # a flag argparse refused: its one sentence, exit 2
            code = e.code if isinstance(e.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def assert_one_sentence(err: str, path: Path, kind: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"iosched: {path} is not a saved iosched {kind}"), err
    assert not any(w in err for w in PYTHON_WORDS), err


# --- mutations --------------------------------------------------------------------------------------------

HOSTILE = [None, True, False, 0, -1, -0.5, 5e-324, 1e-300, 1e15, 10**400, -(10**400), 1e9, float("nan"),
           float("inf"), float("-inf"), "", "x", "none", "4k-read", "Infinity", [], {}, [[]], {"label": "bfq"},
           ["none", "bfq"], [1, 2], "x" * 5000, 1e308]


def deep(n: int) -> list:
    out: list = []
    for _ in range(n):
        out = [out]
    return out


@st.composite
def hostile_values(draw, doc: dict):
    choice = draw(st.integers(0, 3))
    if choice == 0:
        return copy.deepcopy(draw(st.sampled_from(HOSTILE)))  # never the shared list itself
    if choice == 1:
        return deep(draw(st.integers(30, 200)))
    if choice == 2:  # a piece of the document itself, out of place
        return copy.deepcopy(draw(st.sampled_from(list(doc.values()))))
    return draw(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
                             lambda k: st.lists(k, max_size=3) | st.dictionaries(st.text(max_size=4), k, max_size=3),
                             max_leaves=6))


@st.composite
def mutate(draw, doc: dict) -> dict:
    """``doc`` with one to three changes anywhere, shallow fields more often than deep ones."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        parent, key = None, None
        node: object = doc
        while isinstance(node, (dict, list)) and node and (parent is None or draw(st.integers(0, 2)) > 0):
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            parent, key = node, draw(st.sampled_from(keys))
            node = parent[key]  # type: ignore[index]
        if parent is None:
            continue
        action = draw(st.integers(0, 9))
        if action == 0 and isinstance(parent, dict):
            del parent[key]
        elif action == 1 and isinstance(node, list) and node:
            node.append(copy.deepcopy(node[0]))  # a duplicate: two runs in one slot, two variants of one label
        elif action == 2 and isinstance(node, list):
            node.clear()
        elif action == 3 and isinstance(parent, dict):
            parent[draw(st.sampled_from(["kind", "extra", "version", "sequential", "every_s"]))] = \
                draw(hostile_values(doc))
        else:
            parent[key] = draw(hostile_values(doc))  # type: ignore[index]
    return doc
