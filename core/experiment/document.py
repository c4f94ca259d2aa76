"""What an experiment's documents are to the code: JSON objects, as saved.

An experiment, a matrix, one run, a verdict, a judgement: each is a JSON object (string keys) that saved.py
checks whole when read back and results.py writes. They are plain dicts for now; ``Doc`` names what a dict
holds, so they can become typed records in one place later.
"""

from __future__ import annotations

from typing import Any

Doc = dict[str, Any]  # an experiment's document or a part of it (a run, a verdict), as saved
