"""JSON Schema (draft 2020-12) made from declared types, so the published schema of a file cannot drift from the
code that declares it.

A document is a frozen dataclass whose field names are its JSON keys. A field without a default is required; a
field with one may be left out (the default is what its absence means). Each dataclass becomes a closed object
(``additionalProperties: false``) under ``$defs``; a free-form JSON object (fio's own output) is ``JsonObject``.
``Annotated[T, Keywords(minimum=0)]`` adds schema keywords to ``T`` (a bound, a ``const``);
``field(metadata={"doc": ...})`` gives a field its description, a class's docstring describes the class.
core/base/decode.py reads documents back into these types.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from iosched.core.base.figures import FIGURE

DRAFT = "https://json-schema.org/draft/2020-12/schema"

class Keywords:
    """Schema keywords for ``Annotated[T, Keywords(...)]`` (hashable, as typing needs its metadata to be)."""

    def __init__(self, **keywords: object) -> None:
        self.items = tuple(keywords.items())

    def __hash__(self) -> int:
        return hash(tuple((k, repr(v)) for k, v in self.items))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Keywords) and self.items == other.items


class _NonFinite:
    """The mark of ``Annotated[float, NON_FINITE]``: a statistic Python's JSON writer may have written as NaN or
    Infinity (a ratio of extreme values, a mean of nothing). JSON Schema cannot say so; the decoder
    (core/base/decode.py) takes them there and nowhere else."""

    def __repr__(self) -> str:
        return "NON_FINITE"


NON_FINITE = _NonFinite()
JsonObject = dict[str, object]  # any JSON object: its keys are not ours to declare
Schema = dict[str, Any]  # a JSON Schema, or a part of one
_SIMPLE: dict[object, str] = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}


def json_schema(tp: object, title: str, description: str = "") -> Schema:
    """The schema of one document type (a dataclass, or a union of them) with its nested types under $defs."""
    defs: dict[str, tuple[type, Schema]] = {}  # name -> (the type, its schema)
    body = _schema(tp, defs)
    out: dict[str, Any] = {"$schema": DRAFT, "title": title}
    if description:
        out["description"] = description
    out.update(body)
    if defs:
        out["$defs"] = {name: schema for name, (_cls, schema) in sorted(defs.items())}
    return out


def _schema(tp: object, defs: dict[str, tuple[type, Schema]]) -> Schema:
    origin, args = get_origin(tp), get_args(tp)
    if origin is typing.Annotated:
        out = dict(_schema(args[0], defs))
        for extra in args[1:]:
            if isinstance(extra, Keywords):
                out.update(extra.items)
            elif extra is FIGURE:
                out.update(FIGURE.schema)
        return out
    if tp is object or tp is Any:
        return {}
    if tp in _SIMPLE:
        return {"type": _SIMPLE[tp]}
    if origin is Literal:
        return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
    if origin in (Union, types.UnionType):
        members = [_schema(a, defs) for a in args]
        if all(list(m) == ["type"] for m in members):  # int | None: one "type" list reads better than anyOf
            return {"type": [m["type"] for m in members]}
        return {"anyOf": members}
    if origin is list:
        return {"type": "array", "items": _schema(args[0], defs)}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _schema(args[0], defs)}
        return {"type": "array", "prefixItems": [_schema(a, defs) for a in args], "items": False,
                "minItems": len(args), "maxItems": len(args)}
    if origin is dict:
        if args[0] is not str:
            raise TypeError(f"a JSON object's keys are text, not {args[0]!r}")
        values = _schema(args[1], defs)
        return {"type": "object", **({"additionalProperties": values} if values else {})}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _ref(tp, defs)
    raise TypeError(f"no JSON Schema for {tp!r}")


def _ref(cls: type, defs: dict[str, tuple[type, Schema]]) -> Schema:
    name = cls.__name__
    ref = {"$ref": f"#/$defs/{name}"}
    if name in defs:
        if defs[name][0] is not cls:
            raise TypeError(f"two document types are named {name}")
        return ref
    out: dict[str, Any] = {"type": "object"}
    defs[name] = (cls, out)  # taken before the fields are read: a type may hold itself
    hints = get_type_hints(cls, include_extras=True)
    props: dict[str, Schema] = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):
        s = _schema(hints[f.name], defs)
        if f.metadata.get("doc"):
            s = {**s, "description": f.metadata["doc"]}
        props[f.name] = s
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    doc = (cls.__doc__ or "").strip()
    if doc and not doc.startswith(f"{name}("):  # a dataclass without a docstring gets its signature
        out["description"] = " ".join(doc.split())
    out.update(properties=props, required=required, additionalProperties=False)
    return ref
