"""Number formatting shared by the command line and the TUI (no Textual import: `iosched list` stays fast)."""

from __future__ import annotations


def human_size(n: float) -> str:
    """Bytes in binary units: 512B, 1.0G, 3.6T."""
    for unit in ("B", "K", "M", "G", "T", "P"):
        if n < 1024 or unit == "P":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
    return str(n)
