"""The values a user gives, one parser each, for a flag and for a saved file alike.

`--settle 5` and `"settle_s": 5` in a saved matrix go through the same function, so a file can never carry
a value its flag would refuse (a settle of 1e9 seconds, a negative one). Each parser takes the flag's text or
the number read from JSON and raises BadValue with the reason alone ("must be at least 0 and at most 3600,
not -1"): the caller names the flag or the field. The variants of `--schedulers` and the names and patterns of
`--cmd-metric` are read here too: a saved file names them, and its reader sits below the experiment that runs them.
Kept light: the parser every `iosched` start builds uses it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from iosched.core.base.errors import BadInput, shown
from iosched.core.documents.metrics import CMD_METRIC, METRIC_NAMES, ROLE_METRIC_NAMES, is_metric

if TYPE_CHECKING:
    from iosched.core.documents.document import VariantDoc

class BadValue(BadInput):
    """A value out of its range or of the wrong kind; the message is the reason, without the value's name."""


Parser = Callable[[object], float]


def brief(value: object, limit: int = 24) -> str:
    """A value as the user wrote it, cut when long: 10**400 is not echoed back whole."""
    if isinstance(value, bool) or value is None:
        text = {True: "true", False: "false", None: "null"}[value]
    elif isinstance(value, (str, int, float)):
        text = str(value)  # an int from JSON has at most 4300 digits: str() cannot fail
    else:
        text = "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__
    return text if len(text) <= limit else f"{text[:limit]}…"


def _plain(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# Numbers as a person types them, in ASCII and nothing around them: Python's int() and float() also take spaces,
# underscores (1_000), other scripts' digits (５), "inf" and "nan", none of which a flag means.
_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_DURATION = re.compile(r"(?P<n>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?P<unit>[smh]?)", re.ASCII | re.IGNORECASE)
_SIZE = re.compile(r"(?P<n>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:(?P<unit>[kmgt])(?:i?b)?|b)?", re.ASCII | re.IGNORECASE)
MAX_TEXT = 64  # characters of a number, a duration or a size: more is no number a flag takes


def _typed(text: str, pattern: re.Pattern[str]) -> re.Match[str] | None:
    return pattern.fullmatch(text) if len(text) <= MAX_TEXT else None


def range_words(lo: float, hi: float, lo_open: bool = False, hi_open: bool = False) -> str:
    """"at least 1 and at most 1000": a range as its flag's help and its refusal state it."""
    return (f"{'above' if lo_open else 'at least'} {_plain(lo)} and {'below' if hi_open else 'at most'} "
            f"{_plain(hi)}")


def number(lo: float, hi: float, *, integer: bool = False, lo_open: bool = False, hi_open: bool = False) -> Parser:
    """A finite number (whole when ``integer``) between ``lo`` and ``hi``, from text (ASCII digits, a point, an
    exponent: nothing else) or from JSON. The parser's ``range`` states the range."""
    stated = range_words(lo, hi, lo_open, hi_open)

    def parse(value: object) -> float:
        kind = "a whole number" if integer else "a number"
        given = value  # shown as the user wrote it: "-1", not "-1.0"
        if isinstance(value, str):
            if _typed(value, _INTEGER if integer else _DECIMAL) is None:
                raise BadValue(f"{brief(value, 40)!r} is not {kind} (digits, {stated})")
            try:
                value = int(value) if integer else float(value)
            except ValueError:  # an integer of more than 4300 digits cannot get here: MAX_TEXT
                raise BadValue(f"{brief(value, 40)!r} is not {kind}") from None
        elif not _is_number(value) or (integer and not isinstance(value, int)):
            raise BadValue(f"must be {kind}, not {brief(value)}")
        assert isinstance(value, (int, float))
        # A huge int is compared exactly (never turned into a float, which would overflow); NaN compares false.
        finite = isinstance(value, int) or math.isfinite(value)
        if not finite or (value <= lo if lo_open else value < lo) or (value >= hi if hi_open else value > hi):
            raise BadValue(f"must be {stated}, not {brief(given, 40)}")
        return value
    parse.range = stated  # type: ignore[attr-defined]
    return parse


SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
MAX_SIZE = 1 << 50


def parse_size(value: object) -> int:
    """Bytes: "512M", "2G", "4k", "1GiB", or a whole number of bytes (ASCII digits and a unit, nothing around them);
    positive and at most 1 PiB."""
    if isinstance(value, str):
        m = _typed(value, _SIZE)
        if m is None:
            raise BadValue(f"{brief(value, 40)!r} is not a size (e.g. 512M, 2G; at most 1 PiB)")
        number_ = float(m["n"]) * SIZE_UNITS[(m["unit"] or "").lower()]
        shown = value[:40]
    elif isinstance(value, int) and not isinstance(value, bool):
        number_, shown = value, brief(value, 40)
    else:
        raise BadValue(f"must be a size in bytes, not {brief(value)}")
    if not 0 < number_ <= MAX_SIZE:  # nan and inf fail here too
        raise BadValue(f"the size must be positive and at most 1 PiB, not {shown}")
    return int(number_)


parse_size.range = "positive, at most 1 PiB"  # type: ignore[attr-defined]

MIN_CAPTURE_SIZE = 4 << 10  # a capture's iolog: its header, its close lines and a request


def parse_capture_size(value: object) -> int:
    """capture --max-size: a size (``parse_size``) of at least 4 KiB, room for the iolog's own lines and more."""
    size = parse_size(value)
    if size < MIN_CAPTURE_SIZE:
        raise BadValue(f"a capture's bound must be at least 4 KiB (its iolog's own lines take some), not "
                       f"{brief(value, 40)}")
    return size


parse_capture_size.range = "at least 4 KiB, at most 1 PiB"  # type: ignore[attr-defined]


MIN_SECONDS, MAX_SECONDS = 0.5, 24 * 3600.0
_UNIT_SECONDS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}


def duration_parser(lo: float, hi: float, range_text: str) -> Parser:
    """A duration between ``lo`` and ``hi`` seconds: "90", "90s", "15m", "2h" (ASCII digits, an optional point and
    one unit, nothing around them: not "10mm", " 5m", "1_000s" or "５m"), or seconds from JSON."""

    def parse(value: object) -> float:
        if isinstance(value, str):
            m = _typed(value, _DURATION)
            if m is None:
                raise BadValue(f"{brief(value, 40)!r} is not a duration (e.g. 90, 90s, 15m, 2h; {range_text})")
            seconds = float(m["n"]) * _UNIT_SECONDS[m["unit"].lower()]
        elif _is_number(value):
            assert isinstance(value, (int, float))
            seconds = value
        else:
            raise BadValue(f"must be a duration in seconds, not {brief(value)}")
        if not lo <= seconds <= hi:  # nan fails here too; a huge int compares exactly
            raise BadValue(f"the duration must be {range_text}")
        return float(seconds)
    parse.range = range_text  # type: ignore[attr-defined]
    return parse


parse_seconds = duration_parser(MIN_SECONDS, MAX_SECONDS, "between 0.5 s and 24 h")
MAX_BUDGET_S = 7 * 86400.0
parse_budget_s = duration_parser(1.0, MAX_BUDGET_S, "between 1 s and a week")  # advise --budget


def parse_metric(value: object) -> str:
    """One of the metrics an experiment measures, or ROLE:METRIC of a role's (core/documents/metrics.py).

    Whether the workload has that role is checked where the workload is known (``check_roles``). A command's own
    figure (--cmd-metric) is not one of these: it is checked against the list that declares it."""
    if not is_metric(value):
        raise BadValue(f"{brief(value, 40)!r} is no metric; one of: {', '.join(METRIC_NAMES)}, "
                       f"or ROLE:METRIC for a role of a multi-job workload, METRIC one of "
                       f"{', '.join(ROLE_METRIC_NAMES)}")
    assert isinstance(value, str)
    return value


# The flags' ranges, shared with the saved files that carry the same values.
parse_repeat = number(1, 1000, integer=True)  # --repeat: runs per variant
parse_settle = number(0, 3600)  # --settle: seconds of quiet before each run
# --alpha: below 0.001 a test of a few runs has intervals no double holds and a sequential boundary read from
# core/statistics/sequential.py's 20,000 simulations has too few draws below it to be placed.
MIN_ALPHA = 0.001
parse_alpha = number(MIN_ALPHA, 0.5, hi_open=True)
_percent = number(0, 100)


def parse_fill(value: object) -> float:
    """--fill: the share of the device written before the first run, "50%", "50" or 50 from JSON; 0 (trimmed, nothing
    written) to 100."""
    if isinstance(value, str):
        value = value.removesuffix("%")  # nothing around it, as every number typed (number())
    return float(_percent(value))


# fio's steady-state criteria (fio 3.33's HOWTO, "Steady state"): what is measured, and whether its slope is judged.
STEADY_CRITERIA = ("iops_slope", "iops", "bw_slope", "bw")
_BOUND = number(0, 100, lo_open=True)


def parse_steady(value: object) -> str:
    """--steady: fio's criterion and its bound as a percentage of the window's mean, "iops_slope:1%"; given back in
    fio's own spelling."""
    if not isinstance(value, str):
        raise BadValue(f"must be a criterion such as iops_slope:1%, not {brief(value)}")
    name, colon, bound = value.partition(":")
    if name not in STEADY_CRITERIA or not colon:
        raise BadValue(f"{brief(value, 40)!r} is not a steady-state criterion: one of "
                       f"{', '.join(STEADY_CRITERIA)}, then :BOUND%, e.g. iops_slope:1%")
    if not bound.endswith("%"):
        raise BadValue(f"{brief(value, 40)!r}: give the bound as a percentage of the mean, e.g. {name}:1%")
    return f"{name}:{_plain(_BOUND(bound[:-1]))}%"


_WHOLE_SECONDS = re.compile(r"(?P<n>[0-9]{1,9})(?P<unit>[sm]?)", re.ASCII | re.IGNORECASE)


def whole_seconds(lo: int, hi: int) -> Parser:
    """A duration in whole seconds between ``lo`` and ``hi``: "10", "10s", "2m" (ASCII digits and one unit, nothing
    around them: not "10sm", " 10" or "１０"), or a whole number from JSON."""
    def parse(value: object) -> float:
        if isinstance(value, str):
            m = _typed(value, _WHOLE_SECONDS)
            if m is None:
                raise BadValue(f"{brief(value, 40)!r} is not a whole number of seconds (e.g. 10, 10s, 2m)")
            value = int(m["n"]) * (60 if m["unit"].lower() == "m" else 1)
        return number(lo, hi, integer=True)(value)
    return parse


parse_steady_window = whole_seconds(3, 3600)  # --steady-window: fio's steadystate_duration
parse_steady_ramp = whole_seconds(0, 3600)  # --steady-ramp: fio's steadystate_ramp_time
parse_steady_timeout = whole_seconds(5, 24 * 3600)  # --steady-timeout: the longest wait before a run


_margin_percent = number(0, 100, lo_open=True, hi_open=True)


def parse_margin(value: object) -> float:
    """--margin PCT: "10" or "10%", above 0 and below 100, as a fraction (0.1)."""
    if isinstance(value, str):
        value = value.removesuffix("%")  # nothing around it, as every number typed
    return _margin_percent(value) / 100.0


# --- variants: --schedulers, and the variants a saved file names, read back through the same parser --------


@dataclass(frozen=True)
class Variant:
    label: str  # exactly as the user wrote it, made unique ("none", "none#2" for an A/A check)
    scheduler: str
    settings: tuple[tuple[str, str], ...] = ()

    def doc(self) -> VariantDoc:
        """As a saved experiment holds it (document.py loads only here: the flags' parsers stay light)."""
        from iosched.core.documents.document import VariantDoc

        return VariantDoc(label=self.label, scheduler=self.scheduler, settings=dict(self.settings))


# A variant's words, as sysfs names them: a scheduler's name (the kernel's elevator names are at most 15
# characters), a setting's name (a file in queue/ or queue/iosched/: no "/" or ".." can reach another), a whole
# number as its value (no shell, no exponent, no other script's digits). Nothing else reaches a sysfs path or a write.
SCHEDULER_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,14}", re.ASCII)
SETTING_NAME = re.compile(r"[a-z][a-z0-9_]{0,47}", re.ASCII)
SETTING_VALUE = re.compile(r"-?[0-9]{1,19}", re.ASCII)
MOST_PER_ARM = 200  # --max-runs' most (until a verdict, runs per variant): beyond it, the noise wants a cure
MAX_VARIANTS = 16  # the baseline and 15 others: every scheduler a kernel offers and its tunings, and more
MAX_SETTINGS = 8  # settings of one variant


def parse_variants(text: str, least: int = 2, most: int = MAX_VARIANTS, flag: str = "--schedulers") -> list[Variant]:
    """"none,mq-deadline:read_expire=100:fifo_batch=8,bfq" -> variants (from ``least`` to ``most`` of them); the
    same one twice is an A/A check. Each scheduler, setting and value is a word sysfs could name
    (``SCHEDULER_NAME``, ``SETTING_NAME``, ``SETTING_VALUE``); whether the device has it is checked on the device
    (core/experiment/variants.py ``check_variants``)."""
    out: list[Variant] = []
    parts = [p.strip() for p in text.split(",")]
    if "" in parts and len(parts) > 1:
        where = ("the first item" if parts[0] == "" else "the last item" if parts[-1] == "" else
                 f"item {parts.index('') + 1} of {len(parts)}")
        raise BadInput(f"{flag} {shown(text)}: {where} is empty (a comma too many); give the variants between "
                       "single commas, e.g. none,bfq")
    if len(parts) < least or not all(parts):
        raise BadInput(f"{flag} needs at least {'two' if least == 2 else 'one'} comma-separated "
                       f"variant{'s' if least > 1 else ''}, got {shown(text)}")
    if len(parts) > most:
        raise BadInput(f"{flag} names {len(parts)} variants: at most {most} (each one runs every test; "
                       "compare a few at a time)")
    for part in parts:
        sched, *settings = part.split(":")
        if not SCHEDULER_NAME.fullmatch(sched):
            raise BadInput(f"variant {shown(part)}: {shown(sched)} is not a scheduler's name (lower-case letters, "
                           "digits, - and _, at most 15)")
        if len(settings) > MAX_SETTINGS:
            raise BadInput(f"variant {shown(part)} has {len(settings)} settings: at most {MAX_SETTINGS}")
        pairs = []
        for s in settings:
            key, eq, value = s.partition("=")
            if not eq or not key or not value:
                raise BadInput(f"setting {shown(s)} in variant {shown(part)} is not KEY=VALUE")
            if not SETTING_NAME.fullmatch(key):
                raise BadInput(f"setting {shown(s)} in variant {shown(part)}: {shown(key)} is not a setting's name "
                               "(a lower-case letter, then letters, digits and _)")
            if not SETTING_VALUE.fullmatch(value):
                raise BadInput(f"setting {shown(s)} in variant {shown(part)}: {shown(value)} is not a whole number")
            pairs.append((key, value))
        label = part
        n = sum(1 for v in out if v.label.split("#")[0] == part)
        if n:
            label = f"{part}#{n + 1}"
        out.append(Variant(label, sched, tuple(pairs)))
    return out


MAX_CANDIDATES = MAX_VARIANTS - 1  # advise --candidates: the current setting is the plan's baseline


def parse_candidates(text: object) -> list[Variant]:
    """advise --candidates: variants as `--schedulers` writes them, one to ``MAX_CANDIDATES`` (each is planned and
    tested on every goal against the current setting)."""
    if not isinstance(text, str):
        raise BadValue(f"must be a list of variants, not {brief(text)}")
    return parse_variants(text, least=1, most=MAX_CANDIDATES, flag="--candidates")


parse_candidates.range = f"one to {MAX_CANDIDATES} variants"  # type: ignore[attr-defined]


# --- a command's own figures: --cmd-metric's name and pattern, and those a saved file declares ---------------

# Prefixes of the figures iosched writes into each run itself (dev_iops, cpu_irq, cmd_usr_s, …).
_OURS = ("dev_", "cpu_", "cmd_", "bg_", "tracer_")
MAX_PATTERN = 500
MAX_METRICS = 8


def check_name(name: str) -> str | None:
    """Why ``name`` cannot name a command's figure, or None."""
    if not CMD_METRIC.fullmatch(name):
        return "a name is a lower-case letter then up to 31 letters, digits or _"
    if name in METRIC_NAMES or name in ROLE_METRIC_NAMES or name.startswith(_OURS):
        return "iosched measures a figure of that name itself"
    return None


def check_pattern(pattern: str) -> str | None:
    """Why ``pattern`` cannot read a figure, or None."""
    if not pattern:
        return "the regular expression is empty"
    if len(pattern) > MAX_PATTERN:
        return f"the regular expression is longer than {MAX_PATTERN} characters"
    try:
        compiled = re.compile(pattern, re.MULTILINE)
    except re.error as e:
        return f"{pattern!r} is not a regular expression ({e})"
    if compiled.groups > 1:
        return f"{pattern!r} has {compiled.groups} groups: keep one, around the number (others as (?:…))"
    return None
