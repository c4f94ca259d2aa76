"""What every writer of documents needs apart from their declared types (core/documents/document.py, which cost
about 35 ms to import): the schema version; and ``Doc``, the plain dict a fleet's documents still are while they
are written (an experiment, a matrix and everything in them are the declared types themselves).
"""

from __future__ import annotations

from typing import Any

SCHEMA_VERSION = 1  # "version" of a saved experiment or matrix; a reader refuses another

Doc = dict[str, Any]  # a fleet's document or a part of it, as saved (until it is written as its declared type)
