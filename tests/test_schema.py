"""docs/schema/: made from the declared types, committed as made, and real output validates against it.

The validator is `jsonschema` (draft 2020-12). Every object of ours is closed (additionalProperties: false),
so a key a writer emits that its type does not declare fails here.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from iosched.core.base.schema import DRAFT, JsonObject, Keywords, json_schema
from iosched.core.experiment.document import SCHEMA_VERSION, published_schemas
from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.kernel.devices import BlockDevice

from conftest import attach_loop, detach_loop, run_cli

REPO = Path(__file__).resolve().parents[1]
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


def test_device_doc_declares_every_field_of_a_block_device() -> None:
    """A device is saved as BlockDevice.to_json(): a new field there must be declared here too."""
    ours = {f.name: f for f in dataclasses.fields(DeviceDoc)}
    theirs = {f.name: f for f in dataclasses.fields(BlockDevice)}
    assert set(ours) == set(theirs) | {"util_is_saturation"}
    required = {n for n, f in theirs.items() if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING}
    assert required == {n for n, f in ours.items() if f.default is dataclasses.MISSING
                        and f.default_factory is dataclasses.MISSING}


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
    valid("matrix.schema.json" if doc.get("kind") == "matrix" else "experiment.schema.json", doc)


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


@pytest.mark.real
def test_compare_json_and_its_save_validate(loopdev, tmp_path: Path) -> None:
    save = tmp_path / "exp.json"
    r = run_cli("compare", loopdev.name, "--schedulers", "none,mq-deadline:read_expire=100", "--job",
                "randread-q16t2", "--runtime", "0.5", "--repeat", "2", "--settle", "0", "--size", "16M",
                "--json", "--save", str(save), timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["comparisons"] and out["judgement"]["summaries"] and out["runs"][0]["fio"]
    valid("experiment.schema.json", out)
    valid("experiment.schema.json", json.loads(save.read_text()))
    rep = run_cli("report", str(save), "--json")
    assert rep.returncode == 0, rep.stderr
    valid("experiment.schema.json", json.loads(rep.stdout))


@pytest.mark.real
def test_compare_of_a_command_validates(loopdev) -> None:
    r = run_cli("compare", loopdev.name, "--schedulers", "none,mq-deadline", "--cmd", "true", "--repeat", "2",
                "--settle", "0", "--json", timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["workload"]["cmd"] == "true" and out["workload"]["job"] is None
    valid("experiment.schema.json", out)


@pytest.mark.real
def test_live_alternation_validates(loopdev) -> None:
    r = run_cli("compare", loopdev.name, "--schedulers", "none,mq-deadline", "--job", "randread-q16t2",
                "--alternate", "1.6", "--duration", "12.8", "--size", "16M", "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["kind"] == "alternate" and len(out["runs"]) == 8
    valid("experiment.schema.json", out)


@pytest.mark.real
def test_saved_matrix_and_its_json_validate(loopdev, tmp_path: Path) -> None:
    save = tmp_path / "matrix.json"
    r = run_cli("compare", loopdev.name, "--schedulers", "none,mq-deadline", "--jobs", "4k-read,4k-randread",
                "--runtime", "0.5", "--repeat", "2", "--settle", "0", "--size", "16M", "--json", "--save", str(save),
                timeout=180)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["kind"] == "matrix" and len(out["runs"]) == 8 and out["judgement"]["cells"]
    valid("matrix.schema.json", out)
    valid("matrix.schema.json", json.loads(save.read_text()))


@pytest.mark.real
def test_recording_lines_validate(loopdev, tmp_path: Path) -> None:
    """Every kind of line: the header, samples, a setting changed while recording, a device attached."""
    rec = tmp_path / "rec.jsonl"
    child = subprocess.Popen([sys.executable, "-m", "iosched.cli", "record", str(rec), "-i", "0.2",
                              "--duration", "5"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    attached = None
    try:
        for _ in range(100):  # the header is written before the first sample
            if rec.exists() and rec.stat().st_size:
                break
            time.sleep(0.05)
        assert run_cli("set", loopdev.name, "mq-deadline").returncode == 0
        (tmp_path / "second").mkdir()
        attached = attach_loop(tmp_path / "second", "64M")
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if attached is not None:
            detach_loop(attached)
    assert child.returncode == 0, err
    lines = [json.loads(line) for line in rec.read_text().splitlines()]
    assert {line["t"] for line in lines} == {"header", "s", "e", "dev"}
    for n, line in enumerate(lines, 1):
        assert not problems("recording-line.schema.json", line), (n, problems("recording-line.schema.json", line))
    assert run_cli("restore").returncode == 0


@pytest.mark.real
def test_journal_validates(loopdev, private_journal: Path) -> None:
    assert run_cli("set", loopdev.name, "mq-deadline").returncode == 0
    r = run_cli("tune", loopdev.name, "read_expire=100")
    assert r.returncode == 0, r.stderr
    journal = json.loads((private_journal / "journal.json").read_text())
    assert {"queue/scheduler", "queue/iosched/read_expire"} <= {e["attr"] for e in journal["entries"]}
    valid("journal.schema.json", journal)
    assert run_cli("restore").returncode == 0
