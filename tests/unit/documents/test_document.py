"""The documents' declared types (core/documents/document.py): the rules every class keeps, checked over all of them,
and how a run is written and read back."""

from __future__ import annotations

import dataclasses
import inspect
import json

from doc_support import experiment_doc, run_doc

from iosched.core.base.decode import decode
from iosched.core.base.encode import encode
from iosched.core.documents import document
from iosched.core.documents.document import CompareDoc, KeepDoc, ModelKeepDoc, RunDoc, TraceDoc

DECLARED = [cls for _, cls in inspect.getmembers(document, inspect.isclass)
            if dataclasses.is_dataclass(cls) and cls.__module__ == document.__name__]


def test_every_document_class_is_frozen_and_keyword_only() -> None:
    """The runtime objects are the documents: nobody changes one in place (a running one is rebuilt), and no
    writer depends on the order of a class's fields."""
    assert len(DECLARED) > 30
    for cls in DECLARED:
        params = cls.__dataclass_params__  # type: ignore[attr-defined]
        assert params.frozen, cls.__name__
        assert all(f.kw_only for f in dataclasses.fields(cls)), cls.__name__


def test_a_field_its_writers_may_leave_out_has_a_default_for_its_readers() -> None:
    """`"absent"` says when a writer leaves a field out; a file without it then reads as the field's default."""
    absent = [(cls, f) for cls in DECLARED for f in dataclasses.fields(cls) if "absent" in f.metadata]
    assert len(absent) > 20
    for cls, f in absent:
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        assert has_default, f"{cls.__name__}.{f.name}"
        rule = f.metadata["absent"]
        assert rule is True or callable(rule), f"{cls.__name__}.{f.name}"


def test_every_written_order_names_each_field_once() -> None:
    """A class's JSON_ORDER, fixed or chosen by what holds it, names its fields: none written twice, none lost."""
    alternation = experiment_doc({"kind": "alternate"})
    for cls in DECLARED:
        order = getattr(cls, "JSON_ORDER", None)
        if order is None:
            continue
        names = sorted(f.name for f in dataclasses.fields(cls))
        orders = [order((alternation,)), order(())] if callable(order) else [order]
        for each in orders:
            assert sorted(each) == names, cls.__name__


def test_a_run_is_written_in_its_writers_order_with_nulls_kept_and_absent_fields_left_out() -> None:
    run = run_doc({"variant": "bfq", "metrics": {"iops": 1200.0}})
    # A field without an absent rule is written even when null; trace, replay and startup are left out when none.
    assert list(encode(run)) == ["index", "variant", "start", "end", "valid", "invalid_reason", "config", "metrics",
                                 "fio"]
    assert encode(run)["invalid_reason"] is None and encode(run)["fio"] is None
    traced = dataclasses.replace(run, trace=TraceDoc(ios=3, sched_us=[(1, 2, 3)], device_us=[], total_us=[]))
    assert list(encode(traced))[-1] == "trace"
    # A turn of a live alternation says why it is invalid last, as the alternation's writer did.
    alternation = experiment_doc({"kind": "alternate", "runs": [{"variant": "bfq", "metrics": {"iops": 1.0}}]})
    assert list(encode(alternation)["runs"][0])[-1] == "invalid_reason"


def test_a_written_compare_reads_back_as_the_same_document() -> None:
    doc = experiment_doc({"variants": [{"label": "none"}, {"label": "bfq"}],
                          "runs": [{"variant": v, "metrics": {"iops": 1000.0 + i, "lat_mean_us": 80.5}}
                                   for i, v in enumerate(["none", "bfq", "bfq", "none"])]})
    assert isinstance(doc, CompareDoc)
    text = json.dumps(encode(doc))
    back = decode(CompareDoc, json.loads(text))
    assert back == doc
    assert all(isinstance(r, RunDoc) for r in back.runs) and back.runs[1].metrics["iops"] == 1001.0


def test_a_keep_saved_before_its_shape_was_shared_reads_back_and_is_written_the_same() -> None:
    """A device's keep and a model's share their first fields (one declaration); a file saved when each declared
    its own reads back as before, and is written again key for key."""
    device = {"variant": "bfq", "scheduler": "bfq", "settings": {"slice_idle": "0"},
              "commands": ["iosched set sdb bfq", "iosched tune sdb slice_idle=0"],
              "rule": 'ACTION=="add|change", ENV{ID_SERIAL}=="X1", ATTR{queue/scheduler}="bfq"', "scope": "serial X1",
              "class_rule": None, "class_scope": None, "warnings": ["no rule for every rotational disk: …"],
              "persisted": "/etc/udev/rules.d/60-iosched.rules"}
    model = {"variant": "none", "scheduler": "none", "settings": {}, "commands": ["db1: iosched set sdb none"],
             "rule": None, "scope": None, "warnings": ["no rule for the model: the devices name none"]}
    for cls, saved in ((KeepDoc, device), (ModelKeepDoc, model)):
        back = decode(cls, json.loads(json.dumps(saved)))
        assert isinstance(back, cls) and back.commands == saved["commands"]
        assert json.dumps(encode(back)) == json.dumps(saved)
