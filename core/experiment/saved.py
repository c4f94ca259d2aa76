"""Saved experiments and matrices read back: outside input, checked whole before anything uses them.

One decoder per kind: ``check_experiment`` (`compare --save` of one workload, batch or alternation) and
``check_matrix`` (the fields of a matrix; core/experiment/matrix.py ``decode_matrix`` adds its plan). Every value that a
flag also sets goes through that flag's parser (core/experiment/params.py), so a file cannot carry a settle of 1e9
seconds where `--settle` refuses it. Anything wrong is one sentence that says what the file is not and why:
"m.json is not a saved iosched matrix: settle_s must be at least 0 and at most 3600, not 1e+09".
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, TypeVar

from iosched.core.base.errors import BadInput
from iosched.core.experiment.params import (
    BadValue,
    brief,
    number,
    parse_alpha,
    parse_metric,
    parse_repeat,
    parse_seconds,
    parse_settle,
)
from iosched.core.experiment.runner import Variant, parse_variants
from iosched.core.experiment.schema_version import SCHEMA_VERSION, Doc

MAX_DEPTH = 32  # fio's own JSON inside a run is about 10 levels deep
MAX_VALUE = 1e15  # a measured value, a time in seconds: anything larger is not one iosched wrote
MIN_VALUE = 1e-12  # the smallest non-zero measured value
STATUSES = ("running", "interim", "final", "cancelled")


class Bad(Exception):
    """What is wrong, in a few words; the decoder turns it into one BadInput naming the file."""


def decode_json(data: bytes, path: object, what: str) -> object:
    """JSON from a file the user named; BadInput saying what the file is not (never the decoder's own words)."""
    try:
        return json.loads(data)
    except RecursionError:
        raise BadInput(f"{path} is not a saved iosched {what}: nested too deeply") from None
    except UnicodeDecodeError:
        raise BadInput(f"{path} is not a saved iosched {what}: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise BadInput(f"{path} is not a saved iosched {what}: not JSON (line {e.lineno}, column {e.colno})") \
            from None
    except ValueError:  # an integer of more than 4300 digits
        raise BadInput(f"{path} is not a saved iosched {what}: a number too long to read") from None


# --- small checks -------------------------------------------------------------------------------------------


def need(ok: bool, why: str) -> None:
    if not ok:
        raise Bad(why)


def obj(value: object, where: str) -> Doc:
    need(isinstance(value, dict), f"{where} is not an object")
    assert isinstance(value, dict)
    return value


def listed(value: object, where: str) -> list[Any]:
    need(isinstance(value, list), f"{where} is not a list")
    assert isinstance(value, list)
    return value


def text(value: object, where: str, empty: bool = True) -> str:
    need(isinstance(value, str) and (empty or bool(value)), f"{where} is not {'' if empty else 'non-empty '}text")
    assert isinstance(value, str)
    return value


def finite(value: object, where: str, limit: float = MAX_VALUE) -> float:
    """A JSON number that is finite and at most ``limit`` in size (10**400 is compared, never converted)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and \
        (isinstance(value, int) or math.isfinite(value)) and -limit <= value <= limit
    need(ok, f"{where} is not a number of a sensible size ({brief(value)})")
    return float(value)  # type: ignore[arg-type]


_T = TypeVar("_T")


def through(parse: Callable[[object], _T], value: object, where: str) -> _T:
    """``value`` through its flag's parser: the same refusal as on the command line."""
    try:
        return parse(value)
    except BadValue as e:
        raise Bad(f"{where}: {e}") from None


def optional(doc: Doc, key: str, check: Callable[[object, str], object]) -> None:
    """Check ``doc[key]`` when it is there and not null."""
    if doc.get(key) is not None:
        check(doc[key], key)


def depth_within(doc: object, limit: int) -> bool:
    stack = [(doc, 1)]
    while stack:
        x, d = stack.pop()
        if d > limit:
            return False
        if isinstance(x, dict):
            stack += [(v, d + 1) for v in x.values()]
        elif isinstance(x, list):
            stack += [(v, d + 1) for v in x]
    return True


def text_list(value: object, where: str) -> list[str]:
    items = listed(value, where)
    need(all(isinstance(s, str) for s in items), f"{where} is not a list of text")
    return items


def text_map(value: object, where: str) -> Doc:
    """An object of settings or sysfs values: text (or a plain number, or null) under every key."""
    m = obj(value, where)
    need(all(v is None or isinstance(v, str) or (isinstance(v, (int, float)) and not isinstance(v, bool))
             for v in m.values()), f"{where} holds something other than text or numbers")
    return m


# --- parts every saved file has -----------------------------------------------------------------------------


def saved_variants(value: object) -> list[Variant]:
    """The variants as `--schedulers` would give them: labels, schedulers and settings must read back the same."""
    items = listed(value, "variants")
    for v in items:
        text(obj(v, "a variant").get("label"), "a variant's label", empty=False)
    try:
        variants = parse_variants(",".join(v["label"].split("#")[0] for v in items))
    except BadInput as e:
        raise Bad(f"its variants are not what --schedulers takes ({e})") from None
    need(len(variants) == len(items), "its variant labels are not what --schedulers takes")
    for v, saved in zip(variants, items, strict=True):
        settings = saved.get("settings") or {}
        need(v.label == saved["label"] and saved.get("scheduler", v.scheduler) == v.scheduler
             and dict(v.settings) == {k: str(x) for k, x in text_map(settings, "a variant's settings").items()},
             f"variant {brief(saved['label'])} does not read back the same")
    return variants


def _device(value: object, where: str) -> None:
    dev = obj(value, where)
    for key in ("name", "model", "serial", "backing_file"):
        need(dev.get(key) is None or isinstance(dev[key], str), f"{where} {key} is not text")
    need(dev.get("size_bytes") is None or finite(dev["size_bytes"], "device size_bytes", 2.0**64) >= 0,
         "device size_bytes is negative")


def _switches(value: object, where: str) -> None:
    for s in listed(value, where):
        need(isinstance(s, list) and len(s) == 2 and isinstance(s[1], str), f"{where} holds a malformed switch")
        finite(s[0], "a switch's time")


def _common(doc: object, kind: str) -> Doc:
    """The fields an experiment and a matrix share, checked with the flags' parsers where a flag sets them."""
    d = obj(doc, "the document")
    need(depth_within(d, MAX_DEPTH), "nested too deeply")
    need(d.get("version", SCHEMA_VERSION) == SCHEMA_VERSION and not isinstance(d.get("version"), bool),
         f"version {brief(d.get('version'))} is not one this iosched reads")
    saved_variants(d.get("variants"))
    optional(d, "device", _device)
    for key in ("kernel", "machine", "host"):
        optional(d, key, text)
    for key in ("started", "finished"):
        optional(d, key, finite)
    optional(d, "notes", text_list)
    optional(d, "status", lambda v, w: need(v in STATUSES, f"status {brief(v)} is not one of {', '.join(STATUSES)}"))
    need(isinstance(d.get("cancelled", False), bool), "cancelled is not true or false")
    optional(d, "switches", _switches)
    optional(d, "original", text_map)
    optional(d, "judgement", obj)  # judged again on every read: only its type matters
    optional(d, "target", obj)
    optional(d, "primary_metric", lambda v, w: through(parse_metric, v, w))
    optional(d, "repeat", lambda v, w: through(parse_repeat, v, w))
    optional(d, "settle_s", lambda v, w: through(parse_settle, v, w))
    need(isinstance(d.get("drop_caches", False), bool), "drop_caches is not true or false")
    return d


def check_run(r: object, n: int, labels: list[str]) -> Doc:
    """One run: which variant, when, valid or not and why, its configuration and its measured values."""
    where = f"run {n}"
    run = obj(r, where)
    index = run.get("index")
    need(isinstance(index, int) and not isinstance(index, bool) and 0 <= index < 10**6, f"{where} has no index")
    need(run.get("variant") in labels, f"{where} names no variant of the experiment")
    need(isinstance(run.get("valid", True), bool), f"{where}: valid is not true or false")
    need(run.get("invalid_reason") is None or isinstance(run["invalid_reason"], str),
         f"{where}: invalid_reason is not text")
    text_map(run.get("config"), f"{where}'s config")
    for key in ("start", "end"):
        finite(run.get(key), f"{where}'s {key}")
    metrics = obj(run.get("metrics"), f"{where}'s metrics")
    for key, x in metrics.items():
        # Every figure iosched measures is a ratio of counters, times or fio's figures: zero, or at least
        # 1e-12 in size. Nearer zero (1e-300) scales and ratios overflow; no run measures that.
        need(x is None or finite(x, f"{where}'s {key}") == 0 or abs(x) >= MIN_VALUE,
             f"{where}'s {key} is not a number of a sensible size ({brief(x)})")
    for key in ("fio", "trace"):
        optional(run, key, obj)
    return run


# --- a saved experiment -------------------------------------------------------------------------------------


def _workload(value: object, where: str) -> None:
    wl = obj(value, where)
    optional(wl, "cmd", text)
    optional(wl, "target", obj)
    # An alternation's fio runs 10 s past its --duration, so its runtime is not --runtime's.
    optional(wl, "runtime", lambda v, w: finite(v, "the workload's runtime", 24 * 3600 + 10.0))
    for key in ("job", "background"):
        if wl.get(key) is not None:
            job = obj(wl[key], f"the workload's {key}")
            text(job.get("name"), f"the {key}'s name", empty=False)
            optional(job, "options", text_map)


def _sequential(value: object, where: str) -> None:
    seq = obj(value, where)
    looks = listed(seq.get("looks"), "the sequential looks")
    need(bool(looks) and all(isinstance(x, int) and not isinstance(x, bool) and 2 <= x <= 10**5 for x in looks)
         and looks == sorted(set(looks)), "the sequential looks are not increasing run counts")
    through(number(0, 0.5, lo_open=True), seq.get("level"), "the sequential level")
    through(number(0.5, 1, lo_open=True, hi_open=True), seq.get("ci_level", 0.95), "the sequential ci_level")
    optional(seq, "alpha", lambda v, w: through(parse_alpha, v, w))


def _experiment(doc: object) -> Doc:
    d = _common(doc, "experiment")
    kind = d.get("kind", "compare")
    need(kind in ("compare", "alternate"), f"kind {brief(kind)} is not compare or alternate")
    labels = [v["label"] for v in d["variants"]]
    optional(d, "workload", _workload)
    optional(d, "order", lambda v, w: need(all(x in labels for x in text_list(v, w)), "order names no variant"))
    optional(d, "sequential", _sequential)
    if kind == "alternate":
        every = float(through(parse_seconds, d.get("every_s"), "every_s"))
        through(parse_seconds, d.get("duration_s"), "duration_s")
        through(number(0, every, hi_open=True), d.get("discard_s"), "discard_s")
    for n, r in enumerate(listed(d.get("runs"), "runs"), 1):
        check_run(r, n, labels)
    return d


def check_experiment(doc: object, path: object) -> Doc:
    """``doc`` when it is a saved experiment `report` can judge and show; BadInput with one sentence otherwise."""
    try:
        return _experiment(doc)
    except Bad as e:
        raise BadInput(f"{path} is not a saved iosched experiment: {e}") from None


# --- a saved matrix (its plan is read back in core/experiment/matrix.py) -------------------------------------


def check_matrix(doc: object, path: object) -> Doc:
    """The fields of a saved matrix, each with its flag's parser; BadInput with one sentence otherwise."""
    try:
        d = _common(doc, "matrix")
        need(d.get("kind") == "matrix", "kind is not matrix")
        labels = [v["label"] for v in d["variants"]]
        need(bool(listed(d.get("jobs"), "jobs")), "it has no jobs")
        for w in listed(d.get("workloads"), "workloads"):
            text(obj(w, "a workload").get("name"), "a workload's name", empty=False)
            optional(w, "options", text_map)
        through(parse_repeat, d.get("repeat"), "repeat")
        through(parse_settle, d.get("settle_s"), "settle_s")
        need(isinstance(d.get("drop_caches"), bool), "drop_caches is not true or false")
        optional(d, "job_runtime_s", lambda v, w: through(parse_seconds, v, w))
        for pair in listed(d.get("order"), "order"):
            need(isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair),
                 "order holds something other than [workload, variant] pairs")
        slots: set[int] = set()
        for n, r in enumerate(listed(d.get("runs"), "runs"), 1):
            run = check_run(r, n, labels)
            slot = run.get("slot")
            need(isinstance(slot, int) and not isinstance(slot, bool) and 0 <= slot < len(d["order"])
                 and slot not in slots, f"run {n} has no slot of the order, or one taken twice")
            assert isinstance(slot, int)
            slots.add(slot)
            need(d["order"][slot] == [run.get("workload"), run["variant"]],
                 f"run {n} is not the workload and variant its slot plans")
        return d
    except Bad as e:
        raise BadInput(f"{path} is not a saved iosched matrix: {e}") from None
