"""core/statistics returns numbers and reason codes, never a sentence: every word a user reads about a judgement is
written by core/present (sentences.py), from those numbers. Each module of the package is read as source: no
f-string, and no string of words, outside a docstring or an exception a programming error raises; a reason code is a
short identifier ("few-runs:variant"), and every code a judge can return has its words."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import iosched.core.statistics as statistics
from iosched.core.present.sentences import REASONS, reason_words

CODE = re.compile(r"[a-z][a-z0-9-]*(:[a-z0-9-]+)?")  # a reason code, or a word of a few letters ("paired")


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _raised(tree: ast.AST) -> set[int]:
    """Every node inside a ``raise``: a programming error's message is for whoever reads the traceback."""
    return {id(n) for r in ast.walk(tree) if isinstance(r, ast.Raise) for n in ast.walk(r)}


def _enums() -> set[str]:
    """The values the documents' declared types name (``Literal["two groups", "outlier"]``): codes of the schema."""
    import typing

    import iosched.core.documents.document as document

    found: set[str] = set()

    def walk(tp: object) -> None:
        if typing.get_origin(tp) is typing.Literal:
            found.update(a for a in typing.get_args(tp) if isinstance(a, str))
        for a in typing.get_args(tp):
            walk(a)

    for cls in vars(document).values():
        if isinstance(cls, type) and hasattr(cls, "__dataclass_fields__"):
            for hint in typing.get_type_hints(cls).values():
                walk(hint)
    return found


ENUMS = _enums()


def sentences(path: Path) -> list[str]:
    """Where a module makes or holds words a caller may show: f-strings, and strings of more than one word (but the
    values a document's declared type names: "sequential holm", "two groups")."""
    tree = ast.parse(path.read_text())
    skip = _docstrings(tree) | _raised(tree)
    found = []
    inside_fstring = {id(n) for f in ast.walk(tree) if isinstance(f, ast.JoinedStr) for n in ast.walk(f)
                      if n is not f}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.JoinedStr):
            found.append(f"{path.name}:{node.lineno}: f-string")
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inside_fstring
              and " " in node.value.strip() and node.value not in ENUMS):
            found.append(f"{path.name}:{node.lineno}: {node.value[:40]!r}")
    return found


def test_core_statistics_holds_no_sentence():
    folder = Path(statistics.__path__[0])
    found = [s for p in sorted(folder.glob("*.py")) for s in sentences(p)]
    assert found == []


def test_the_check_sees_a_sentence():
    """It fails where it should: an f-string, a string of words returned."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d, "m.py")
        p.write_text('"""Doc."""\ndef f(x):\n    """Doc of f."""\n    if x:\n        raise ValueError(f"bad {x}")\n'
                     '    y = f"{x} runs"\n    return "no difference we could see"\n')
        assert sentences(p) == ["m.py:6: f-string", "m.py:7: 'no difference we could see'"]


def test_every_reason_code_a_judge_returns_has_its_words():
    """Every CannotJudge and NotPooled code in core/statistics is one REASONS says; a code's side is named by its
    label, and an older file's words come through as they are."""
    folder = Path(statistics.__path__[0])
    codes = set()
    for p in folder.glob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("CannotJudge", "NotPooled") and node.args):
                arg = node.args[0]
                if isinstance(arg, ast.Constant):
                    codes.add(arg.value)
                elif isinstance(arg, ast.BinOp) and isinstance(arg.left, ast.Constant):  # "few-runs:" + side
                    codes.add(arg.left.value.rstrip(":"))
    codes |= {"few-hosts", "no-estimate"}  # fleet_verdict's own
    assert codes and all(CODE.fullmatch(c) for c in codes), codes
    assert {c.partition(":")[0] for c in codes} <= set(REASONS), codes - set(REASONS)
    assert reason_words("few-runs:variant", "none", "bfq on 4k-read") == "fewer than 2 valid runs of bfq on 4k-read"
    assert reason_words("first-look", first=4) == "the first look (4 runs per cell) was not reached"
    assert reason_words("fewer than 2 valid runs of bfq") == "fewer than 2 valid runs of bfq"  # an older file's
