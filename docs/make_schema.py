"""Write docs/schema/: the JSON Schema of saved experiments and matrices, `--json` output, recordings and the
journal, made from the types that declare them (core/documents/document.py and the modules it names).

    python3 docs/make_schema.py          (after `pip install .`: the installed package is what is described)

tests/test_schema.py fails while a file here differs from what this script would write now.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from iosched.core.documents.document import published_schemas

HERE = Path(__file__).resolve().parent / "schema"


def rendered() -> dict[str, str]:
    """Each schema file's text, as committed."""
    schemas = published_schemas()
    return {name: json.dumps(schema, indent=2, ensure_ascii=False) + "\n" for name, schema in schemas.items()}


def main() -> int:
    HERE.mkdir(exist_ok=True)
    texts = rendered()
    for stale in sorted(set(p.name for p in HERE.glob("*.schema.json")) - set(texts)):
        (HERE / stale).unlink()
        print(f"removed docs/schema/{stale}")
    for name, text in texts.items():
        path = HERE / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote docs/schema/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
