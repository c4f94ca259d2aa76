"""The range of a figure: one rule for every measured value a run keeps, wherever it comes from.

A figure is a finite number that is 0 or between 1e-12 and 1e15 in size, either sign. The rule is applied where a
figure enters: read from a command's output (core/experiment/cmd_metrics.py), from fio's output or the sampler
(core/experiment/runner.py ``hold_to_range``: a run with a figure outside it is invalid, with the reason, and the
figure is not kept), and when a saved file is read back (core/base/decode.py, a field typed
``Annotated[float, FIGURE]``). So a figure iosched saved always reads back, and one it refuses is refused the
same way everywhere.

Why these bounds: everything iosched measures sits far inside them (IOPS, MB/s, latencies in µs or ms, seconds,
percentages, CPU µs per IO, a command's tps or bytes: a petabyte is 1e15 bytes, a picosecond 1e-12 s), and inside
them no sum, square, mean or ratio over a million runs overflows a double or sinks into subnormal numbers (the
largest square is 1e30, the smallest 1e-24; the widest ratio 1e27), so the statistics need no case of their own.
"""

from __future__ import annotations

import math
from typing import ClassVar

FIGURE_MIN = 1e-12  # the smallest size of a figure that is not 0
FIGURE_MAX = 1e15  # the largest
FIGURE_RANGE = "0, or between 1e-12 and 1e15 in size"


class _FigureMark:
    """The mark of ``Annotated[float, FIGURE]``: a figure, held to the rule by the decoder and written in the
    schema as the three ranges it allows."""

    schema: ClassVar[dict[str, list[dict[str, float]]]] = {"anyOf": [
        {"const": 0}, {"minimum": FIGURE_MIN, "maximum": FIGURE_MAX}, {"minimum": -FIGURE_MAX, "maximum": -FIGURE_MIN}]}

    def __repr__(self) -> str:
        return "FIGURE"


FIGURE = _FigureMark()


def shown_number(value: int | float) -> str:
    """A number as a message shows it: 3e+19, 5e-13, 1234.5; an integer of 400 digits cut."""
    if isinstance(value, int):
        text = str(value)  # at most 4300 digits (Python's limit on what it reads): str() cannot fail
        return text if len(text) <= 24 else f"{text[:12]}…({len(text)} digits)"
    return f"{value:.6g}"


def figure_fault(value: object) -> str | None:
    """Why ``value`` cannot be a figure, as the words after its name ("is 3e+19, outside …"), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "is not a number"
    if isinstance(value, float) and not math.isfinite(value):
        return f"is not a number ({value})"
    size = abs(value)  # an int is compared exactly: 10**400 never becomes a float
    if size != 0 and not FIGURE_MIN <= size <= FIGURE_MAX:
        return f"is {shown_number(value)}, outside a figure's range ({FIGURE_RANGE})"
    return None


def is_figure(value: object) -> bool:
    return figure_fault(value) is None
