"""Checking documents against the committed JSON Schema (docs/schema/), for the unit and the real schema tests."""

from __future__ import annotations

import json
from pathlib import Path

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

REPO = Path(__file__).resolve().parent.parent
SCHEMA_DIR = REPO / "docs/schema"
SAVED = REPO / "tests/data/saved"


def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads((SCHEMA_DIR / name).read_text()))


def problems(name: str, doc: object) -> list[str]:
    """What is wrong with ``doc`` under the committed schema ``name``, as readable lines (empty: valid)."""
    out = []
    for e in validator(name).iter_errors(doc):
        # Under anyOf (compare or alternate, a job of either kind) the deepest error says what is wrong.
        e = best_match([e, *e.context]) if e.context else e
        out.append(f"{e.json_path}: {e.message[:300]}")
    return out


def valid(name: str, doc: object) -> None:
    assert not problems(name, doc), problems(name, doc)
