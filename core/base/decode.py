"""Parsed JSON turned into the declared document types, strictly: the reader's half of core/base/schema.py.

``decode(tp, value, where)`` takes what ``json.loads`` gave and returns an instance of ``tp``, built of the same
declarations the schema is made from: frozen dataclasses (keyword-only and inherited fields alike), unions of
them (told apart by a field every member declares as a ``Literal``, such as ``kind``; else the first that
fits), ``Literal``, optional values, ``list``, ``tuple`` (fixed and variadic), ``dict[str, T]``,
``Annotated[T, Keywords(...)]`` bounds and ``JsonObject``, an object whose keys are not ours (fio's output).

It holds to what the schema says and to what JSON can carry safely: an object has no key its type does not
declare, a required field is there, a bool is not a number, an int is a float but a float is not an int, and
no number is NaN, infinite or outside a 64-bit counter's range (``Annotated[float, NON_FINITE]`` marks a
statistic that Python's writer may have written as NaN; ``Annotated[float, FIGURE]`` a figure, held to the range
of core/base/figures.py). Nesting deeper than ``max_depth`` is refused before anything recurses into it.

Anything else is one ``DecodeError`` (a BadInput) whose message names the place in plain words: "run 3's
start is not a number", "variant 2 has no label", "notes is not a list of text". A list field names its
items with ``field(metadata={"item": "run"})`` (else "order item 3"); a map field marked
``metadata={"flat": True}`` names its entries as its owner's own ("run 3's iops", not "run 3's metrics.iops").
The error also carries the JSON path and the kind of fault, for a reader that words its messages itself.

Each type is made once into a reader (a closure, cached), and the place of a fault is gathered only on the way
out of one: a saved matrix is read whole about as fast as the hand checks this replaced read part of it.
One module (~500 lines): a form of type, its reader and the words of its faults change together.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints, overload

from iosched.core.base.errors import BadInput
from iosched.core.base.figures import FIGURE, figure_fault
from iosched.core.base.schema import NON_FINITE, Keywords

MAX_DEPTH = 32  # objects and lists inside each other; fio's own JSON inside a saved run is about 10 deep
LIMIT = 2**64  # no figure a document holds is beyond a 64-bit counter, a byte count included
_T = TypeVar("_T")
_NONE = type(None)
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

# One step down from the value above, kept only on the way out of a failure: a field or map key (a str) or a list
# index (an int), and what the field's metadata says of the values under it: its items' name ("run": "run 3" for
# the list's third item), and whether its entries are named as its owner's own ("run 3's iops").
_Step = tuple[str | int, str | None, bool]


def where_words(where: str, steps: list[_Step]) -> str:
    """The place of a value in words: "run 3's metrics.iops", "order item 2", or ``where`` (or "it") for the top."""
    texts = [where]  # texts[i]: the place after i steps
    named = [True]  # whether that place is a thing of its own ("run 3", the top): its parts follow with "'s"
    for n, step in enumerate(steps, 1):
        key = step[0]
        above = steps[n - 2] if n >= 2 else None
        if isinstance(key, int):
            if above is not None and above[1] is not None:  # "run 3" stands for "runs item 3"
                owner = texts[n - 2]
                texts.append(f"{owner}'s {above[1]} {key + 1}" if owner else f"{above[1]} {key + 1}")
            else:
                owner = texts[n - 1]
                texts.append(f"{owner} item {key + 1}" if owner else f"item {key + 1}")
            named.append(True)
            continue
        at = n - 2 if above is not None and above[2] else n - 1  # a flat entry hangs from the map's owner
        owner = texts[at]
        texts.append(key if not owner else f"{owner}'s {key}" if named[at] else f"{owner}.{key}")
        named.append(False)
    return texts[-1] or "it"


class _Fail(Exception):
    """Raised inside the decoder; each container it passes on the way out adds its step (innermost first), and
    ``decode`` turns it into a DecodeError with the words of its place."""

    def __init__(self, why: str, fault: Fault, key: str | None = None, steps: list[_Step] | None = None) -> None:
        self.why, self.fault, self.key = why, fault, key
        self.steps: list[_Step] = steps or []


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


# --- decoding: each type made once into a reader ------------------------------------------------------------------

# A reader takes a value and the nesting still allowed below it (``room``), and returns the decoded value.
_Reader = Callable[[Any, int], Any]


@overload
def decode(tp: type[_T], value: object, where: str = "", max_depth: int = MAX_DEPTH) -> _T: ...
@overload
def decode(tp: object, value: object, where: str = "", max_depth: int = MAX_DEPTH) -> Any: ...


def decode(tp: object, value: object, where: str = "", max_depth: int = MAX_DEPTH) -> Any:
    """``value`` (parsed JSON) as a ``tp``; DecodeError naming the place otherwise. ``where`` names the top value
    in messages ("the header"); empty, the top's fields are named alone ("runs is not a list") and the top
    itself is "it". Objects and lists nest at most ``max_depth`` deep (the top one is 1)."""
    try:
        return _reader(tp)(value, max_depth)
    except _Fail as e:
        steps = e.steps[::-1]
        raise DecodeError(f"{where_words(where, steps)} {e.why}", tuple(k for k, _, _ in steps), e.fault,
                          e.key) from None


@functools.cache
def _reader(tp: object) -> _Reader:
    """The reader of ``tp``, made once per type (a dataclass's fields are made on its first use: a type may
    hold itself)."""
    origin, args = get_origin(tp), get_args(tp)
    if origin is typing.Annotated:
        return _annotated(args[0], args[1:])
    if tp in _SCALARS:
        return _SCALARS[tp]
    if origin is Literal:
        return _literal(tp, args)
    if _is_union(tp):
        return _union(args)
    if origin is list or origin is tuple:
        return _sequence(tp, args)
    if origin is dict:
        if args[0] is not str:
            raise TypeError(f"a JSON object's keys are text, not {args[0]!r}")
        return _any_object if args[1] is object else _map(_reader(args[1]))
    if _is_class(tp):
        assert isinstance(tp, type)
        return _dataclass(tp)
    if tp is object or tp is Any:
        return _any_json
    raise TypeError(f"no decoder for {tp!r}")


def _text(v: Any, room: int) -> str:
    if isinstance(v, str):
        return v
    raise _Fail("is not text", "type")


def _whole(v: Any, room: int) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise _Fail("is not a whole number", "type")
    if not -LIMIT <= v <= LIMIT:
        raise _Fail(f"is not a number of a sensible size ({brief(v)})", "bound")
    return v


def _float(v: Any, room: int) -> float:
    if isinstance(v, float):
        if not math.isfinite(v):
            raise _Fail(f"is not a number ({brief(v)})", "type")
    elif not isinstance(v, int) or isinstance(v, bool):
        raise _Fail("is not a number", "type")
    if not -LIMIT <= v <= LIMIT:  # compared exactly: 10**400 never becomes a float
        raise _Fail(f"is not a number of a sensible size ({brief(v)})", "bound")
    return float(v)


def _bool(v: Any, room: int) -> bool:
    if isinstance(v, bool):
        return v
    raise _Fail("is not true or false", "type")


def _null(v: Any, room: int) -> None:
    if v is not None:
        raise _Fail("is not null", "type")


_SCALARS: dict[object, _Reader] = {str: _text, int: _whole, float: _float, bool: _bool, _NONE: _null}


def _literal(tp: object, values: tuple[Any, ...]) -> _Reader:
    def read(v: Any, room: int) -> Any:
        for a in values:
            if type(v) is type(a) and v == a:  # a bool is not the int 1
                return v
        raise _Fail(f"is {brief(v)}, not {_noun(tp)}", "type")
    return read


def _annotated(inner: object, extras: tuple[object, ...]) -> _Reader:
    if NON_FINITE in extras:
        def statistic(v: Any, room: int) -> float:
            if isinstance(v, float) or (isinstance(v, int) and not isinstance(v, bool) and abs(v) <= LIMIT):
                return float(v)
            raise _Fail(f"is not {_noun(inner)}", "type")
        return statistic
    if FIGURE in extras:
        def figure(v: Any, room: int) -> float:
            why = figure_fault(v)
            if why is not None:
                raise _Fail(why, "bound" if "range" in why else "type")
            return float(v)
        return figure
    read_inner = _reader(inner)
    checks = [_bound(name, value) for k in extras if isinstance(k, Keywords) for name, value in k.items]

    def read(v: Any, room: int) -> Any:
        out = read_inner(v, room)
        for check in checks:
            check(v)
        return out
    return read


def _bound(name: str, bound: Any) -> Callable[[Any], None]:
    """The check of one schema keyword."""
    def fail(why: str) -> None:
        raise _Fail(why, "bound")

    checks: dict[str, Callable[[Any], None]] = {
        "minimum": lambda v: None if v >= bound else fail(f"must be at least {bound}, not {brief(v)}"),
        "maximum": lambda v: None if v <= bound else fail(f"must be at most {bound}, not {brief(v)}"),
        "exclusiveMinimum": lambda v: None if v > bound else fail(f"must be > {bound}"),
        "exclusiveMaximum": lambda v: None if v < bound else fail(f"must be < {bound}"),
        "const": lambda v: None if type(v) is type(bound) and v == bound else fail(f"is {brief(v)}, not {bound}"),
        "minItems": lambda v: None if len(v) >= bound else fail(
            "is empty" if bound == 1 else f"has fewer than {bound} items"),
        "maxItems": lambda v: None if len(v) <= bound else fail(f"has more than {bound} items"),
    }
    checks["minLength"], checks["maxLength"] = checks["minItems"], checks["maxItems"]
    if name not in checks:
        raise TypeError(f"the decoder cannot hold a value to {name}")
    return checks[name]


def _sequence(tp: object, args: tuple[Any, ...]) -> _Reader:
    noun = _noun(tp)
    if get_origin(tp) is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        readers = [_reader(a) for a in args]

        def fixed(v: Any, room: int) -> tuple[Any, ...]:
            if not isinstance(v, list) or len(v) != len(readers):
                raise _Fail(f"is not {noun}", "type")
            if room < 1:
                raise _Fail("is nested too deeply", "deep")
            out = []
            for i, (read_item, x) in enumerate(zip(readers, v)):
                try:
                    out.append(read_item(x, room - 1))
                except _Fail as e:
                    e.steps.append((i, None, False))
                    raise
            return tuple(out)
        return fixed
    read_item = _reader(args[0])
    scalar = _unwrap(args[0]) in _SCALAR_PLURAL  # a wrong item is said of the list: "notes is not a list of text"
    as_tuple = get_origin(tp) is tuple

    def variadic(v: Any, room: int) -> Any:
        if not isinstance(v, list):
            raise _Fail(f"is not {noun}", "type")
        if room < 1:
            raise _Fail("is nested too deeply", "deep")
        out = []
        for i, x in enumerate(v):
            try:
                out.append(read_item(x, room - 1))
            except _Fail as e:
                if scalar and e.fault == "type":
                    raise _Fail(f"is not {noun} (item {i + 1} is {brief(x)})", "type") from None
                e.steps.append((i, None, False))
                raise
        return tuple(out) if as_tuple else out
    return variadic


def _map(read_value: _Reader) -> _Reader:
    def read(v: Any, room: int) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise _Fail("is not an object", "type")
        if room < 1:
            raise _Fail("is nested too deeply", "deep")
        out = {}
        for k, x in v.items():
            try:
                out[k] = read_value(x, room - 1)
            except _Fail as e:
                e.steps.append((k, None, False))
                raise
        return out
    return read


def _any_object(v: Any, room: int) -> dict[str, Any]:
    """JsonObject: any JSON under keys that are not ours (fio's own output)."""
    if not isinstance(v, dict):
        raise _Fail("is not an object", "type")
    _any_json(v, room)
    return v


def _any_json(v: Any, room: int) -> Any:
    """Any JSON value within the depth limit, every number finite and of a sensible size, a float as an int (a
    1e308 in fio's histogram is no count; no recursion: a hostile file may nest as deep as the JSON reader lets
    it)."""
    stack: list[tuple[object, int]] = [(v, room)]
    while stack:
        x, r = stack.pop()
        if isinstance(x, (dict, list)):
            if r < 1:
                raise _Fail("is nested too deeply", "deep")
            stack += [(y, r - 1) for y in (x.values() if isinstance(x, dict) else x)]
        elif isinstance(x, float) and not math.isfinite(x):
            raise _Fail(f"holds a number that is not one ({brief(x)})", "type")
        elif isinstance(x, (int, float)) and not isinstance(x, bool) and not -LIMIT <= x <= LIMIT:
            raise _Fail(f"holds a number of no sensible size ({brief(x)})", "bound")
        elif not isinstance(x, (str, int, float, bool)) and x is not None:
            raise _Fail("holds something that is not JSON", "type")
    return v


def _dataclass(cls: type) -> _Reader:
    plan = _class(cls)
    # The fields' readers, made on first use and set whole in one step: threads read documents at once (a fleet's
    # hosts), and one must never see another's half-made list (it read a compare as if it had no runs).
    made: tuple[tuple[str, _Reader, bool, _Step], ...] | None = None

    def read(v: Any, room: int) -> Any:
        nonlocal made
        if not isinstance(v, dict):
            raise _Fail("is not an object", "type")
        if room < 1:
            raise _Fail("is nested too deeply", "deep")
        if made is None:
            made = tuple((f.name, _reader(f.tp), f.required, (f.name, f.noun, f.flat)) for f in plan.fields)
        if not plan.names.issuperset(v):
            k = next(k for k in v if k not in plan.names)
            shown = brief(k) if isinstance(k, str) else "that is not text"
            raise _Fail(f"has a key {shown} that no iosched writes", "unknown", str(k))
        kwargs = {}
        for name, read_field, required, step in made:
            if name in v:
                try:
                    kwargs[name] = read_field(v[name], room - 1)
                except _Fail as e:
                    e.steps.append(step)
                    raise
            elif required:
                raise _Fail(f"has no {name}", "missing", name)
        return cls(**kwargs)
    return read


def _union(members: tuple[object, ...]) -> _Reader:
    noun = _nouns(members)
    # For each kind of parsed JSON, the members that may take it, in declared order.
    by_kind: dict[type, list[object]] = {}
    for m in members:
        for kind in _json_kinds(m):
            by_kind.setdefault(kind, []).append(m)
    classes = tuple(m for m in members if _is_class(m))
    readers: dict[int, _Reader] = {}  # by the member's id: made on first use (a member may hold the union)

    def read(v: Any, room: int) -> Any:
        fits = by_kind.get(type(v))
        if not fits:
            raise _Fail(f"is not {noun}", "type")
        if len(classes) > 1 and isinstance(v, dict):
            fits = [m for m in fits if not _is_class(m)] + list(_choose(classes, v))  # type: ignore[arg-type]
        first: _Fail | None = None
        for m in fits:
            read_member = readers.get(id(m))
            if read_member is None:
                read_member = readers[id(m)] = _reader(m)
            try:
                return read_member(v, room)
            except _Fail as e:
                first = first or e
        assert first is not None
        raise first
    return read


def _choose(classes: tuple[type, ...], v: dict[Any, Any]) -> list[type]:
    """The members of a union of dataclasses an object may be, best first: by its tag when they have one, else
    those whose fields it fits, else the nearest (whose error then says what is wrong)."""
    tag = _tag(classes)
    if tag is not None:
        if tag in v:
            chosen = [c for c in classes if any(type(v[tag]) is type(a) and v[tag] == a
                                                for a in get_args(_unwrap(_hint(c, tag))))]
            if not chosen:
                names = _either([str(a) for c in classes for a in get_args(_unwrap(_hint(c, tag)))])
                raise _Fail(f"is {brief(v[tag])}, not {names}", "type", steps=[(tag, None, False)])
            return chosen
        chosen = [c for c in classes if _has_default(c, tag)]
        if not chosen:
            raise _Fail(f"has no {tag}", "missing", tag)
        return chosen
    keys = set(v)

    def misfit(c: type) -> int:
        plan = _class(c)
        return len(keys - plan.names) + len(plan.required - keys)

    return sorted(classes, key=misfit)  # stable: equals keep their declared order
