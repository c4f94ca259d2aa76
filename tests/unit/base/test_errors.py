"""``shown``: outside text quoted for a refusal, cut to a bound whatever its characters (core/base/errors.py)."""

import ast

from hypothesis import given
from hypothesis import strategies as st

from iosched.core.base.errors import shown


def test_a_short_text_is_quoted_whole_and_a_long_one_cut_with_its_length():
    assert shown("sda") == "'sda'"
    assert shown("x" * 41) == f"'{'x' * 40}'… (41 characters)"


def test_a_text_shown_as_more_than_it_holds_is_cut_to_the_bound():
    astral = "\U000e0001" * 40  # 40 characters, each shown as ten
    escaped = r"\U000e0001"
    assert shown(astral) == "'" + escaped * 4 + "'… (40 characters)"  # 40 between the quotes, not 400


@given(st.text(max_size=200), st.integers(1, 80))
def test_whatever_the_text_what_is_shown_stays_within_its_bound(text: str, limit: int):
    said = shown(text, limit)
    cut = f"… ({len(text)} characters)"
    head = said.removesuffix(cut) if said.endswith(cut) else said
    assert len(head) <= limit + 2  # the quoted part, quotes included
    start = ast.literal_eval(head)
    assert text.startswith(start) and (head == said) == (start == text)
