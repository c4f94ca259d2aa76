"""How deep a TOML text nests, counted without recursion and without being fooled by strings or comments."""

from __future__ import annotations

import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosched.core.base.nesting import toml_nesting


@pytest.mark.parametrize(("text", "depth"), [
    ("a = 1", 0),
    ("a = [1, [2, [3]]]", 3),
    ('[[workload]]\njob = "x"', 2),
    ("a = {b = {c = [1]}}", 3),
    ('a = "[[[[[["', 0),
    ("a = '[[[['", 0),
    ('a = """[[[\n[[["""', 0),
    ("a = '''[[[\n[[['''", 0),
    ("a = 1 # [[[[[[[", 0),
    ('a = "\\"[[[["', 0),
    ('a = """ "" [[ """\nb = [[1]]', 2),
    ('cmd_metric = ["rate=([0-9.]+) MB/s:higher"]', 1),
])
def test_brackets_outside_strings_and_comments_count(text, depth):
    assert toml_nesting(text) == depth


def test_twenty_thousand_levels_are_counted_at_once():
    assert toml_nesting("a = " + "[" * 20_000 + "]" * 20_000) == 20_000
    assert toml_nesting("a = " + "{b = " * 20_000 + "1" + "}" * 20_000) == 20_000


def _values(depth: int) -> st.SearchStrategy[object]:
    leaf = st.integers(-5, 5) | st.text("ab[]{}#'\"\\\n", max_size=6)
    return st.recursive(leaf, lambda k: st.lists(k, max_size=3) | st.dictionaries(
        st.sampled_from("xyz"), k, max_size=2), max_leaves=depth)


def _toml(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return str(value)


def _depth(value: object) -> int:
    if isinstance(value, list | dict):
        items = value.values() if isinstance(value, dict) else value
        return 1 + max((_depth(v) for v in items), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(_values(12))
def test_the_count_is_the_depth_tomllib_reads(value):
    text = f"a = {_toml(value)}\n# [[[ a comment\nb = 'x[{{'\n"
    assert tomllib.loads(text)["a"] == value
    assert toml_nesting(text) == _depth(value)
