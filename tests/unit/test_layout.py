"""The layout that lets a reader find things: every module of core/ has its test file or says, in tests/README.md,
why not; every exception to an import contract says why, and one that excuses no import any more is an error."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
# A row of tests/README.md's table of modules without a test file: | `core/AREA/MODULE.py` | why, and where |
LISTED_ROW = re.compile(r"^\| `(core/[^`]+\.py)` \| (.*) \|$")
NAMED_TEST = re.compile(r"`((?:unit|real|tui|browser)/[^`]+\.py)`")


def core_modules() -> set[str]:
    return {p.relative_to(ROOT).as_posix() for p in (ROOT / "core").rglob("*.py")
            if p.name != "__init__.py" and "__pycache__" not in p.parts}


def own_test(module: str) -> Path:
    """core/AREA/MODULE.py is tested in tests/unit/AREA/test_MODULE.py."""
    area, name = Path(module).parts[1], Path(module).stem
    return TESTS / "unit" / area / f"test_{name}.py"


def listed() -> dict[str, str]:
    """tests/README.md's modules without a test file of their own, each with its reason."""
    rows: dict[str, str] = {}
    for line in (TESTS / "README.md").read_text().splitlines():
        if m := LISTED_ROW.match(line):
            assert m.group(1) not in rows, f"tests/README.md lists {m.group(1)} twice"
            rows[m.group(1)] = m.group(2).strip()
    return rows


def faults(modules: set[str], reasons: dict[str, str]) -> list[str]:
    """What to do so that every module has its test file or a reason, and every reason is still needed."""
    out = [f"{m} has no test file of its own: write {own_test(m).relative_to(ROOT)}, or list it in tests/README.md "
           "with the reason" for m in sorted(modules) if not own_test(m).exists() and m not in reasons]
    for module, why in sorted(reasons.items()):
        if module not in modules:
            out.append(f"tests/README.md lists {module}, which is gone: remove its line")
        elif own_test(module).exists():
            out.append(f"tests/README.md lists {module}, which has {own_test(module).relative_to(ROOT)}: remove its "
                       "line")
        if len(why) < 10:
            out.append(f"tests/README.md gives no reason for {module}")
        out += [f"tests/README.md names tests/{named} for {module}: there is none"
                for named in NAMED_TEST.findall(why) if not (TESTS / named).is_file()]
    return out


def test_every_core_module_has_its_test_file_or_a_reason() -> None:
    modules = core_modules()
    assert "core/live/sampler.py" in modules and len(modules) > 100
    assert faults(modules, listed()) == []


def test_a_module_without_either_and_a_line_no_longer_needed_are_named() -> None:
    modules, reasons = core_modules(), listed()
    assert faults(modules | {"core/live/not_a_module.py"}, reasons) == [
        "core/live/not_a_module.py has no test file of its own: write tests/unit/live/test_not_a_module.py, or list "
        "it in tests/README.md with the reason"]
    assert faults(modules, {**reasons, "core/live/sampler.py": "an old reason"}) == [
        "tests/README.md lists core/live/sampler.py, which has tests/unit/live/test_sampler.py: remove its line"]
    gone = next(iter(reasons))
    assert faults(modules - {gone}, reasons) == [f"tests/README.md lists {gone}, which is gone: remove its line"]
    assert faults(modules, {**reasons, gone: "see `unit/no_such_test.py`"}) == [
        f"tests/README.md names tests/unit/no_such_test.py for {gone}: there is none"]


def contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def test_every_import_contract_exception_says_why_and_fails_when_it_matches_nothing() -> None:
    with_ignores = [c for c in contracts() if c.get("ignore_imports")]
    assert with_ignores
    for contract in with_ignores:
        assert contract.get("unmatched_ignore_imports_alerting") == "error", contract["name"]
    # Each ignored import's line in pyproject.toml has its comment right above it.
    lines = (ROOT / "pyproject.toml").read_text().splitlines()
    ignores = {i for c in with_ignores for i in c["ignore_imports"]}
    for ignored in ignores:
        (at,) = [n for n, line in enumerate(lines) if line.strip() == f'"{ignored}",']
        assert lines[at - 1].strip().startswith("#"), f"the ignore {ignored!r} in pyproject.toml says not why"


def test_lint_imports_fails_on_an_ignore_that_matches_no_import(tmp_path: Path) -> None:
    """The installed import-linter honours the setting: a contract whose ignore excuses nothing is broken."""
    text = (ROOT / "pyproject.toml").read_text()
    kept = '    "iosched.core.present.charts -> plotext",\n'
    assert kept in text
    config = tmp_path / "pyproject.toml"
    config.write_text(text.replace(kept, kept + '    "iosched.core.base.units -> plotext",\n'))
    lint_imports = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint_imports
    r = subprocess.run([lint_imports, "--config", str(config), "--no-cache"], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode != 0
    assert "No matches for ignored import iosched.core.base.units -> plotext" in r.stdout + r.stderr
