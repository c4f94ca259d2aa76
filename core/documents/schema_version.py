"""What every writer of experiment documents needs, apart from their declared types (core/documents/document.py,
which cost about 35 ms to import): the schema version, and ``Doc``, what a document is to the code today.

An experiment, a matrix, one run, a verdict, a judgement: each is a JSON object (string keys) that saved.py checks
whole when read back and core/experiment/results.py writes. They are plain dicts for now; ``Doc`` names what a
dict holds, so they can become the declared types in one place later.
"""

from __future__ import annotations

from typing import Any

SCHEMA_VERSION = 1  # "version" of a saved experiment or matrix; a reader refuses another

Doc = dict[str, Any]  # an experiment's document or a part of it (a run, a verdict), as saved
