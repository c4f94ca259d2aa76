"""The strict decoder: parsed JSON into the declared types, each form of type, the place of a fault in words,
and random JSON that comes back as a typed value or one DecodeError, never another exception."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import threading
from dataclasses import dataclass, field
from typing import Annotated, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from schema_support import SAVED

from iosched.core.base.decode import DecodeError, decode
from iosched.core.base.errors import BadInput
from iosched.core.base.schema import NON_FINITE, JsonObject, Keywords
from iosched.core.documents.document import CompareDoc, ExperimentDoc, FleetDoc, FleetMatrixDoc, MatrixDoc
from iosched.core.live.recording_lines import RecordingLine
from iosched.core.settings.journal import JournalFile


@dataclass(frozen=True, kw_only=True)
class _Part:
    n: Annotated[int, Keywords(minimum=0, maximum=10)]
    name: str = ""


@dataclass(frozen=True, kw_only=True)
class _Base:
    when: float
    parts: list[_Part] = field(default_factory=list, metadata={"item": "part"})


@dataclass(frozen=True, kw_only=True)
class _A(_Base):
    kind: Literal["a"] = "a"
    pair: tuple[int, str] | None = None
    many: tuple[float, ...] = ()
    values: dict[str, float | None] = field(default_factory=dict, metadata={"flat": True})
    by_name: dict[str, _Part] = field(default_factory=dict)
    raw: JsonObject | None = None


@dataclass(frozen=True, kw_only=True)
class _B(_Base):
    kind: Literal["b"]
    mode: Literal["x", "y"]
    version: Annotated[int, Keywords(const=2)] = 2
    tags: Annotated[list[str], Keywords(minItems=1)] = field(default_factory=lambda: ["t"])
    ratio: Annotated[float, NON_FINITE] = 0.0
    step: Annotated[float, Keywords(exclusiveMinimum=0)] = 1.0


@dataclass(frozen=True, kw_only=True)
class _Named:
    name: Annotated[str, Keywords(minLength=1)]


@dataclass(frozen=True, kw_only=True)
class _Sized:
    name: str
    size: int


_AB = _A | _B


def _fault(tp: object, value: object, where: str = "") -> DecodeError:
    with pytest.raises(DecodeError) as e:
        decode(tp, value, where)
    assert isinstance(e.value, BadInput) and "\n" not in str(e.value)
    return e.value


# --- each form of type ---------------------------------------------------------------------------------------------


def test_a_dataclass_with_inherited_and_keyword_only_fields_decodes_with_its_defaults() -> None:
    a = decode(_A, {"when": 1, "parts": [{"n": 3}], "pair": [4, "x"], "many": [1, 2.5], "values": {"k": None},
                    "by_name": {"p": {"n": 0, "name": "z"}}, "raw": {"any": [1, {"deep": None}]}})
    assert a == _A(when=1.0, parts=[_Part(n=3)], pair=(4, "x"), many=(1.0, 2.5), values={"k": None},
                   by_name={"p": _Part(n=0, name="z")}, raw={"any": [1, {"deep": None}]})
    assert isinstance(a.when, float) and isinstance(a.many[0], float) and isinstance(a.pair, tuple)
    assert decode(_A, {"when": 0}) == _A(when=0.0)


def test_a_union_is_told_apart_by_its_literal_tag_and_a_missing_tag_takes_the_default() -> None:
    assert isinstance(decode(_AB, {"kind": "b", "when": 1, "mode": "x"}), _B)
    assert isinstance(decode(_AB, {"when": 1}), _A)  # _A's kind has a default: its absence means "a"
    assert str(_fault(_AB, {"kind": "c", "when": 1})) == "kind is 'c', not a or b"
    # Told apart by the tag, the error is the tagged member's own, not the first member's.
    assert str(_fault(_AB, {"kind": "b", "when": 1, "mode": "z"})) == "mode is 'z', not x or y"


def test_a_union_without_a_tag_takes_the_first_that_fits_and_reports_the_nearest() -> None:
    either = _Sized | _Named
    assert decode(either, {"name": "n"}) == _Named(name="n")
    assert decode(either, {"name": "n", "size": 3}) == _Sized(name="n", size=3)
    assert str(_fault(either, {"name": "n", "size": "3"})) == "size is not a whole number"
    assert str(_fault(either | None, 5)) == "it is not an object or null"


def test_literal_optional_and_scalars() -> None:
    assert decode(Literal["x", 1], 1) == 1
    assert str(_fault(Literal["a", "b", "c"], "d", "status")) == "status is 'd', not a, b or c"
    assert str(_fault(Literal[1], True)) == "it is true, not 1"  # a bool is not the int 1
    assert decode(str | None, None) is None and decode(str | None, "s") == "s"
    assert str(_fault(str | None, 3)) == "it is not text or null"
    assert str(_fault(bool, 0)) == "it is not true or false"
    assert str(_fault(type(None), 0)) == "it is not null"


def test_int_float_and_bool_are_told_apart() -> None:
    assert decode(float, 3) == 3.0 and isinstance(decode(float, 3), float)  # an int is a valid float
    assert decode(int, 3) == 3
    for tp, value in ((int, 3.0), (int, True), (float, False), (float, "1"), (int, None)):
        assert _fault(tp, value).fault == "type"


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 10**400, -(10**400), 1e300, 2**64 + 1])
def test_non_finite_and_absurd_numbers_are_refused(value: float) -> None:
    assert "is not a number" in str(_fault(float, value))
    if isinstance(value, int):
        assert "of a sensible size" in str(_fault(int, value))


def test_a_statistic_may_be_what_pythons_writer_wrote() -> None:
    for value in (math.inf, -math.inf, 1e300):
        assert decode(_B, {"kind": "b", "when": 0, "mode": "x", "ratio": value}).ratio == value
    assert math.isnan(decode(_B, {"kind": "b", "when": 0, "mode": "x", "ratio": math.nan}).ratio)
    assert _fault(_B, {"kind": "b", "when": 0, "mode": "x", "ratio": "1"}).fault == "type"


def test_lists_and_tuples() -> None:
    assert decode(list[int], []) == [] and decode(tuple[str, ...], ["a", "b"]) == ("a", "b")
    assert str(_fault(list[str], ["a", 1])) == "it is not a list of text (item 2 is 1)"
    assert str(_fault(tuple[int, str], [1])) == "it is not a list of 2 items"
    assert str(_fault(tuple[int, str], [1, 2])) == "item 2 is not text"
    assert str(_fault(list[_Part], [{"n": 1}, {"n": "x"}])) == "item 2's n is not a whole number"


def test_maps_have_text_keys_and_typed_values() -> None:
    assert decode(dict[str, int], {"a": 1}) == {"a": 1}
    assert str(_fault(dict[str, int], {"a": "1"}, "the map")) == "the map's a is not a whole number"
    with pytest.raises(TypeError):
        decode(dict[int, int], {})


def test_keywords_bound_the_value() -> None:
    assert str(_fault(_Part, {"n": -1})) == "n must be at least 0, not -1"
    assert str(_fault(_Part, {"n": 11})) == "n must be at most 10, not 11"
    b = {"kind": "b", "when": 0, "mode": "x"}
    assert str(_fault(_B, {**b, "version": 3})) == "version is 3, not 2"
    assert str(_fault(_B, {**b, "tags": []})) == "tags is empty"
    assert str(_fault(_B, {**b, "step": 0})) == "step must be > 0"
    assert str(_fault(_Named, {"name": ""})) == "name is empty"


def test_json_object_is_open_but_still_json_of_sensible_numbers() -> None:
    fio = {"fio": {"says": [1, "x", None, True, 2.5]}}
    assert decode(JsonObject, fio) == fio
    assert "not one (nan)" in str(_fault(JsonObject, {"a": [math.nan]}))
    assert "no sensible size" in str(_fault(JsonObject, {"a": 10**30}))
    assert decode(JsonObject, {"uint64": 2**64 - 1})  # fio writes UINT64_MAX where it has no value
    assert str(_fault(JsonObject, [], "fio")) == "fio is not an object"


# --- strictness and the place of a fault --------------------------------------------------------------------------


def test_unknown_and_missing_keys_are_refused_and_say_which() -> None:
    e = _fault(_A, {"when": 1, "parts": [{"n": 1, "extra": 2}]})
    assert str(e) == "part 1 has a key 'extra' that no iosched writes"
    assert (e.path, e.fault, e.key) == (("parts", 0), "unknown", "extra")
    e = _fault(_A, {"parts": []})
    assert str(e) == "it has no when" and (e.path, e.fault, e.key) == ((), "missing", "when")
    assert str(_fault(_A, {"parts": []}, "the header")) == "the header has no when"


def test_the_place_is_said_in_plain_words() -> None:
    e = _fault(_A, {"when": 1, "values": {"iops": "many"}, "parts": []})
    assert str(e) == "iops is not a number or null" and e.path == ("values", "iops")  # flat: the owner's own
    doc = json.loads((SAVED / "experiment.json").read_text())
    doc["runs"][2]["metrics"]["iops"] = math.nan
    assert str(_fault(ExperimentDoc, doc)) == "run 3's iops is not a number (nan)"
    doc = json.loads((SAVED / "experiment.json").read_text())
    doc["runs"][2]["config"]["scheduler"] = 1
    assert str(_fault(ExperimentDoc, doc)) == "run 3's config.scheduler is not text"
    doc = json.loads((SAVED / "matrix.json").read_text())
    doc["order"][1] = ["4k-read", 7]
    assert str(_fault(MatrixDoc, doc)) == "order item 2 item 2 is not text"
    doc["order"][1] = ["4k-read", "none"]
    doc["variants"][1]["label"] = None
    assert str(_fault(MatrixDoc, doc)) == "variant 2's label is not text"


def test_depth_is_limited_before_anything_recurses() -> None:
    deep: object = 1
    for _ in range(10_000):
        deep = [deep]
    assert str(_fault(JsonObject, {"a": deep}, "fio")) == "fio is nested too deeply"
    assert _fault(list[object], deep).fault == "deep"
    nested = {"a": [[[1]]]}
    assert decode(JsonObject, nested, max_depth=4) == nested
    with pytest.raises(DecodeError, match="nested too deeply"):
        decode(JsonObject, nested, max_depth=3)


# --- the documents themselves -------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(SAVED.glob("*.json")), ids=lambda p: p.name)
def test_the_saved_samples_decode_as_their_types(path) -> None:
    doc = json.loads(path.read_text())
    if doc["kind"] == "fleet":  # each host's compare, as its own type
        fleet = decode(FleetDoc, doc)
        assert [h.result.runs[0].metrics["iops"] for h in fleet.hosts if h.result] == [
            h["result"]["runs"][0]["metrics"]["iops"] for h in doc["hosts"] if h["result"]]
        return
    if doc["kind"] == "fleet_matrix":  # each job's fleet, as its own type
        matrix = decode(FleetMatrixDoc, doc)
        assert [f.job for f in matrix.fleets] == matrix.jobs and all(isinstance(f, FleetDoc) for f in matrix.fleets)
        return
    typed = decode(MatrixDoc if doc.get("kind") == "matrix" else ExperimentDoc, doc)
    assert len(typed.runs) == len(doc["runs"]) and typed.variants[0].label == doc["variants"][0]["label"]
    if path.name == "experiment.json":
        assert isinstance(typed, CompareDoc) and typed.runs[0].metrics["iops"] == doc["runs"][0]["metrics"]["iops"]


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
                     lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                     max_leaves=25)


def _near(doc: dict) -> st.SearchStrategy[object]:
    """``doc`` with one of its keys given a random value: mostly well-formed, wrong in one place."""
    return st.sampled_from(sorted(doc)).flatmap(lambda k: _json.map(lambda v: {**doc, k: v}))


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([ExperimentDoc, MatrixDoc, JournalFile, RecordingLine]),
       _json | _near(json.loads((SAVED / "experiment.json").read_text())))
def test_random_json_is_a_typed_value_or_one_decode_error(tp: object, value: object) -> None:
    try:
        decode(tp, value)
    except DecodeError as e:
        assert str(e) and "\n" not in str(e) and "Error" not in str(e)



def _read_at_once(tp: type, value: object, threads: int) -> list[BaseException]:
    """``value`` read as ``tp`` by ``threads`` threads let go together; the faults any of them met."""
    start = threading.Barrier(threads)
    faults: list[BaseException] = []

    def read() -> None:
        start.wait()
        try:
            decode(tp, value)
        except BaseException as e:  # any fault at all is the defect
            faults.append(e)

    running = [threading.Thread(target=read) for _ in range(threads)]
    for t in running:
        t.start()
    for t in running:
        t.join()
    return faults


def test_threads_reading_a_type_for_the_first_time_at_once_each_see_all_its_fields() -> None:
    """A fleet's hosts are read back in threads of their own: one must never take another's half-made readers
    (a compare read as if it had no runs, a TypeError instead of the document)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can, to open the window wide
    try:
        for round_ in range(20):
            inner = dataclasses.make_dataclass(f"Inner{round_}", [("x", int)], frozen=True)
            fields = [(f"f{i}", inner if i % 2 else list[int]) for i in range(40)]
            outer = dataclasses.make_dataclass(f"Outer{round_}", fields, frozen=True, kw_only=True)
            assert _read_at_once(outer, {f"f{i}": ({"x": i} if i % 2 else [i]) for i in range(40)}, 6) == []
    finally:
        sys.setswitchinterval(old)
