"""A figure's range (core/base/figures.py): one rule, the same in the decoder, the schema and the runner."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iosched.core.base.decode import DecodeError, decode
from iosched.core.base.figures import FIGURE_MAX, FIGURE_MIN, figure_fault, is_figure
from iosched.core.documents.document import RunDoc

SCHEMA = Path(__file__).parents[3] / "docs" / "schema" / "experiment.schema.json"


@pytest.mark.parametrize("x", [0, 0.0, -0.0, 1e-12, -1e-12, 1e15, -1e15, 1, 1234.5, 10**15, 3, 0.5])
def test_figures_in_the_range(x):
    assert figure_fault(x) is None and is_figure(x)


@pytest.mark.parametrize(("x", "words"), [
    (5e-13, "is 5e-13, outside a figure's range (0, or between 1e-12 and 1e15 in size)"),
    (3e19, "is 3e+19, outside a figure's range"),
    (-1e308, "is -1e+308, outside"),
    (5e-324, "is 4.94066e-324, outside"),
    (10**400, "is 100000000000…(401 digits), outside"),
    (math.nan, "is not a number (nan)"),
    (math.inf, "is not a number (inf)"),
    (True, "is not a number"),
    ("1", "is not a number"),
])
def test_figures_outside_the_range_say_why(x, words):
    assert figure_fault(x) is not None and figure_fault(x).startswith(words)


def _run(value: object) -> dict:
    return {"index": 0, "variant": "none", "start": 0.0, "end": 1.0, "valid": True, "invalid_reason": None,
            "config": {}, "metrics": {"v": value}}


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.floats(), st.integers(), st.integers(-(10**30), 10**30), st.sampled_from(
    [0.0, -0.0, FIGURE_MIN, FIGURE_MAX, -FIGURE_MIN, -FIGURE_MAX, math.nextafter(FIGURE_MIN, 0),
     math.nextafter(FIGURE_MAX, math.inf), 5e-324, 1.7976931348623157e308, 2**64, 10**16])))
def test_the_decoder_and_the_published_schema_hold_a_figure_to_the_one_rule(x):
    """A run's figure reads back exactly when the rule takes it, and the schema says the same of its JSON."""
    ok = figure_fault(x) is None
    try:
        got = decode(RunDoc, _run(x))
    except DecodeError as e:
        assert not ok and str(e).startswith("v ")  # a flat entry named as its owner's own
    else:
        assert ok and got.metrics["v"] == x
    if isinstance(x, float) and not math.isfinite(x):
        return  # JSON has no NaN: the schema says nothing of it
    schema = json.loads(SCHEMA.read_text())
    run = {**schema["$defs"]["RunDoc"], "$defs": schema["$defs"]}
    assert jsonschema.Draft202012Validator(run).is_valid(_run(x)) == ok
