"""iosched core: everything that is true without a screen.

Readers take a ``root`` path (default ``/``) so a fixture tree can stand in for ``/proc`` and ``/sys``.
Nothing here imports Textual or Rich.
"""
