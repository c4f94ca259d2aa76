"""Every `iosched …` command the README and docs/ show runs as written: each is read out of the pages (the shell
blocks, the `$ ` lines of real output, the whole commands quoted in prose) and parsed by the real parser, with what
the commands check before they touch anything that a parser cannot say (`compare` needs its variants); each option
a synopsis of docs/commands.md names is one its command takes; and what a page's prose says of its example agrees
with the example."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from iosched.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_OPERATORS = {";", "&&", "||", "|", "&"}
REDIRECTS = {">", ">>", "<", "2>", "2>&1"}
# Synopsis words in prose, never a command: a placeholder for any command, alternatives, an ellipsis.
# A placeholder, an elision, or a line iosched prints ("iosched serve: refused …": a word and a colon).
NOT_A_COMMAND = re.compile(r"COMMAND|[\[\]|…]|\.\.\.|^(?:sudo )?iosched [a-z-]+:")


def fenced(text: str) -> tuple[list[tuple[str, list[tuple[int, str]]]], list[tuple[int, str]]]:
    """The page's fenced blocks (their language and numbered lines) and its prose lines."""
    blocks: list[tuple[str, list[tuple[int, str]]]] = []
    prose: list[tuple[int, str]] = []
    current: list[tuple[int, str]] | None = None
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if current is None:
                current = []
                blocks.append((line[3:].strip(), current))
            else:
                current = None
        elif current is not None:
            current.append((n, line))
        else:
            prose.append((n, line))
    return blocks, prose


def paragraphs(prose: list[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """Prose lines joined into paragraphs (a blank line or a gap for a block ends one), each with its first line."""
    held: list[str] = []
    start = last = 0
    for n, line in [*prose, (0, "")]:
        if held and (not line.strip() or n != last + 1):
            yield start, " ".join(held)
            held = []
        if line.strip():
            start = start if held else n
            held.append(line.strip())
        last = n


def logical_lines(lines: list[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """Lines joined where a backslash continues them, each with its first line's number."""
    held, start = "", 0
    for n, line in lines:
        start = start or n
        if line.rstrip().endswith("\\"):
            held += line.rstrip()[:-1] + " "
            continue
        yield start, held + line
        held, start = "", 0


def without_comment(line: str) -> str:
    """The shell line before its comment: a '#' that starts a word, outside quotes (its words may hold quotes)."""
    quote = ""
    for i, c in enumerate(line):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def iosched_argvs(line: str) -> Iterator[list[str]]:
    """The argv of each `iosched` command of a shell line (after `sudo`, before a redirection or the next
    command), comments left out."""
    lexer = shlex.shlex(without_comment(line), posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split = True
    lexer.commenters = ""  # shlex ends a word at a '#'; the shell only at a '#' that starts one
    words = [*lexer, ";"]
    command: list[str] = []
    redirected = False
    for word in words:
        if word in SHELL_OPERATORS:
            while command and command[0] == "sudo":
                command = command[1:]
            if command[:1] == ["iosched"]:
                yield command[1:]
            command, redirected = [], False
        elif word in REDIRECTS or word.endswith(">"):
            redirected = True
        elif not redirected:
            command.append(word)


def shown_commands() -> list[tuple[str, list[str]]]:
    """Every iosched command a page shows, with where: shell blocks, `$ ` lines, whole commands in prose."""
    found: list[tuple[str, list[str]]] = []
    for page in PAGES:
        blocks, prose = fenced(page.read_text())
        where = page.relative_to(ROOT)
        for language, lines in blocks:
            for n, line in logical_lines(lines):
                if language == "sh" or line.startswith("$ "):
                    found += [(f"{where}:{n}", argv) for argv in iosched_argvs(line.removeprefix("$ "))]
        for n, line in paragraphs(prose):  # a quoted command may go on to the next line
            for span in re.findall(r"`((?:sudo )?iosched [^`]+)`", line):
                argv = span.removeprefix("sudo ").split()[1:]
                # A command's name alone, or with a flag it is about, is a mention; a whole command runs.
                if NOT_A_COMMAND.search(span) or len(argv) < 2 or (argv[-1].startswith("-") and len(argv) < 3):
                    continue
                found.append((f"{where}:{n}", shlex.split(span.removeprefix("sudo "))[1:]))
    return found


COMMANDS = shown_commands()


def parse(argv: list[str]) -> argparse.Namespace:
    """The real parser's reading of ``argv``; its one sentence as an AssertionError when it refuses."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            return build_parser().parse_args(argv)
        except SystemExit as e:
            if e.code == 0:  # --version, --print-man and the like: they ran
                return argparse.Namespace(command=None)
            raise AssertionError(err.getvalue().strip()) from None


def refusal(args: argparse.Namespace) -> str | None:
    """What a command refuses before it touches anything that its parser cannot say (cli/workloads.py,
    cli/matrix.py): a compare names its variants, unless it resumes a saved one or a study file names them."""
    if args.command == "compare" and not (args.schedulers or args.resume or args.study):
        return "--schedulers is required (e.g. none,bfq)"
    return None


def test_the_pages_show_commands():
    """The reader finds what the pages hold: the README's five commands and docs/startup.md's included."""
    places = {where.split(":")[0] for where, _ in COMMANDS}
    assert {"README.md", "docs/startup.md", "docs/commands.md", "docs/recipes.md"} <= places
    assert len(COMMANDS) >= 60


@pytest.mark.parametrize("where,argv", COMMANDS, ids=[where for where, _ in COMMANDS])
def test_every_command_shown_runs_as_written(where, argv):
    args = parse(argv)
    assert refusal(args) is None, f"{where}: iosched {shlex.join(argv)}: {refusal(args)}"


def test_the_checks_refuse_what_the_commands_refuse():
    """The test's own eyes: a compare without variants, an option no command has, a missing value."""
    assert refusal(parse(["compare", "sdb", "--startup", "--background", "seq-writers-1"])) is not None
    assert refusal(parse(["compare", "sdb", "--resume", "m.json"])) is None
    for bad in (["compare", "sdb", "--schedulerz", "none,bfq"], ["capture", "--cmd", "true"], ["sett", "sda", "bfq"]):
        with pytest.raises(AssertionError):
            parse(bad)
    assert list(iosched_argvs("sudo iosched capture --cmd 'cat a#1 > /dev/null' -o x.iolog   # a note")) == [
        ["capture", "--cmd", "cat a#1 > /dev/null", "-o", "x.iolog"]]
    assert list(iosched_argvs("mkdir -p d && iosched --print-man > d/iosched.1; iosched list | head")) == [
        ["--print-man"], ["list"]]


def synopses() -> Iterator[tuple[str, str, list[str]]]:
    """docs/commands.md's synopses (its plain blocks of `iosched …` lines): the command and the options named."""
    page = ROOT / "docs/commands.md"
    blocks, _ = fenced(page.read_text())
    for language, lines in blocks:
        text = " ".join(line for _, line in lines)
        if language or not text.startswith("iosched"):
            continue
        words = text.split()
        command = words[1] if len(words) > 1 and not words[1].startswith(("-", "[")) else ""
        yield f"docs/commands.md:{lines[0][0]}", command, re.findall(r"(?<![\w-])--?[a-z][\w-]*", text)


def option_strings(command: str) -> set[str]:
    parser = build_parser()
    if command:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[command]
    return {s for action in parser._actions for s in action.option_strings}


def test_every_option_a_synopsis_names_is_its_commands():
    unknown = [f"{where}: iosched {command} {opt}" for where, command, options in synopses()
               for opt in options if opt not in option_strings(command)]
    assert list(synopses()) and unknown == []


def test_what_the_prose_says_of_an_example_is_what_the_example_says():
    """A count the prose gives of an example block on its page (Holm over N comparisons) is the example's own."""
    wrong = []
    for page in PAGES:
        blocks, prose = fenced(page.read_text())
        shown = "\n".join(line for _, lines in blocks for _, line in lines)
        for n, line in prose:
            for count in re.findall(r"Holm over (?:the )?(\d+)", line):
                if f"Holm over {count}" not in shown:
                    wrong.append(f"{page.relative_to(ROOT)}:{n}: Holm over {count}")
    assert wrong == []
