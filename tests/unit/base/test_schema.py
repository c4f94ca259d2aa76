"""The JSON Schema generator, the committed schema files made from the declared types, and the saved samples
against them (real output is validated in tests/real/test_schema_real.py)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import pytest
from jsonschema import Draft202012Validator
from schema_support import SAVED, SCHEMA_DIR, problems, valid

from iosched.core.base.decode import decode
from iosched.core.base.schema import DRAFT, JsonObject, Keywords, json_schema
from iosched.core.documents.document import SCHEMA_VERSION, published_schemas
from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.kernel.devices import list_devices

# --- the schema files are the types' -------------------------------------------------------------------------


def test_committed_schema_is_what_the_types_make() -> None:
    made = published_schemas()
    committed = {p.name for p in SCHEMA_DIR.glob("*.schema.json")}
    assert committed == set(made), "docs/schema/ is stale: run python3 docs/make_schema.py"
    for name, schema in made.items():
        assert json.loads((SCHEMA_DIR / name).read_text()) == schema, \
            f"docs/schema/{name} differs from the types: run python3 docs/make_schema.py"


@pytest.mark.parametrize("name", sorted(published_schemas()))
def test_each_schema_is_a_draft_2020_12_schema(name: str) -> None:
    schema = json.loads((SCHEMA_DIR / name).read_text())
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == DRAFT


def test_a_device_as_saved_reads_back_as_itself(tree) -> None:
    """A device is saved as ``asdict`` of what read_device gives: every key it writes is declared, in the order of
    the fields, and the declared type reads it back equal to the device read."""
    tree.add_disk("sda", "8:0", rotational=True, mq=False, scheduler="mq-deadline [bfq] none")
    tree.add_partition("sda", "sda1", "8:1")
    tree.add_disk("nvme0n1", "259:0")
    tree.write("run/udev/data/b8:0", "E:ID_MODEL=WDC\nE:ID_SERIAL_SHORT=WD-1\nE:ID_PART_TABLE_TYPE=gpt\n")
    devices = list_devices(tree.root)
    assert len(devices) == 2
    for dev in devices:
        saved = json.loads(json.dumps(dataclasses.asdict(dev)))
        assert list(saved) == [f.name for f in dataclasses.fields(DeviceDoc)]
        assert decode(DeviceDoc, saved) == dev
        assert saved["util_is_saturation"] == (dev.rotational or not dev.multi_queue)


def test_recording_version_is_the_readers() -> None:
    from iosched.core.live.recording_lines import RECORDING_VERSION
    from iosched.core.live.recording_reader import VERSION

    assert RECORDING_VERSION == VERSION


def test_the_documents_carry_the_schema_version() -> None:
    schema = published_schemas()["experiment.schema.json"]
    assert schema["$defs"]["CompareDoc"]["properties"]["version"]["const"] == SCHEMA_VERSION
    doc = json.loads((SAVED / "experiment.json").read_text())
    valid("experiment.schema.json", doc)
    assert problems("experiment.schema.json", {**doc, "version": SCHEMA_VERSION + 1})


# --- the generator ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Inner:
    """An inner part."""

    n: Annotated[int, Keywords(minimum=0)]


@dataclass(frozen=True, kw_only=True)
class _Outer:
    kind: Literal["a"]
    mode: Literal["x", "y"] = "x"
    ratio: float | None = field(metadata={"doc": "null: none"})
    flag: bool
    parts: list[_Inner]
    by_name: dict[str, _Inner | None] = field(default_factory=dict)
    pair: tuple[float, str] | None = None
    raw: JsonObject | None = None


def test_generator_maps_each_kind_of_type() -> None:
    s = json_schema(_Outer, "t")
    outer, inner = s["$defs"]["_Outer"], s["$defs"]["_Inner"]
    assert s["$ref"] == "#/$defs/_Outer" and s["title"] == "t"
    assert outer["required"] == ["kind", "ratio", "flag", "parts"] and outer["additionalProperties"] is False
    assert "description" not in outer and inner["description"] == "An inner part."
    p = outer["properties"]
    assert p["kind"] == {"const": "a"} and p["mode"] == {"enum": ["x", "y"]}
    assert p["ratio"] == {"type": ["number", "null"], "description": "null: none"}
    assert p["flag"] == {"type": "boolean"}
    assert p["parts"] == {"type": "array", "items": {"$ref": "#/$defs/_Inner"}}
    assert p["by_name"] == {"type": "object",
                            "additionalProperties": {"anyOf": [{"$ref": "#/$defs/_Inner"}, {"type": "null"}]}}
    assert p["pair"]["anyOf"][0] == {"type": "array", "prefixItems": [{"type": "number"}, {"type": "string"}],
                                     "items": False, "minItems": 2, "maxItems": 2}
    assert p["raw"] == {"type": ["object", "null"]}
    assert inner["properties"]["n"] == {"type": "integer", "minimum": 0}
    v = Draft202012Validator(s)
    assert v.is_valid({"kind": "a", "ratio": None, "flag": True, "parts": [{"n": 1}], "raw": {"any": [1]}})
    assert not v.is_valid({"kind": "a", "ratio": None, "flag": True, "parts": [{"n": 1, "extra": 0}]})
    assert not v.is_valid({"kind": "a", "ratio": None, "flag": True, "parts": [{"n": -1}]})
    assert not v.is_valid({"kind": "a", "flag": True, "parts": []})  # ratio is required, though it may be null


def test_generator_refuses_what_json_cannot_say() -> None:
    with pytest.raises(TypeError):
        json_schema(dict[int, str], "t")
    with pytest.raises(TypeError):
        json_schema(set[str], "t")
    other = dataclasses.make_dataclass("_Inner", [("m", str)])
    both = dataclasses.make_dataclass("_Both", [("a", _Inner), ("b", other)])
    with pytest.raises(TypeError, match="two document types"):
        json_schema(both, "t")


# --- the committed samples ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(SAVED.glob("*.json")), ids=lambda p: p.name)
def test_saved_samples_validate(path: Path) -> None:
    doc = json.loads(path.read_text())
    valid({"matrix": "matrix", "fleet": "fleet", "fleet_matrix": "fleet-matrix"}.get(doc["kind"], "experiment")
          + ".schema.json", doc)


@pytest.mark.parametrize("where", ["top", "run", "variant", "device", "workload"])
def test_a_key_no_type_declares_fails(where: str) -> None:
    """A writer adding a key its type lacks must fail validation (the schema is closed where the document is
    ours); fio's own output stays open."""
    doc = json.loads((SAVED / "experiment.json").read_text())
    part = {"top": doc, "run": doc["runs"][0], "variant": doc["variants"][1], "device": doc["device"],
            "workload": doc["workload"]}[where]
    part["undeclared"] = 1
    assert problems("experiment.schema.json", doc)
    del part["undeclared"]
    doc["runs"][0]["fio"]["anything fio says"] = {"deep": [1]}
    valid("experiment.schema.json", doc)


def test_a_missing_required_key_fails() -> None:
    doc = json.loads((SAVED / "matrix.json").read_text())
    del doc["runs"][0]["slot"]
    assert problems("matrix.schema.json", doc)


# --- real output ----------------------------------------------------------------------------------------------------
