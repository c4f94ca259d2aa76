"""Saved experiments and matrices read back: outside input, checked whole before anything uses them.

Three steps, each a refusal of its own. First every value a flag also sets goes through that flag's parser
(core/documents/params.py), so a file cannot carry a settle of 1e9 seconds where `--settle` refuses it, and is
refused with the flag's own reason. Then the structure is the declared types' (core/documents/document.py),
decoded strictly by core/base/decode.py: no key a type does not declare, no field missing, no bool for a number,
no NaN or 10**400. Last, what a type cannot say: the variants read back as `--schedulers` gives them, every run
names a variant of the file, a matrix's runs fill distinct slots of its order.

``read_experiment`` / ``read_matrix`` return the typed documents the judges take (core/experiment/matrix.py
``decode_matrix`` adds a matrix's plan). Anything wrong is one sentence that says what the file is not and why:
"m.json is not a saved iosched matrix: settle_s: must be at least 0 and at most 3600, not 1e+09".
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TypeVar

from iosched.core.base.decode import DecodeError, decode
from iosched.core.base.errors import BadInput, shown
from iosched.core.base.infile import read_bounded
from iosched.core.documents.document import (
    AlternationDoc,
    ExperimentDoc,
    FleetDoc,
    FleetMatrixDoc,
    MatrixDoc,
    RunDoc,
    SequentialDoc,
    VariantDoc,
    WorkloadDoc,
)
from iosched.core.documents.params import (
    MAX_METRICS,
    BadValue,
    Variant,
    brief,
    check_name,
    check_pattern,
    number,
    parse_alpha,
    parse_fill,
    parse_metric,
    parse_repeat,
    parse_seconds,
    parse_settle,
    parse_size,
    parse_steady,
    parse_steady_ramp,
    parse_steady_timeout,
    parse_steady_window,
    parse_variants,
)
from iosched.core.load.conditions import ConditionsDoc
from iosched.core.load.steady import SteadyWait

MAX_DEPTH = 32  # fio's own JSON inside a run is about 10 levels deep
MAX_INDEX = 10**6  # a run's place in its order: more runs than any experiment makes
MAX_RUNTIME = 24 * 3600 + 10.0  # an alternation's fio runs 10 s past its --duration, so not --runtime's bound


class Bad(Exception):
    """What is wrong, in a few words; the reader turns it into one BadInput naming the file."""


MAX_SAVED_BYTES = 64 << 20  # a saved result of many runs is a few MiB; anything larger is not one of ours
# A saved file holds a list or object per ~90 bytes or more; 64 MiB of "[]," would be 21 million of them and
# 1.6 GB once parsed. Counted before parsing (a bracket inside a string counts too: the bound is far above).
MAX_CONTAINERS = 1_000_000


def load_saved(path: str, what: str) -> object:
    """The JSON of a saved file the user named, read within the bound; BadInput (one sentence) otherwise."""
    return decode_json(read_bounded(path, MAX_SAVED_BYTES, what), path, what)


def decode_json(data: bytes, path: object, what: str) -> object:
    """JSON from a file the user named; BadInput saying what the file is not (never the decoder's own words)."""
    if data.count(b"[") + data.count(b"{") > MAX_CONTAINERS:
        raise BadInput(f"{path} is not a saved iosched {what}: more than {MAX_CONTAINERS:,} lists and objects")
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


def kind_of(doc: object) -> str | None:
    """The kind a parsed saved file says it is ("compare", "matrix", "fleet", …), to choose its reader; None when
    it says none (an older compare) or is not an object."""
    kind = doc.get("kind") if isinstance(doc, dict) else None
    return kind if isinstance(kind, str) else None


def need(ok: bool, why: str) -> None:
    if not ok:
        raise Bad(why)


_T = TypeVar("_T")


def through(parse: Callable[[object], _T], value: object, where: str) -> _T:
    """``value`` through its flag's parser: the same refusal as on the command line."""
    try:
        return parse(value)
    except BadValue as e:
        raise Bad(f"{where}: {e}") from None


def _flags(doc: object, keys: dict[str, Callable[[object], object]]) -> None:
    """The values a flag also sets, through its parser, before the types see them: a repeat of 0 is refused
    with --repeat's reason, not as a bound of the type."""
    if isinstance(doc, dict):
        for key, parse in keys.items():
            if doc.get(key) is not None:
                through(parse, doc[key], key)


_SHARED = {"repeat": parse_repeat, "settle_s": parse_settle, "primary_metric": parse_metric}


# --- what the types cannot say ------------------------------------------------------------------------------


def saved_variants(saved: list[VariantDoc]) -> list[Variant]:
    """The variants as `--schedulers` would give them: labels, schedulers and settings must read back the same."""
    need(all(v.label for v in saved), "a variant's label is empty")
    try:
        variants = parse_variants(",".join(v.label.split("#")[0] for v in saved))
    except BadInput as e:
        raise Bad(f"its variants are not what --schedulers takes ({e})") from None
    need(len(variants) == len(saved), "its variant labels are not what --schedulers takes")
    for v, s in zip(variants, saved, strict=True):
        if not (v.label == s.label and s.scheduler == v.scheduler and dict(v.settings) == s.settings):
            raise Bad(f"variant {brief(s.label)} does not read back the same")
    return variants


def _runs(runs: Sequence[RunDoc], labels: list[str]) -> None:
    # Each figure was held to core/base/figures.py's range by the decoder: the rule a run is held to when kept.
    for n, run in enumerate(runs, 1):
        need(run.index < MAX_INDEX, f"run {n}'s index is not a place in a run order")
        need(run.variant in labels, f"run {n} names no variant of the experiment")


def _workload(wl: WorkloadDoc) -> None:
    need(wl.runtime is None or -MAX_RUNTIME <= wl.runtime <= MAX_RUNTIME,
         f"the workload's runtime is not a number of a sensible size ({brief(wl.runtime)})")
    need(wl.job is None or bool(wl.job.name), "the job's name is empty")
    need(wl.background is None or bool(wl.background.name), "the background's name is empty")
    reads = wl.cmd_metrics or []
    need(not reads or wl.cmd is not None, "it reads command metrics without a command")
    need(len(reads) <= MAX_METRICS, f"it reads more than {MAX_METRICS} command metrics")
    for m in reads:
        why = check_name(m.name) or check_pattern(m.pattern)
        need(why is None, f"its command metric {brief(m.name, 40)!r} is not what --cmd-metric takes ({why})")
    names = [m.name for m in reads]
    need(len(set(names)) == len(names), "it names a command metric twice")


def _steady(wait: SteadyWait) -> SteadyWait:
    """A saved steady-state wait, as --steady and its flags would give it."""
    need(through(parse_steady, wait.criterion, "its steady-state criterion") == wait.criterion,
         "its steady-state criterion is not in fio's own spelling")
    through(parse_steady_window, wait.window_s, "its steady-state window")
    through(parse_steady_ramp, wait.ramp_s, "its steady-state ramp")
    through(parse_steady_timeout, wait.timeout_s, "its steady-state timeout")
    try:
        return wait.check()
    except BadInput as e:
        raise Bad(str(e)) from None


def _conditions(c: ConditionsDoc | None) -> None:
    if c is None:
        return
    if c.fill is not None and c.fill.asked is not None:
        through(parse_fill, c.fill.asked, "its fill level asked")
    if c.steady is not None:
        _steady(c.steady)


def conditions_fault(c: ConditionsDoc | None) -> str | None:
    """Why saved conditions are not what --fill and --steady would give (None: they are)."""
    try:
        _conditions(c)
    except Bad as e:
        return str(e)
    return None


def saved_steady(conditions: object) -> SteadyWait | None:
    """The steady-state wait a saved matrix's parsed conditions name (a resumed matrix waits so), checked as its
    flags check it."""
    steady = conditions.get("steady") if isinstance(conditions, dict) else None
    return None if steady is None else _steady(decode(SteadyWait, steady, "conditions.steady"))


def _sequential(seq: SequentialDoc) -> None:
    looks = seq.looks
    need(bool(looks) and all(x <= 10**5 for x in looks) and looks == sorted(set(looks)),
         "the sequential looks are not increasing run counts")
    through(number(0, 0.5, lo_open=True), seq.level, "the sequential level")
    through(number(0.5, 1, lo_open=True, hi_open=True), seq.ci_level, "the sequential ci_level")
    through(parse_alpha, seq.alpha, "the sequential alpha")


# --- a saved experiment -------------------------------------------------------------------------------------


def _declared_primary(doc: object) -> bool:
    """The file's primary metric is a command's own figure its workload declares (checked with it, below)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("workload"), dict):
        return False
    reads = doc["workload"].get("cmd_metrics")
    return isinstance(reads, list) and any(isinstance(m, dict) and m.get("name") == doc.get("primary_metric")
                                           for m in reads)


def _experiment(doc: object) -> ExperimentDoc:
    shared = {k: f for k, f in _SHARED.items() if not (k == "primary_metric" and _declared_primary(doc))}
    _flags(doc, shared)
    if isinstance(doc, dict) and doc.get("kind") == "alternate":
        _flags(doc, {"every_s": parse_seconds, "duration_s": parse_seconds})
    d: ExperimentDoc = decode(ExperimentDoc, doc, max_depth=MAX_DEPTH)
    labels = [v.label for v in saved_variants(d.variants)]
    _workload(d.workload)
    need(all(x in labels for x in d.order), "order names no variant")
    if d.sequential is not None:
        _sequential(d.sequential)
    if isinstance(d, AlternationDoc):
        through(number(0, d.every_s, hi_open=True), d.discard_s, "discard_s")
    _conditions(d.conditions)
    _runs(d.runs, labels)
    return d


def read_experiment(doc: object, path: object) -> ExperimentDoc:
    """``doc`` (parsed JSON) as the saved experiment `report` can judge and show; BadInput with one sentence
    otherwise."""
    try:
        return _experiment(doc)
    except (Bad, DecodeError) as e:
        raise BadInput(f"{path} is not a saved iosched experiment: {e}") from None


def read_fleet(doc: object, path: object) -> FleetDoc:
    """A saved fleet compare, read whole: its own fields as their declared types, then each host's compare as
    `report` reads one saved there; BadInput with one sentence otherwise."""
    try:
        return _fleet(decode(FleetDoc, _fleet_flags(doc), max_depth=MAX_DEPTH), doc)
    except (Bad, DecodeError, BadInput) as e:
        raise BadInput(f"{path} is not a saved iosched fleet compare: {e}") from None


def _fleet_flags(doc: object) -> object:
    _flags(doc, {"repeat": parse_repeat, "settle_s": parse_settle, "runtime_s": parse_seconds, "size": parse_size})
    return doc


def _fleet(fleet: FleetDoc, doc: object) -> FleetDoc:
    """What a fleet's types cannot say: each host's compare read as one saved there, the same variants, no host
    twice."""
    variants = [v.label for v in parse_variants(fleet.schedulers)]
    assert isinstance(doc, dict)
    for entry in doc["hosts"]:
        if entry["result"] is not None:
            try:
                _experiment(entry["result"])
            except (Bad, DecodeError) as e:
                raise Bad(f"host {shown(entry['host'][:60])}'s result: {e}") from None
    need(len({h.host for h in fleet.hosts}) == len(fleet.hosts), "it names a host twice")
    labels = {tuple(v.label for v in h.result.variants) for h in fleet.hosts if h.result is not None}
    need(not labels - {tuple(variants)}, "its hosts compared different variants")
    return fleet


def read_fleet_matrix(doc: object, path: object) -> FleetMatrixDoc:
    """A saved fleet matrix, read whole: its fields, then each job's fleet as `read_fleet` reads one, each of the
    matrix's plan and on the same hosts; BadInput with one sentence otherwise."""
    try:
        _flags(_fleet_flags(doc), {"metric": parse_metric})
        matrix = decode(FleetMatrixDoc, doc, max_depth=MAX_DEPTH)
        parse_variants(matrix.schedulers)
        need(bool(matrix.jobs) and len(set(matrix.jobs)) == len(matrix.jobs), "its jobs are none, or one twice")
        need(len(matrix.fleets) <= len(matrix.jobs), "it holds more fleets than jobs")
        assert isinstance(doc, dict)
        hosts = None
        for n, (fleet, entry) in enumerate(zip(matrix.fleets, doc["fleets"], strict=True)):
            name = f"the fleet of {matrix.jobs[n][:60]}"  # the error printer shows control characters escaped
            try:
                _fleet_flags(entry)
                _fleet(fleet, entry)
            except (Bad, DecodeError, BadInput) as e:
                raise Bad(f"{name}: {e}") from None
            plan = (fleet.mode, fleet.job, fleet.schedulers, fleet.repeat, fleet.until_verdict, fleet.runtime_s,
                    fleet.size, fleet.settle_s)
            need(plan == (matrix.mode, matrix.jobs[n], matrix.schedulers, matrix.repeat, matrix.until_verdict,
                          matrix.runtime_s, matrix.size, matrix.settle_s), f"{name} ran another plan")
            named = [(h.host, h.device) for h in fleet.hosts]
            need(hosts is None or named == hosts, f"its fleets name different hosts ({name} and the first differ)")
            hosts = named
    except (Bad, DecodeError, BadInput) as e:
        raise BadInput(f"{path} is not a saved iosched fleet matrix: {e}") from None
    return matrix


# --- a saved matrix (its plan is read back in core/experiment/matrix.py) -------------------------------------


def _matrix(doc: object) -> MatrixDoc:
    _flags(doc, {**_SHARED, "job_runtime_s": parse_seconds})
    d = decode(MatrixDoc, doc, max_depth=MAX_DEPTH)
    labels = [v.label for v in saved_variants(d.variants)]
    need(bool(d.jobs), "it has no jobs")
    need(all(w.name for w in d.workloads), "a workload's name is empty")
    _conditions(d.conditions)
    _runs(d.runs, labels)
    slots: set[int] = set()
    for n, run in enumerate(d.runs, 1):
        need(run.slot < len(d.order) and run.slot not in slots,
             f"run {n} has no slot of the order, or one taken twice")
        slots.add(run.slot)
        need(d.order[run.slot] == (run.workload, run.variant),
             f"run {n} is not the workload and variant its slot plans")
    return d


def read_matrix(doc: object, path: object) -> MatrixDoc:
    """The fields of a saved matrix as its declared type, each with its flag's parser; BadInput with one sentence
    otherwise (its plan is read back by core/experiment/matrix.py ``plan_from_doc``)."""
    try:
        return _matrix(doc)
    except (Bad, DecodeError) as e:
        raise BadInput(f"{path} is not a saved iosched matrix: {e}") from None

