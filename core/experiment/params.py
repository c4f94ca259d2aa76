"""The values a user gives, one parser each, for a flag and for a saved file alike.

`--settle 5` and `"settle_s": 5` in a saved matrix go through the same function, so a file can never carry
a value its flag would refuse (a settle of 1e9 seconds, a negative one). Each parser takes the flag's text or
the number read from JSON and raises BadValue with the reason alone ("must be at least 0 and at most 3600,
not -1"): the caller names the flag or the field. Kept light: the parser every `iosched` start builds uses it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from iosched.core.base.errors import BadInput
from iosched.core.experiment.metrics import METRIC_NAMES, ROLE_METRIC_NAMES, is_metric


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
    """One of the metrics an experiment measures, or ROLE:METRIC of a role's (core/experiment/metrics.py).

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
