"""The schema version of every document iosched saves (core/documents/document.py declares the documents, each
carrying it as its ``"version"``).
"""

from __future__ import annotations

SCHEMA_VERSION = 1  # "version" of a saved experiment or matrix; a reader refuses another
