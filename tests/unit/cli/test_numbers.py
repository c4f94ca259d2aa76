"""The parser every command shares (cli/numbers.py): numbers checked at the edge, and options and positionals
in any order (`record F -i 0.5 loop0 --duration 1`, as docs/commands.md writes it): each is parsed in every
placement of its options among its positionals and must give what the plain order gives. The table names every
command: a new one fails here until it is added."""

from __future__ import annotations

import argparse

import pytest

from iosched.cli.main import build_parser

from conftest import one_sentence_exit_2

# command -> (positionals, options with their values as they are typed); two values for a `*` positional, so
# an option can fall between them.
TABLE: dict[str, tuple[list[str], list[list[str]]]] = {
    "list": ([], [["--json"], ["--all"]]),
    "set": (["loop0", "bfq"], []),
    "restore": ([], [["--list"]]),
    "watch": (["loop0", "loop1"], [["-i", "0.5"], ["-c", "3"], ["--json"]]),
    "demo": ([], [["--size", "1G"], ["--dir", "/var/tmp"]]),
    "jobs": ([], [["--json"]]),
    "run": (["loop0"], [["--job", "randread-q16t2"], ["--runtime", "2"], ["--json"]]),
    "compare": (["loop0"], [["--schedulers", "none,bfq"], ["--job", "randread-q16t2"], ["--repeat", "2"]]),
    "report": (["saved.json"], [["--json"], ["--alpha", "0.1"]]),
    "record": (["rec.jsonl", "loop0", "loop1"], [["-i", "0.5"], ["--duration", "1"]]),
    "export": (["loop0", "loop1"], [["--listen", "127.0.0.1:9477"], ["-i", "0.5"], ["--trace"]]),
    "capture": (["loop0"], [["-o", "c.iolog"], ["--duration", "5"], ["--max-size", "10M"]]),
    "replay": (["rec.jsonl"], []),
    "tune": (["loop0", "nr_requests=64", "read_ahead_kb=128"], [["--json"]]),
    "persist": (["loop0", "bfq"], [["--by", "serial"], ["--dry-run"], ["--set", "nr_requests=64"]]),
    "serve": ([], [["--port", "8001"], ["--allow-writes"]]),
    "latency": (["loop0", "loop1"], [["-i", "0.5"], ["-c", "2"], ["--json"]]),
    "top": (["loop0"], [["-i", "0.5"], ["-n", "5"], ["--json"]]),
    "advise": (["loop0"], [["--goal", "interactive"], ["--budget", "15m"], ["--candidates", "bfq"], ["--yes"]]),
    "fleet-host": (["loop0"], [["--schedulers", "none,bfq"], ["--job", "randread-q16t2"], ["--session", "ab" * 8]]),
}


def commands() -> set[str]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def placements(positionals: list[str], options: list[list[str]]) -> list[list[str]]:
    """The options all before, all after, and each one in every gap between the positionals."""
    flat = [s for o in options for s in o]
    out = [flat + positionals, positionals + flat]
    for i, opt in enumerate(options):
        rest = [s for j, o in enumerate(options) if j != i for s in o]
        for gap in range(len(positionals) + 1):
            out.append(positionals[:gap] + opt + positionals[gap:] + rest)
            out.append(rest + positionals[:gap] + opt + positionals[gap:])
    return out


def parsed(argv: list[str]) -> dict:
    args = build_parser().parse_args(argv)
    return {k: v for k, v in vars(args).items() if k != "func"}


def test_the_table_names_every_command():
    assert set(TABLE) == commands()


@pytest.mark.parametrize("command", sorted(TABLE))
def test_options_and_positionals_intermixed(command):
    positionals, options = TABLE[command]
    plain = parsed([command, *positionals, *(s for o in options for s in o)])
    for given in placements(positionals, options):
        assert parsed([command, *given]) == plain, given


def test_an_unknown_option_anywhere_is_still_one_sentence(capsys):
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["record", "rec.jsonl", "--bogus", "loop0"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("iosched: unrecognized arguments: --bogus")


@pytest.mark.parametrize(("args", "why"), [
    (("compare", "loop0", "--schedulers", "none,bfq", "--job", "4k-read", "--settle", "-5"), "--settle: must be"),
    (("compare", "loop0", "--schedulers", "none,bfq", "--job", "4k-read", "--settle", "nan"), "'nan' is not a number"),
    (("compare", "loop0", "--schedulers", "none,bfq", "--job", "4k-read", "--repeat", "0"), "--repeat: must be"),
    (("compare", "loop0", "--schedulers", "none,bfq", "--job", "4k-read", "--alpha", "inf"), "--alpha: 'inf' is not"),
    (("compare", "loop0", "--schedulers", "none,bfq", "--job", "4k-read", "--runtime", "nan"), "--runtime"),
    (("run", "loop0", "--job", "4k-read", "--size", "inf"), "--size: 'inf' is not a size"),
    (("run", "loop0", "--job", "4k-read", "--size=-1G"), "--size: '-1G' is not a size"),
    (("run", "loop0", "--job", "4k-read", "--size", "0"), "--size: the size must be positive"),
    (("watch", "-c", "0"), "--count: must be at least 1"),
    (("watch", "-c", "-5"), "--count: must be at least 1"),
    (("watch", "-i", "0"), "--interval: must be at least 0.05"),
    (("watch", "-i", "nan"), "--interval: 'nan' is not a number"),
    (("report", "x.json", "--alpha", "2"), "--alpha: must be at least 0.001 and below 0.5"),
    # Issue 44: a tiny alpha ran every run, then raised OverflowError (1e-10) or ValueError (1e-320).
    (("report", "x.json", "--alpha", "1e-10"), "--alpha: must be at least 0.001 and below 0.5, not 1e-10"),
    (("report", "x.json", "--alpha", "1e-320"), "--alpha: must be at least 0.001"),
    (("compare", "loop0", "--schedulers", "none,bfq", "--job", "4k-read", "--alpha", "1e-10"), "--alpha: must be"),
    (("advise", "loop0", "--alpha", "1e-320"), "--alpha: must be at least 0.001"),
    (("compare", "loop0", "--schedulers", "none,bfq", "--hosts", "a,b", "--alpha", "1e-320"), "--alpha: must be"),
    # Durations are digits and one unit: a typo or a paste is refused, not read as something else.
    (("advise", "loop0", "--budget", "10mm"), "--budget: '10mm' is not a duration"),
    (("advise", "loop0", "--budget", " 5m"), "--budget: ' 5m' is not a duration"),
    (("advise", "loop0", "--budget", "５m"), "--budget: '５m' is not a duration"),
    (("advise", "loop0", "--budget", "1_000s"), "--budget: '1_000s' is not a duration"),
    (("compare", "loop0", "--schedulers", "none,bfq", "--runtime", "1_0"), "--runtime: '1_0' is not a duration"),
    (("capture", "loop0", "-o", "x", "--duration", "5mm"), "--duration: '5mm' is not a duration"),
    (("capture", "loop0", "-o", "x", "--max-size", "1k"), "--max-size: a capture's bound must be at least 4 KiB"),
    (("compare", "loop0", "--schedulers", "none,bfq", "--max-runs", "1e9"), "--max-runs: '1e9' is not a whole"),
    (("compare", "loop0", "--schedulers", "none,bfq", "--startup-cap", "inf"), "--startup-cap: 'inf' is not a"),
    (("compare", "loop0", "--schedulers", "none,bfq", "--startup-cap", "1"), "--startup-cap: must be at least 2"),
    (("advise", "loop0", "--candidates", ",".join(["bfq"] * 200)), "--candidates names 200 variants: at most 15"),
    (("advise", "loop0", "--candidates", "bfq:../../../etc/x=1"), "is not a setting's name"),
    (("record", "/nonexistent/x", "--duration", "-1"), "--duration: must be above 0"),
    (("demo", "--size", "nan"), "--size: 'nan' is not a size"),
])
def test_numbers_are_checked_at_the_edge(args, why):
    assert why in one_sentence_exit_2(*args)
