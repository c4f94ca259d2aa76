"""Error types raised by core; the edges (CLI, TUI) turn them into one clear sentence."""

from __future__ import annotations


def shown(text: str, limit: int = 40) -> str:
    """``text`` quoted for an error message, cut when long: a 10 KB name is not echoed back whole."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text)} characters)"


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
