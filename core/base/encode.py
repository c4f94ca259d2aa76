"""Declared document types turned into JSON, the writer's half of core/base/decode.py: ``encode(decode(T, x)) == x``
for every document iosched writes.

``encode(obj)`` takes a frozen dataclass (or a list, tuple, map or scalar of them) and returns what ``json.dump``
writes: a dataclass becomes an object whose keys are its field names, a tuple a list, a map keeps its keys in their
order, a scalar stays itself (an int read into a float field stays the int it was).

Which fields an object carries is the writers' rule, said where the type is declared:
- a field without a default is always written, and so is one with a default unless it says otherwise;
- ``field(metadata={"absent": True})``: left out while it holds its default (``finished`` before a run ends);
- ``field(metadata={"absent": rule})``: left out when ``rule(obj, outer)`` says so, ``outer`` being the objects it
  sits in, outermost first (a matrix's baseline cell carries no ratio).
Keys follow the fields' order, or a class's ``JSON_ORDER`` (a ``ClassVar`` naming every field, or a function of
``outer`` giving them) where its writers put them in another order than its declaration.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

# What a field's "absent" rule is given: the object and the objects it sits in (outermost first).
AbsentRule = Callable[[Any, tuple[Any, ...]], bool]
_Field = tuple[str, bool, object, AbsentRule | None]  # name, left out at its default, its default, its rule


def encode(obj: object) -> Any:
    """``obj`` as parsed JSON: dicts, lists and scalars only (see the module's docstring)."""
    return _encode(obj, ())


def _encode(obj: object, outer: tuple[Any, ...]) -> Any:
    if obj is None or isinstance(obj, (str, int, float)):  # bool is an int
        return obj
    if isinstance(obj, (list, tuple)):
        return [_encode(x, outer) for x in obj]
    if isinstance(obj, Mapping):
        return {k: _encode(v, outer) for k, v in obj.items()}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        inner = (*outer, obj)
        out = {}
        order = getattr(type(obj), "JSON_ORDER", None)
        for name, at_default, default, rule in _fields(type(obj), order(outer) if callable(order) else order):
            value = getattr(obj, name)
            if at_default and value == default:
                continue
            if rule is not None and rule(obj, outer):
                continue
            out[name] = _encode(value, inner)
        return out
    raise TypeError(f"no encoder for {type(obj).__name__}")


@functools.cache
def _fields(cls: type, order: tuple[str, ...] | None) -> tuple[_Field, ...]:
    """Each field of ``cls`` as it is written, in ``order`` (None: as declared)."""
    by_name = {f.name: f for f in dataclasses.fields(cls)}
    order = order or tuple(by_name)
    if sorted(order) != sorted(by_name):
        raise TypeError(f"{cls.__name__}.JSON_ORDER does not name each of its fields once")
    out = []
    for name in order:
        f = by_name[name]
        absent = f.metadata.get("absent")
        default: object = f.default
        if f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        at_default = absent is True and default is not dataclasses.MISSING
        out.append((name, at_default, default, absent if callable(absent) else None))
    return tuple(out)
