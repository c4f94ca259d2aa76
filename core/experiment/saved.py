"""A saved experiment (``compare --save``) read back: outside input, so its shape is checked before use."""

from __future__ import annotations

import math

from iosched.core.base.errors import BadInput


def _num(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and abs(x) < 1e15


def _str_list(x: object) -> bool:
    return isinstance(x, list) and all(isinstance(s, str) for s in x)


def _problem(doc: object) -> str | None:
    """What is wrong with ``doc`` as a saved experiment, or None when report can judge and show it."""
    if not isinstance(doc, dict):
        return "not a JSON object"
    variants = doc.get("variants")
    if not isinstance(variants, list) or not variants:
        return "no variants"
    if not all(isinstance(v, dict) and isinstance(v.get("label"), str) and v["label"] for v in variants):
        return "a variant without a label"
    if len({v["label"] for v in variants}) != len(variants):
        return "two variants with one label"
    for key, kind in (("device", dict), ("workload", dict), ("kind", str)):
        if key in doc and not isinstance(doc[key], kind):
            return f"{key} of the wrong type"
    job = doc.get("workload", {}).get("job")
    if job is not None and not isinstance(job, dict):
        return "a workload job of the wrong type"
    for key in ("order", "notes"):
        if key in doc and not _str_list(doc[key]):
            return f"{key} is not a list of text"
    if doc.get("kind") == "alternate" and not all(_num(doc.get(k)) for k in ("every_s", "duration_s", "discard_s")):
        return "an alternation without its timings"
    runs = doc.get("runs")
    if not isinstance(runs, list):
        return "no runs"
    for n, r in enumerate(runs, 1):
        if not isinstance(r, dict):
            return f"run {n} is not an object"
        if not isinstance(r.get("index"), int) or isinstance(r["index"], bool) or not 0 <= r["index"] < 10**6:
            return f"run {n} has no index"
        if not isinstance(r.get("variant"), str) or not isinstance(r.get("valid", True), bool):
            return f"run {n} has no variant or validity"
        if not isinstance(r.get("config"), dict) or not _num(r.get("start")) or not _num(r.get("end")):
            return f"run {n} has no config, start or end"
        if not isinstance(r.get("invalid_reason"), (str, type(None))):
            return f"run {n} has an invalid_reason that is not text"
        m = r.get("metrics")
        if not isinstance(m, dict) or not all(isinstance(k, str) and (v is None or _num(v)) for k, v in m.items()):
            return f"run {n} has metrics that are not numbers"
    return None


def check_experiment(doc: object, path: str) -> dict:
    why = _problem(doc)
    if why is not None:
        raise BadInput(f"{path} is not a saved iosched experiment ({why})")
    assert isinstance(doc, dict)
    return doc
