#!/usr/bin/env python3
"""What the declared documents cost at import, as dataclasses (core/documents/document.py) and as the same shape
in msgspec Structs, and what reading a saved matrix into them costs.

Each figure is the median over fresh interpreters (``python -X importtime``, the module's own time and its
cumulative one). The msgspec shape is made from the dataclasses themselves (every class reachable from the
published documents: same fields, defaults, bounds as ``msgspec.Meta``), written to a temporary module, so the two
cannot drift. Without msgspec installed (``pip install msgspec``: not a dependency of iosched) only the dataclass
figures are printed. Figures, not assertions.
Usage: python3 bench/document_import.py [--runs 21]
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import typing
from pathlib import Path
from typing import get_args, get_origin, get_type_hints

from iosched.core.base.schema import NON_FINITE, Keywords

ROOT = Path(__file__).resolve().parent.parent
SAVED = ROOT / "tests/data/saved"
DOCUMENT = "iosched.core.documents.document"


def importtime(statement: str, modules: list[str], runs: int,
               path: str | None = None) -> dict[str, tuple[float, float]]:
    """module -> (median self ms, median cumulative ms) of ``statement`` over ``runs`` fresh interpreters."""
    seen: dict[str, list[tuple[int, int]]] = {m: [] for m in modules}
    env = {**os.environ, "PYTHONPATH": path} if path else None
    for _ in range(runs):
        err = subprocess.run([sys.executable, "-X", "importtime", "-c", statement], capture_output=True, text=True,
                             check=True, env=env).stderr
        for line in err.splitlines():
            if not line.startswith("import time:") or "|" not in line:
                continue
            own, total, name = (x.strip() for x in line.removeprefix("import time:").split("|"))
            if name.strip() in seen:
                seen[name.strip()].append((int(own), int(total)))
    return {m: (statistics.median(o for o, _ in v) / 1000, statistics.median(t for _, t in v) / 1000)
            for m, v in seen.items() if v}


def wall_ms(statement: str, runs: int, path: str | None = None) -> float:
    """Median wall time of a fresh interpreter running ``statement``, less one running nothing."""
    env = {**os.environ, "PYTHONPATH": path} if path else None

    def one(code: str) -> float:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=env)
        return time.perf_counter() - t

    bare = statistics.median(one("pass") for _ in range(runs))
    return (statistics.median(one(statement) for _ in range(runs)) - bare) * 1000


# --- the same shape in msgspec ----------------------------------------------------------------------------------


def _classes(roots: list[object]) -> list[type]:
    """Every dataclass reachable from ``roots``, each after the classes its fields name (a module's order)."""
    out: list[type] = []

    def visit(tp: object) -> None:
        for a in get_args(tp):
            visit(a)
        if isinstance(tp, type) and dataclasses.is_dataclass(tp) and tp not in out:
            for base in tp.__mro__[1:]:
                if dataclasses.is_dataclass(base):
                    visit(base)
            for hint in get_type_hints(tp, include_extras=True).values():
                visit(hint)
            out.append(tp)

    for r in roots:
        visit(r)
    return out


def _spelled(tp: object) -> str:
    origin, args = get_origin(tp), get_args(tp)
    if origin is typing.Annotated:
        meta = {"minimum": "ge", "maximum": "le", "exclusiveMinimum": "gt", "exclusiveMaximum": "lt",
                "minItems": "min_length", "maxItems": "max_length", "minLength": "min_length"}
        kw = [f"{meta[k]}={v!r}" for extra in args[1:] if isinstance(extra, Keywords) for k, v in extra.items
              if k in meta]
        if any(extra is NON_FINITE for extra in args[1:]) or not kw:
            return _spelled(args[0])
        return f"Annotated[{_spelled(args[0])}, msgspec.Meta({', '.join(kw)})]"
    if origin is typing.Literal:
        return f"Literal[{', '.join(repr(a) for a in args)}]"
    if origin in (typing.Union, __import__("types").UnionType):
        return " | ".join(_spelled(a) for a in args)
    if origin in (list, tuple, dict):
        return f"{origin.__name__}[{', '.join('...' if a is Ellipsis else _spelled(a) for a in args)}]"
    if tp is type(None):
        return "None"
    return tp.__name__ if isinstance(tp, type) else repr(tp)


def msgspec_module(roots: list[object]) -> str:
    lines = ["from __future__ import annotations", "from typing import Annotated, Literal", "import msgspec", ""]
    for cls in _classes(roots):
        bases = [b.__name__ for b in cls.__bases__ if dataclasses.is_dataclass(b)] or ["msgspec.Struct"]
        lines.append(f"class {cls.__name__}({', '.join(bases)}, frozen=True, kw_only=True):")
        hints = get_type_hints(cls, include_extras=True)
        own = [f for f in dataclasses.fields(cls) if f.name in inspect.get_annotations(cls)]
        for f in own:
            default = "" if f.default is dataclasses.MISSING else f" = {f.default!r}"
            if f.default_factory is not dataclasses.MISSING:
                default = f" = msgspec.field(default_factory={type(f.default_factory()).__name__})"
            lines.append(f"    {f.name}: {_spelled(hints[f.name])}{default}")
        if not own:
            lines.append("    pass")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=21)
    args = p.parse_args()
    mods = [DOCUMENT, "iosched.core.kernel.device_doc", "iosched.core.live.recording_lines",
            "iosched.core.settings.journal", "iosched.core.base.schema", "iosched.core.base.decode"]
    print(f"python {sys.version.split()[0]}, median of {args.runs} fresh interpreters (-X importtime)")
    for m, (own, total) in importtime(f"import {DOCUMENT}", mods, args.runs).items():
        print(f"  dataclasses  {m:<36} self {own:6.1f} ms  cumulative {total:6.1f} ms")
    print(f"  dataclasses  wall time of `import {DOCUMENT}`: {wall_ms(f'import {DOCUMENT}', args.runs):.1f} ms")

    from iosched.core.base.decode import decode
    from iosched.core.documents.document import ExperimentDoc, MatrixDoc, published_schemas  # noqa: F401

    matrix = json.loads((SAVED / "matrix.json").read_text())
    t = time.perf_counter()
    for _ in range(50):
        decode(MatrixDoc, matrix)
    ms_each = (time.perf_counter() - t) / 50 * 1000
    print(f"  dataclasses  decode(MatrixDoc, tests/data/saved/matrix.json): {ms_each:.2f} ms")

    try:
        import msgspec
    except ImportError:
        print("  msgspec is not installed: no msgspec figures (pip install msgspec)")
        return
    from iosched.core.live.recording_lines import RecordingLine
    from iosched.core.settings.journal import JournalFile

    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "msgspec_documents.py").write_text(msgspec_module([ExperimentDoc, MatrixDoc, RecordingLine,
                                                                     JournalFile]))
        for m, (own, total) in importtime("import msgspec_documents", ["msgspec", "msgspec_documents"], args.runs,
                                          tmp).items():
            print(f"  msgspec      {m:<36} self {own:6.1f} ms  cumulative {total:6.1f} ms")
        print(f"  msgspec      wall time of `import msgspec_documents`: "
              f"{wall_ms('import msgspec_documents', args.runs, tmp):.1f} ms")
        sys.path.insert(0, tmp)
        import msgspec_documents as ms

        try:
            msgspec.convert(matrix, ms.MatrixDoc)
        except TypeError as e:  # a union of Structs must be tagged: the format would have to change
            print(f"  msgspec      cannot read the matrix as it is saved: {e}")


if __name__ == "__main__":
    main()
