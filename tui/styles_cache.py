"""Closed widgets' line caches let go, despite a leak in Textual's StylesCache.

``StylesCache.get_inner_outer`` is an ``lru_cache`` on an instance method: its key holds the StylesCache, and
so every line it rendered, of up to 1024 widgets after they are gone (Textual issue 6665). Each dialog,
notification and footer key leaves one behind: the TUI grew by about 0.3 MB a minute over half an hour with
a dialog a minute and devices coming and going. The result depends on the two colours only; keyed on them
alone, the cache no longer keeps any widget's lines.
"""

from __future__ import annotations

import inspect
from functools import lru_cache

from textual.color import Color
from textual.style import Style


def unpin_styles_caches() -> None:
    """Key Textual's colour cache on the colours alone (idempotent; nothing if Textual has fixed it).

    Textual's private module and method are checked before anything changes: another shape (moved, renamed,
    a fix, a different signature) is left alone rather than risk the TUI's start or its drawing.
    """
    try:
        from textual._styles_cache import StylesCache
    except ImportError:
        return
    method = StylesCache.__dict__.get("get_inner_outer")
    # Only the buggy shape: an lru_cache straight on a plain function. A static or class method (a fix) and
    # anything else are left alone.
    if method is None or isinstance(method, (staticmethod, classmethod)) or not hasattr(method, "cache_clear"):
        return
    original = getattr(method, "__wrapped__", None)
    if original is None or list(inspect.signature(original).parameters) != ["cls", "base_background", "background"]:
        return

    @lru_cache(1024)
    def inner_outer(base_background: Color, background: Color) -> tuple[Style, Style]:
        return original(None, base_background, background)  # its body never reads its first argument

    def get_inner_outer(self: object, base_background: Color, background: Color) -> tuple[Style, Style]:
        return inner_outer(base_background, background)

    try:  # the body must not need its first argument: one call before the swap proves it
        inner_outer(Color(0, 0, 0), Color(255, 255, 255, 0.5))
    except Exception:
        return
    method.cache_clear()  # what it holds already goes too
    # A plain function where Textual's class holds an lru_cache wrapper: the swap this module exists for.
    StylesCache.get_inner_outer = get_inner_outer  # type: ignore[method-assign, assignment]
