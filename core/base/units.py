"""Number formatting shared by the command line and the TUI (no Textual import: `iosched list` stays fast).

One module for every way a figure is shortened: bytes in binary units, and decimal k/M/G for rates in
live panes (``short_number``) and in result tables (``si``).
"""

from __future__ import annotations

import math

_DECIMAL = (("G", 1e9), ("M", 1e6), ("k", 1e3))


def _decimal(value: float) -> tuple[float, str]:
    """``value`` scaled to its largest decimal unit: (1.5, "M") for 1_500_000; (950.0, "") below 1000."""
    for unit, scale in _DECIMAL:
        if abs(value) >= scale:
            return value / scale, unit
    return value, ""


def human_size(n: float) -> str:
    """Bytes in binary units: 512B, 1.0G, 3.6T."""
    for unit in ("B", "K", "M", "G", "T", "P"):
        if n < 1024 or unit == "P":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
    return str(n)


def short_number(value: float) -> str:
    """Compact, for axis labels and status lines: 950, 1.2k, 35k, 1.5M."""
    v, unit = _decimal(value)
    if unit:
        return f"{v:.1f}{unit}" if v < 10 else f"{v:.0f}{unit}"
    if value == int(value):
        return str(int(value))
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def count(n: int) -> str:
    """A count as a person reads it: exact below ten thousand, then 81.0k."""
    return str(n) if n < 10000 else si(n)


def si(x: float | None) -> str:
    """For result tables, one decimal kept above 1000 so close variants stay apart: 35.2k; "-" for none."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    v, unit = _decimal(x)
    if unit:
        return f"{v:.1f}{unit}"
    if abs(x) < 1:
        return f"{x:.2f}"
    return f"{x:.1f}" if abs(x) < 100 else f"{x:.0f}"
