"""Parsed JSON turned into the declared document types, strictly: the reader's half of core/base/schema.py.

``decode(tp, value, where)`` takes what ``json.loads`` gave and returns an instance of ``tp``, built of the same
declarations the schema is made from: frozen dataclasses (keyword-only and inherited fields alike), unions of
them (told apart by a field every member declares as a ``Literal``, such as ``kind``; else the first that
fits), ``Literal``, optional values, ``list``, ``tuple`` (fixed and variadic), ``dict[str, T]``,
``Annotated[T, Keywords(...)]`` bounds and ``JsonObject``, an object whose keys are not ours (fio's output).

It holds to what the schema says and to what JSON can carry safely: an object has no key its type does not
declare, a required field is there, a bool is not a number, an int is a float but a float is not an int, and
no number is NaN, infinite or outside a 64-bit counter's range (``Annotated[float, NON_FINITE]`` marks a
statistic that Python's writer may have written as NaN). Nesting deeper than ``max_depth`` is refused before
anything recurses into it.

Anything else is one ``DecodeError`` (a BadInput) whose message names the place in plain words: "run 3's
start is not a number", "variant 2 has no label", "notes is not a list of text". A list field names its
items with ``field(metadata={"item": "run"})`` (else "order item 3"); a map field marked
``metadata={"flat": True}`` names its entries as its owner's own ("run 3's iops", not "run 3's metrics.iops").
The error also carries the JSON path and the kind of fault, for a reader that words its messages itself.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints, overload

from iosched.core.base.errors import BadInput
from iosched.core.base.schema import NON_FINITE, Keywords

MAX_DEPTH = 32  # objects and lists inside each other; fio's own JSON inside a saved run is about 10 deep
LIMIT = 2**64  # no figure a document holds is beyond a 64-bit counter, a byte count included
_T = TypeVar("_T")
_NONE = type(None)
_KEYWORDS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "const", "minItems", "maxItems",
             "minLength", "maxLength"}
Fault = Literal["type", "missing", "unknown", "bound", "deep"]


class DecodeError(BadInput):
    """A value that is not of its declared type. ``str()`` is the sentence; ``path`` the JSON path of the value
    at fault (keys and list indexes from the top), ``fault`` what kind of fault, ``key`` the key missing or
    unknown (``fault`` "missing" or "unknown")."""

    def __init__(self, message: str, path: tuple[str | int, ...], fault: Fault, key: str | None = None) -> None:
        super().__init__(message)
        self.path, self.fault, self.key = path, fault, key


def brief(value: object, limit: int = 24) -> str:
    """A JSON value as written, cut when long: 10**400 is not echoed back whole."""
    if isinstance(value, bool) or value is None:
        text = {True: "true", False: "false", None: "null"}[value]
    elif isinstance(value, str):
        text = repr(value)
    elif isinstance(value, (int, float)):
        text = str(value)  # an int from JSON has at most 4300 digits: str() cannot fail
    else:
        text = "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else "a value"
    return text if len(text) <= limit else f"{text[:limit]}…"


# --- where a value is, in words ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Step:
    """One step down from the value above: a field or map key (``key`` a str) or a list index (an int). A field's
    step carries what its metadata says of the values under it."""

    up: _Step | None
    key: str | int
    noun: str | None = None  # its items' name ("run"): "run 3" for the list's third item
    flat: bool = False  # its entries named as its owner's own: "run 3's iops"


def _json_path(step: _Step | None) -> tuple[str | int, ...]:
    out: list[str | int] = []
    while step is not None:
        out.append(step.key)
        step = step.up
    return tuple(reversed(out))


def _chain(step: _Step | None) -> list[_Step]:
    out: list[_Step] = []
    while step is not None:
        out.append(step)
        step = step.up
    return out[::-1]


def where_words(where: str, step: _Step | None) -> str:
    """The place of a value in words: "run 3's metrics.iops", "order item 2", or ``where`` (or "it") for the top."""
    texts = [where]  # texts[i]: the place after i steps
    named = [True]  # whether that place is a thing of its own ("run 3", the top): its parts follow with "'s"
    chain = _chain(step)
    for n, s in enumerate(chain, 1):
        above = chain[n - 2] if n >= 2 else None
        if isinstance(s.key, int):
            if above is not None and above.noun is not None:  # "run 3" stands for "runs item 3"
                owner = texts[n - 2]
                texts.append(f"{owner}'s {above.noun} {s.key + 1}" if owner else f"{above.noun} {s.key + 1}")
            else:
                owner = texts[n - 1]
                texts.append(f"{owner} item {s.key + 1}" if owner else f"item {s.key + 1}")
            named.append(True)
            continue
        at = n - 2 if above is not None and above.flat else n - 1  # a flat entry hangs from the map's owner
        owner = texts[at]
        texts.append(s.key if not owner else f"{owner}'s {s.key}" if named[at] else f"{owner}.{s.key}")
        named.append(False)
    return texts[-1] or "it"


class _Fail(Exception):
    """Raised inside the decoder, turned into a DecodeError with the words of its place at the top."""

    def __init__(self, step: _Step | None, why: str, fault: Fault, key: str | None = None) -> None:
        self.step, self.why, self.fault, self.key = step, why, fault, key


# --- what a type is ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Field:
    name: str
    tp: object
    required: bool
    noun: str | None
    flat: bool


@dataclass(frozen=True)
class _Class:
    fields: tuple[_Field, ...]
    names: frozenset[str]
    required: frozenset[str]


@functools.cache
def _class(cls: type) -> _Class:
    hints = get_type_hints(cls, include_extras=True)
    out = []
    for f in dataclasses.fields(cls):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out.append(_Field(f.name, hints[f.name], required, f.metadata.get("item"), bool(f.metadata.get("flat"))))
    return _Class(tuple(out), frozenset(f.name for f in out), frozenset(f.name for f in out if f.required))


def _unwrap(tp: object) -> object:
    while get_origin(tp) is typing.Annotated:
        tp = get_args(tp)[0]
    return tp


def _is_union(tp: object) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


def _is_class(tp: object) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


_SCALAR_PLURAL: dict[object, str] = {str: "text", int: "whole numbers", float: "numbers", bool: "true or false"}


def _either(words: list[str]) -> str:
    """"a, b or c"."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _nouns(members: tuple[object, ...]) -> str:
    """What a value of one of ``members`` is: "a number or null"."""
    out: list[str] = []
    for a in members:
        if _noun(a) not in out:
            out.append(_noun(a))
    return _either(out)


def _noun(tp: object) -> str:
    """What a value of ``tp`` is, for "is not ...": "text", "a list of text", "an object or null"."""
    tp = _unwrap(tp)
    origin = get_origin(tp)
    if _is_union(tp):
        return _nouns(get_args(tp))
    if origin is Literal:
        return _either([str(a) for a in get_args(tp)])
    if origin in (list, tuple):
        item = _unwrap(get_args(tp)[0]) if get_args(tp) else object
        if origin is tuple and not (len(get_args(tp)) == 2 and get_args(tp)[1] is Ellipsis):
            return f"a list of {len(get_args(tp))} items"
        return f"a list of {_SCALAR_PLURAL[item]}" if item in _SCALAR_PLURAL else "a list"
    simple: dict[object, str] = {str: "text", int: "a whole number", float: "a number", bool: "true or false",
                                 _NONE: "null"}
    return simple.get(tp, "an object" if origin is dict or _is_class(tp) else "a value")


def _json_kinds(tp: object) -> frozenset[type]:
    """The Python types of parsed JSON a value of ``tp`` may arrive as."""
    tp = _unwrap(tp)
    origin = get_origin(tp)
    if _is_union(tp):
        return frozenset().union(*(_json_kinds(a) for a in get_args(tp)))
    if origin is Literal:
        return frozenset(type(a) for a in get_args(tp))
    if origin in (list, tuple):
        return frozenset({list})
    if origin is dict or _is_class(tp):
        return frozenset({dict})
    if tp is float:
        return frozenset({int, float})
    if isinstance(tp, type) and tp in (str, int, bool, _NONE):
        return frozenset({tp})
    return frozenset({str, int, float, bool, _NONE, list, dict})  # object, Any


@functools.cache
def _tag(members: tuple[type, ...]) -> str | None:
    """The field every member declares as a Literal (``kind``, a recording line's ``t``), if there is one."""
    common = set.intersection(*(set(_class(m).names) for m in members))
    for f in _class(members[0]).fields:
        if f.name in common and all(get_origin(_unwrap(_hint(m, f.name))) is Literal for m in members):
            return f.name
    return None


def _hint(cls: type, name: str) -> object:
    return next(f.tp for f in _class(cls).fields if f.name == name)


def _has_default(cls: type, name: str) -> bool:
    return next(not f.required for f in _class(cls).fields if f.name == name)


# --- decoding ------------------------------------------------------------------------------------------------------


@overload
def decode(tp: type[_T], value: object, where: str = "", max_depth: int = MAX_DEPTH) -> _T: ...
@overload
def decode(tp: object, value: object, where: str = "", max_depth: int = MAX_DEPTH) -> Any: ...


def decode(tp: object, value: object, where: str = "", max_depth: int = MAX_DEPTH) -> Any:
    """``value`` (parsed JSON) as a ``tp``; DecodeError naming the place otherwise. ``where`` names the top value
    in messages ("the header"); empty, the top's fields are named alone ("runs is not a list") and the top
    itself is "it"."""
    try:
        return _Decoder(max_depth).value(tp, value, None, 1)
    except _Fail as e:
        place = where_words(where, e.step)
        raise DecodeError(f"{place} {e.why}", _json_path(e.step), e.fault, e.key) from None


class _Decoder:
    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth

    def value(self, tp: object, v: object, at: _Step | None, depth: int) -> Any:
        origin = get_origin(tp)
        if origin is typing.Annotated:
            inner, *extras = get_args(tp)
            if NON_FINITE in extras:
                if isinstance(v, float) or (isinstance(v, int) and not isinstance(v, bool) and abs(v) <= LIMIT):
                    return float(v)
                raise _Fail(at, f"is not {_noun(inner)}", "type")
            out = self.value(inner, v, at, depth)
            for extra in extras:
                if isinstance(extra, Keywords):
                    _bounds(extra, v, at)
            return out
        if tp is str:
            if isinstance(v, str):
                return v
            raise _Fail(at, "is not text", "type")
        if tp is float:
            return _number(v, at, float)
        if tp is int:
            return _number(v, at, int)
        if tp is bool:
            if isinstance(v, bool):
                return v
            raise _Fail(at, "is not true or false", "type")
        if tp is _NONE:
            if v is None:
                return None
            raise _Fail(at, "is not null", "type")
        if origin is Literal:
            if any(type(v) is type(a) and v == a for a in get_args(tp)):
                return v
            raise _Fail(at, f"is {brief(v)}, not {_noun(tp)}", "type")
        if _is_union(tp):
            return self.union(get_args(tp), v, at, depth)
        if depth > self.max_depth and isinstance(v, (list, dict)):
            raise _Fail(at, "is nested too deeply", "deep")
        if origin is list or origin is tuple:
            return self.sequence(tp, v, at, depth)
        if origin is dict:
            key_tp, value_tp = get_args(tp)
            if key_tp is not str:
                raise TypeError(f"a JSON object's keys are text, not {key_tp!r}")
            if not isinstance(v, dict):
                raise _Fail(at, "is not an object", "type")
            if value_tp is object:  # JsonObject: any JSON under keys that are not ours
                _any_json(v, at, depth, self.max_depth)
                return v
            return {k: self.value(value_tp, x, _Step(at, k), depth + 1) for k, x in v.items()}
        if _is_class(tp):
            assert isinstance(tp, type)
            return self.dataclass(tp, v, at, depth)
        if tp is object or tp is Any:
            _any_json(v, at, depth, self.max_depth)
            return v
        raise TypeError(f"no decoder for {tp!r}")

    def sequence(self, tp: object, v: object, at: _Step | None, depth: int) -> Any:
        args = get_args(tp)
        if not isinstance(v, list):
            raise _Fail(at, f"is not {_noun(tp)}", "type")
        if get_origin(tp) is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            if len(v) != len(args):
                raise _Fail(at, f"is not {_noun(tp)}", "type")
            return tuple(self.value(a, x, _Step(at, i), depth + 1) for i, (a, x) in enumerate(zip(args, v)))
        item = args[0]
        out = []
        for i, x in enumerate(v):
            try:
                out.append(self.value(item, x, _Step(at, i), depth + 1))
            except _Fail as e:
                if e.fault == "type" and _unwrap(item) in _SCALAR_PLURAL:  # "notes is not a list of text"
                    raise _Fail(at, f"is not {_noun(tp)} (item {i + 1} is {brief(x)})", "type") from None
                raise
        return out if get_origin(tp) is list else tuple(out)

    def dataclass(self, cls: type, v: object, at: _Step | None, depth: int) -> Any:
        if not isinstance(v, dict):
            raise _Fail(at, "is not an object", "type")
        plan = _class(cls)
        for k in v:
            if k not in plan.names:
                shown = brief(k) if isinstance(k, str) else "that is not text"
                raise _Fail(at, f"has a key {shown} that no iosched writes", "unknown", str(k))
        kwargs: dict[str, object] = {}
        for f in plan.fields:
            if f.name in v:
                kwargs[f.name] = self.value(f.tp, v[f.name], _Step(at, f.name, f.noun, f.flat), depth + 1)
            elif f.required:
                raise _Fail(at, f"has no {f.name}", "missing", f.name)
        return cls(**kwargs)

    def union(self, members: tuple[object, ...], v: object, at: _Step | None, depth: int) -> Any:
        fits = [m for m in members if type(v) in _json_kinds(m)]
        if not fits:
            raise _Fail(at, f"is not {_nouns(members)}", "type")
        classes = tuple(m for m in fits if _is_class(m))
        if len(classes) > 1 and isinstance(v, dict):
            fits = [m for m in fits if not _is_class(m)] + list(_choose(classes, v, at))  # type: ignore[arg-type]
        first: _Fail | None = None
        for m in fits:
            try:
                return self.value(m, v, at, depth)
            except _Fail as e:
                first = first or e
        assert first is not None
        raise first


def _choose(classes: tuple[type, ...], v: dict[Any, Any], at: _Step | None) -> list[type]:
    """The members of a union of dataclasses an object may be, best first: by its tag when they have one, else
    those whose fields it fits, else the nearest (whose error then says what is wrong)."""
    tag = _tag(classes)
    if tag is not None:
        if tag in v:
            chosen = [c for c in classes if any(type(v[tag]) is type(a) and v[tag] == a
                                                for a in get_args(_unwrap(_hint(c, tag))))]
            if not chosen:
                names = _either([str(a) for c in classes for a in get_args(_unwrap(_hint(c, tag)))])
                raise _Fail(_Step(at, tag), f"is {brief(v[tag])}, not {names}", "type")
            return chosen
        chosen = [c for c in classes if _has_default(c, tag)]
        if not chosen:
            raise _Fail(at, f"has no {tag}", "missing", tag)
        return chosen
    keys = set(v)

    def misfit(c: type) -> int:
        plan = _class(c)
        return len(keys - plan.names) + len(plan.required - keys)

    return sorted(classes, key=misfit)  # stable: equals keep their declared order


def _number(v: object, at: _Step | None, kind: type) -> float | int:
    if kind is int:
        if not isinstance(v, int) or isinstance(v, bool):
            raise _Fail(at, "is not a whole number", "type")
    elif not isinstance(v, (int, float)) or isinstance(v, bool):
        raise _Fail(at, "is not a number", "type")
    elif isinstance(v, float) and not math.isfinite(v):
        raise _Fail(at, f"is not a number ({brief(v)})", "type")
    if not -LIMIT <= v <= LIMIT:  # compared exactly: 10**400 never becomes a float
        raise _Fail(at, f"is not a number of a sensible size ({brief(v)})", "bound")
    return v if kind is int else float(v)


def _bounds(k: Keywords, v: Any, at: _Step | None) -> None:
    for name, given in k.items:
        bound: Any = given  # a number, or the const's value
        if name not in _KEYWORDS:
            raise TypeError(f"the decoder cannot hold a value to {name}")
        if name == "minimum" and v < bound:
            raise _Fail(at, f"must be at least {bound}, not {brief(v)}", "bound")
        if name == "maximum" and v > bound:
            raise _Fail(at, f"must be at most {bound}, not {brief(v)}", "bound")
        if name == "exclusiveMinimum" and not v > bound:
            raise _Fail(at, f"must be > {bound}", "bound")
        if name == "exclusiveMaximum" and not v < bound:
            raise _Fail(at, f"must be < {bound}", "bound")
        if name == "const" and not (type(v) is type(bound) and v == bound):
            raise _Fail(at, f"is {brief(v)}, not {bound}", "bound")
        if name in ("minItems", "minLength") and len(v) < bound:
            raise _Fail(at, "is empty" if bound == 1 else f"has fewer than {bound} items", "bound")
        if name in ("maxItems", "maxLength") and len(v) > bound:
            raise _Fail(at, f"has more than {bound} items", "bound")


def _any_json(v: object, at: _Step | None, depth: int, max_depth: int) -> None:
    """Any JSON value within the depth limit, every number finite and of a sensible size (no recursion: a
    hostile file may nest as deep as the JSON reader lets it)."""
    stack: list[tuple[object, int]] = [(v, depth)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, (dict, list)):
            if d > max_depth:
                raise _Fail(at, "is nested too deeply", "deep")
            stack += [(y, d + 1) for y in (x.values() if isinstance(x, dict) else x)]
        elif isinstance(x, float) and not math.isfinite(x):
            raise _Fail(at, f"holds a number that is not one ({brief(x)})", "type")
        elif isinstance(x, int) and not isinstance(x, bool) and not -LIMIT <= x <= LIMIT:
            raise _Fail(at, f"holds a number of no sensible size ({brief(x)})", "bound")
        elif not isinstance(x, (str, int, float, bool)) and x is not None:
            raise _Fail(at, "holds something that is not JSON", "type")
