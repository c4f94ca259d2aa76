"""Documents made up in tests, as JSON a test writes by hand: only what the test is about, the rest filled with
neutral values, then read through the decoder into the declared types the judges and reports take."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from iosched.core.base.decode import decode
from iosched.core.base.encode import encode
from iosched.core.documents.document import ExperimentDoc, MatrixDoc, MatrixRunDoc, RunDoc, TraceDoc
from iosched.core.load.replay_lag import ReplayLag


def _job(job: dict | None) -> dict | None:
    if job is None or "path" in job or "catalog" in job or "cmd" in job:
        return job
    return {"group": "", "description": "", "writes": False, "options": {}, **job}


def _variants(doc: dict, labels: list[str]) -> list[dict]:
    given = doc.get("variants") or [{"label": lb} for lb in labels]
    return [{"scheduler": v["label"].split("#")[0], "settings": {}, **v} for v in given]


def _run(r: dict, i: int, labels: list[str]) -> dict:
    return {"index": i, "variant": labels[0] if labels else "none", "start": float(i), "end": float(i) + 1.0,
            "valid": True, "invalid_reason": None, "config": {}, "metrics": {}, "fio": None, **r}


def _plain(value: Any) -> Any:
    """A part a test gives as a declared type (a boundary from sequential_plan) as its JSON."""
    return value if isinstance(value, (dict, list, str, int, float, type(None))) else encode(value)


def _typed_run(r: dict, cls: type[RunDoc] = RunDoc) -> RunDoc:
    """A run built as the runner builds one, not decoded: a test may give a figure no saved file holds (NaN)."""
    return cls(**{**r, "metrics": dict(r["metrics"]), "trace": decode(TraceDoc, r["trace"]) if r.get("trace") else None,
                  "replay": decode(ReplayLag, r["replay"]) if r.get("replay") else None})


def run_doc(run: dict) -> RunDoc:
    """One run, filled where the test leaves a field out."""
    return _typed_run(_run(run, int(run.get("index", 0)), [str(run.get("variant", "none"))]))


def experiment_doc(doc: dict) -> ExperimentDoc:
    """A compare (or, with ``kind: alternate``, a live alternation) from the fields a test names."""
    d = {k: _plain(v) for k, v in doc.items()}  # each part is made anew where it is filled
    labels = [v["label"] for v in d.get("variants") or []]
    runs = [_run(r, i, labels) for i, r in enumerate(d.get("runs") or [])]
    labels = labels or list(dict.fromkeys(r["variant"] for r in runs))
    wl = d.get("workload") or {}
    out = {"started": 0.0, "kernel": "", "machine": "", "host": "", "device": None, "notes": [], "original": {},
           "order": [r["variant"] for r in runs], **d, "variants": _variants(d, labels), "runs": runs,
           "workload": {"target": None, "runtime": None, "cmd": None, **wl, "job": _job(wl.get("job"))}}
    if out.get("kind") == "alternate":
        out = {"every_s": 5.0, "duration_s": 60.0, "discard_s": 1.0, **out}
    else:
        out = {"repeat": 3, "drop_caches": False, "settle_s": 0.0, **out}
    typed = decode(ExperimentDoc, {**out, "runs": []}, max_depth=64)
    return replace(typed, runs=[_typed_run(r) for r in runs])


def matrix_doc(doc: dict) -> MatrixDoc:
    """A matrix from the fields a test names (runs with their slot, workload and variant)."""
    d = {k: _plain(v) for k, v in doc.items()}  # each part is made anew where it is filled
    labels = [v["label"] for v in d.get("variants") or []]
    runs = [{"index": int(r.get("slot", i)), "workload": "", **_run(r, i, labels), "slot": int(r.get("slot", i))}
            for i, r in enumerate(d.get("runs") or [])]
    workloads = [_job(w) for w in d.get("workloads") or []]
    order = d.get("order") or [[r["workload"], r["variant"]] for r in runs]
    out = {"kind": "matrix", "started": 0.0, "kernel": "", "machine": "", "host": "", "device": None, "notes": [],
           "jobs": [], "repeat": 1, "drop_caches": False, "settle_s": 0.0, "job_runtime_s": None,
           "primary_metric": "iops", "target": None, "order": order, **d, "variants": _variants(d, labels),
           "workloads": workloads, "runs": []}
    return replace(decode(MatrixDoc, out, max_depth=64), runs=[_typed_run(r, MatrixRunDoc) for r in runs])
