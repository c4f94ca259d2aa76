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

from iosched.core.base.errors import BadInput
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


def number(lo: float, hi: float, *, integer: bool = False, lo_open: bool = False, hi_open: bool = False) -> Parser:
    """A finite number (whole when ``integer``) between ``lo`` and ``hi``, from text or from JSON."""
    lo_word, hi_word = ("above" if lo_open else "at least"), ("below" if hi_open else "at most")

    def parse(value: object) -> float:
        kind = "a whole number" if integer else "a number"
        given = value  # shown as the user wrote it: "-1", not "-1.0"
        if isinstance(value, str):
            try:
                value = int(value) if integer else float(value)
            except ValueError:
                raise BadValue(f"{brief(value, 40)!r} is not {kind}") from None
        elif not _is_number(value) or (integer and not isinstance(value, int)):
            raise BadValue(f"must be {kind}, not {brief(value)}")
        assert isinstance(value, (int, float))
        # A huge int is compared exactly (never turned into a float, which would overflow); NaN compares false.
        finite = isinstance(value, int) or math.isfinite(value)
        if not finite or (value <= lo if lo_open else value < lo) or (value >= hi if hi_open else value > hi):
            raise BadValue(f"must be {lo_word} {_plain(lo)} and {hi_word} {_plain(hi)}, not {brief(given, 40)}")
        return value
    return parse


SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
MAX_SIZE = 1 << 50


def parse_size(value: object) -> int:
    """Bytes: "512M", "2G", or a whole number of bytes; positive and at most 1 PiB."""
    if isinstance(value, str):
        t = value.strip().lower().removesuffix("ib").removesuffix("b")
        unit = t[-1:] if t[-1:] in "kmgt" else ""
        try:
            number_ = float(t[: len(t) - len(unit)]) * SIZE_UNITS[unit]
        except ValueError:
            raise BadValue(f"{brief(value, 40)!r} is not a size (e.g. 512M, 2G)") from None
        shown = value[:40]
    elif isinstance(value, int) and not isinstance(value, bool):
        number_, shown = value, brief(value, 40)
    else:
        raise BadValue(f"must be a size in bytes, not {brief(value)}")
    if not 0 < number_ <= MAX_SIZE:  # nan and inf fail here too
        raise BadValue(f"the size must be positive and at most 1 PiB, not {shown}")
    return int(number_)


MIN_SECONDS, MAX_SECONDS = 0.5, 24 * 3600.0


def parse_seconds(value: object) -> float:
    """A duration: "10", "10s", "2m", or seconds from JSON; between 0.5 s and 24 h."""
    if isinstance(value, str):
        t = value.strip().lower()
        mult = 60.0 if t.endswith("m") else 1.0
        try:
            seconds = float(t.rstrip("sm")) * mult
        except ValueError:
            raise BadValue(f"{brief(value, 40)!r} is not a duration (e.g. 10, 10s, 2m)") from None
    elif _is_number(value):
        assert isinstance(value, (int, float))
        seconds = value
    else:
        raise BadValue(f"must be a duration in seconds, not {brief(value)}")
    if not MIN_SECONDS <= seconds <= MAX_SECONDS:  # nan fails here too; a huge int compares exactly
        raise BadValue("the duration must be between 0.5 s and 24 h")
    return float(seconds)


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
parse_alpha = number(0, 0.5, lo_open=True, hi_open=True)  # --alpha
_margin_percent = number(0, 100, lo_open=True, hi_open=True)


def parse_margin(value: object) -> float:
    """--margin PCT: "10" or "10%", above 0 and below 100, as a fraction (0.1)."""
    if isinstance(value, str):
        value = value.strip().removesuffix("%")
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


def parse_variants(text: str) -> list[Variant]:
    """"none,mq-deadline:read_expire=100:fifo_batch=8,bfq" -> variants; the same one twice is an A/A check."""
    out: list[Variant] = []
    parts = [p.strip() for p in text.split(",")]
    if len(parts) < 2 or not all(parts):
        raise BadInput(f"--schedulers needs at least two comma-separated variants, got {text!r}")
    for part in parts:
        sched, *settings = part.split(":")
        pairs = []
        for s in settings:
            key, eq, value = s.partition("=")
            if not eq or not key or not value:
                raise BadInput(f"setting {s!r} in variant {part!r} is not KEY=VALUE")
            pairs.append((key.strip(), value.strip()))
        label = part
        n = sum(1 for v in out if v.label.split("#")[0] == part)
        if n:
            label = f"{part}#{n + 1}"
        out.append(Variant(label, sched.strip(), tuple(pairs)))
    return out


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
