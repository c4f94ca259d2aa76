"""The README is a door and docs/ the rooms: the README stays short and opens with the two commands it promises,
every link of every page leads somewhere, every page is on the contents page, prose stays readable, and every
example a docs/ script makes has its place in the page it writes to."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))


def prose(text: str) -> list[tuple[int, str]]:
    """The lines outside code blocks, numbered."""
    out, fence = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fence = not fence
        elif not fence:
            out.append((n, line))
    return out


def anchors(page: Path) -> set[str]:
    """The heading anchors GitHub makes: lower case, punctuation dropped, spaces as hyphens."""
    return {re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            for _, line in prose(page.read_text()) if (m := re.match(r"^#+ (.*)", line))}


def test_the_readme_is_short_and_opens_with_install_and_tests():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 300
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    install, tests = blocks[0], blocks[1]
    # One command that installs, puts `iosched` on the PATH (every example uses it bare), and runs it.
    assert "/opt/iosched/bin/pip install ." in install
    assert "ln -sf /opt/iosched/bin/iosched /usr/local/bin/iosched" in install
    assert install.rstrip().endswith("&& iosched")
    assert all(line.rstrip().endswith("&&") for line in install.rstrip().splitlines()[:-1])  # one command
    assert tests.strip() == "bash tests/run"
    assert "bash tests/run" in (ROOT / ".ci/run").read_text()


def test_the_install_lines_last_steps_end_well_without_a_terminal(tmp_path):
    """Piped or in a script, the README's first command ends with exit 0 after a good install and says how to open
    the TUI. Its last steps as written (the link onto the PATH, then `iosched`), the install's own paths moved into
    a folder of the test's: the environment made by `python3 -m venv` and `pip install .` is this venv."""
    import os
    import subprocess
    import sys

    install = re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)[0]
    steps = [step.strip() for step in install.replace("\n", " ").split("&&")]
    last = [step for step in steps if step.startswith(("ln ", "iosched"))]
    assert last == ["ln -sf /opt/iosched/bin/iosched /usr/local/bin/iosched", "iosched"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = " && ".join(last).replace("/opt/iosched/bin", str(Path(sys.executable).parent)) \
        .replace("/usr/local/bin", str(bin_dir))
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}  # a fresh login's
    done = subprocess.run(["bash", "-c", script], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (bin_dir / "iosched").is_symlink() and os.access(bin_dir / "iosched", os.X_OK)
    assert "run `iosched` in one" in done.stdout and "terminal" in done.stdout and done.stderr == ""


def test_every_link_leads_to_a_file_and_heading_that_exist():
    broken = []
    for page in [ROOT / "README.md", *PAGES]:
        for n, line in prose(page.read_text()):
            for target in re.findall(r"\]\(([^)\s]+)\)", line):
                if target.startswith(("http://", "https://")):
                    continue
                path, _, anchor = target.partition("#")
                dest = (page.parent / path) if path else page
                if not dest.exists() or (anchor and dest.suffix == ".md" and anchor not in anchors(dest)):
                    broken.append(f"{page.relative_to(ROOT)}:{n}: {target}")
    assert broken == []


def test_every_page_is_on_the_contents_page_and_leads_back():
    contents = (DOCS / "README.md").read_text()
    for page in PAGES:
        if page.name != "README.md":
            assert f"]({page.name})" in contents, page.name
            assert page.name == "ARCHITECTURE.md" or "[Contents](README.md)" in page.read_text(), page.name


def test_prose_lines_stay_readable():
    """No prose line over 120 characters (tables and real output may be wider); ARCHITECTURE.md is the code's map,
    with its own tables."""
    long = [f"{page.relative_to(ROOT)}:{n}" for page in [ROOT / "README.md", *PAGES] if page.name != "ARCHITECTURE.md"
            for n, line in prose(page.read_text())
            if len(line) > 120 and not line.startswith("|") and not line.startswith("![")]
    assert long == []


def test_every_example_block_has_its_script_and_every_script_its_block():
    scripts = {p: p.read_text() for p in DOCS.glob("make_*_example.py")}
    blocks = {m: page for page in PAGES for m in re.findall(r"<!-- ([\w-]+):start -->", page.read_text())}
    assert len(blocks) >= 7
    for name, page in blocks.items():
        assert f"<!-- {name}:end -->" in page.read_text(), name
        assert any(name in text for text in scripts.values()), name
    for script, text in scripts.items():
        targets = re.findall(r'put_in_page\(HERE / "([\w-]+\.md)"', text)
        assert targets, f"{script.name} writes no page"
        for target in targets:
            assert any(blocks[b].name == target for b in blocks), (script.name, target)
        assert '"README.md"' not in text, script.name


def test_each_recipe_says_how_long_it_takes():
    recipes = (DOCS / "recipes.md").read_text()
    block = re.search(r"```sh\n(.*?)```", recipes, re.S).group(1)
    for recipe in block.split("\n\n"):
        comment = " ".join(line for line in recipe.splitlines() if line.startswith("#"))
        assert "iosched compare" in recipe and re.search(r"at most|\d+ min", comment), recipe[:80]


def test_every_test_the_safety_page_names_exists():
    """docs/safety.md names a test beside each statement (`tests/…/test_x.py::test_name`, or `::test_name` after it
    for the same file): each file and each function exists, so a renamed test cannot leave a promise unproven."""
    named = 0
    last: Path | None = None
    for ref in re.findall(r"`((?:tests/[\w/]+\.py)?(?:::\w+)?)`", (DOCS / "safety.md").read_text()):
        path, _, func = ref.partition("::")
        if path:
            last = ROOT / path
            assert last.is_file(), ref
        if func:
            assert last is not None, ref
            assert re.search(rf"^def {func}\(", last.read_text(), re.MULTILINE), ref
        named += 1
    assert named >= 10


def test_the_commands_that_run_without_root_are_one_list_in_the_readme_and_the_command_line_page():
    """Both pages name the same read-only commands, each one the parser has; replay, which only reads a recording,
    among them beside record."""
    from iosched.cli.main import build_parser

    def listed(text: str) -> list[str]:
        found = re.search(r"Without root, what only reads works \((.*?)\)[;.]", " ".join(text.split()))
        assert found, "the list is gone"
        return [w.split()[0] for w in re.findall(r"`([^`]+)`", found.group(1))]

    readme, commands = listed((ROOT / "README.md").read_text()), listed((DOCS / "commands.md").read_text())
    assert readme == commands and "replay" in readme, (readme, commands)
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(readme) <= set(sub.choices)
