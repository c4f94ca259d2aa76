"""The encoder, the decoder's inverse: every file iosched saved comes back key for key, in its order, from its
declared type; the writers' rules (a default left out, a field left out by its owner's state, another key order)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest
from schema_support import SAVED

from iosched.core.base.decode import decode
from iosched.core.base.encode import encode
from iosched.core.documents.document import ExperimentDoc, FleetDoc, FleetMatrixDoc, MatrixDoc

# Saved by an iosched before 0.1.0's fleet matrix wrote its `metric` (null when none was given): it reads, but 0.1.0
# writes that key back.
OLDER = {"fleet_matrix.json"}
FILES = [p for p in sorted(SAVED.glob("*.json")) + sorted((SAVED / "0.1.0").glob("*.json")) if p.name not in OLDER]


def _type(doc: dict) -> object:
    return {"matrix": MatrixDoc, "fleet": FleetDoc, "fleet_matrix": FleetMatrixDoc}.get(doc.get("kind"), ExperimentDoc)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_saved_file_encodes_back_to_itself_key_for_key_in_order(path: Path) -> None:
    x = json.loads(path.read_text())
    again = encode(decode(_type(x), x, max_depth=64))
    assert again == x
    assert json.dumps(again) == json.dumps(x)  # the same keys in the same order, an int still an int


def test_a_saved_file_of_an_older_fleet_matrix_gains_only_what_today_writes() -> None:
    x = json.loads((SAVED / "0.1.0" / "fleet_matrix.json").read_text())
    assert encode(decode(FleetMatrixDoc, x, max_depth=64)) == {**x, "metric": None}


def _when_empty(part: _Part, outer: tuple[Any, ...]) -> bool:
    return bool(outer) and not outer[-1].parts_shown


@dataclass(frozen=True, kw_only=True)
class _Part:
    n: int
    note: str | None = field(default=None, metadata={"absent": _when_empty})


@dataclass(frozen=True, kw_only=True)
class _Whole:
    parts_shown: bool = True
    parts: list[_Part] = field(default_factory=list)
    pair: tuple[float, str] = (1.5, "x")
    finished: float | None = field(default=None, metadata={"absent": True})
    counts: dict[str, int] = field(default_factory=dict)

    JSON_ORDER: ClassVar[tuple[str, ...]] = ("counts", "pair", "parts", "finished", "parts_shown")


def test_defaults_are_written_unless_marked_and_a_rule_sees_the_owner() -> None:
    whole = _Whole(parts=[_Part(n=1)], counts={"b": 2, "a": 1})
    out = encode(whole)
    assert list(out) == ["counts", "pair", "parts", "parts_shown"]  # JSON_ORDER; finished left out at None
    assert out == {"counts": {"b": 2, "a": 1}, "pair": [1.5, "x"], "parts": [{"n": 1, "note": None}],
                   "parts_shown": True}
    assert list(out["counts"]) == ["b", "a"]  # a map keeps its order
    assert encode(_Whole(parts_shown=False, parts=[_Part(n=1)], finished=2.0))["parts"] == [{"n": 1}]
    assert encode(_Whole(finished=2.0))["finished"] == 2.0


def test_an_order_that_misses_a_field_or_a_value_of_no_json_is_an_error() -> None:
    @dataclass(frozen=True)
    class Short:
        a: int
        b: int
        JSON_ORDER: ClassVar[tuple[str, ...]] = ("a",)

    with pytest.raises(TypeError):
        encode(Short(1, 2))
    with pytest.raises(TypeError):
        encode({"x": object()})
