"""Error types raised by core; the edges (CLI, TUI) turn them into one clear sentence."""

from __future__ import annotations


def shown(text: str, limit: int = 40) -> str:
    """``text`` quoted for an error message, cut when long: a 10 KB name is not echoed back whole. The bound is the
    quoted form's (``limit`` characters between the quotes): one character may be shown as ten (``\\U000e0001``)."""
    quoted = repr(text[:limit + 1])
    if len(text) <= limit and len(quoted) <= limit + 2:
        return quoted
    low, high = 0, min(len(text), limit)  # the longest start of text whose quoted form fits
    while low < high:
        mid = (low + high + 1) // 2
        if len(repr(text[:mid])) <= limit + 2:
            low = mid
        else:
            high = mid - 1
    return f"{text[:low]!r}… ({len(text)} characters)"


class IoschedError(Exception):
    """A failure the user should hear about in one sentence (exit code 1)."""

    exit_code = 1


class BadInput(IoschedError):
    """The request itself is wrong: unknown device or scheduler, malformed name (exit code 2)."""

    exit_code = 2


class UnknownDevice(BadInput):
    pass


class UnknownScheduler(BadInput):
    pass


class NoScheduler(BadInput):
    """The device has no elevator (zram, many dm devices)."""


class NotPermitted(IoschedError):
    """A write was refused for lack of privilege."""


class DeviceGone(IoschedError):
    """The device vanished between looking it up and acting on it."""


class WriteNotApplied(IoschedError):
    """The kernel accepted a write but the value read back is not the one written."""
