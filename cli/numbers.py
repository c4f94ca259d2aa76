"""Numbers from the command line, checked at the edge: finite, in range, one sentence when not."""

from __future__ import annotations

import argparse
import importlib
import math
import sys
from collections.abc import Callable
from typing import NoReturn


def _plain(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def number(lo: float, hi: float, *, integer: bool = False, lo_open: bool = False,
           hi_open: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number (whole when ``integer``) between ``lo`` and ``hi``."""
    lo_word, hi_word = ("above" if lo_open else "at least"), ("below" if hi_open else "at most")

    def parse(text: str) -> float:
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            kind = "a whole number" if integer else "a number"
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not {kind}") from None
        if not math.isfinite(value) or (value <= lo if lo_open else value < lo) or \
                (value >= hi if hi_open else value > hi):
            raise argparse.ArgumentTypeError(f"must be {lo_word} {_plain(lo)} and {hi_word} {_plain(hi)}, "
                                             f"not {text[:40]}")
        return value
    return parse


class _IntermixedCommands(argparse._SubParsersAction):
    """A command's options and positionals in any order: `record F -i 0.5 loop0` as well as `record -i 0.5 F
    loop0`. Plain argparse ends a `nargs="*"` positional at the first option and leaves what follows over."""

    def __call__(self, parser, namespace, values, option_string=None):
        name, rest = values[0], values[1:]
        if self.dest is not argparse.SUPPRESS:
            setattr(namespace, self.dest, name)
        # argparse checked the name against the choices (the command names) before calling.
        sub, extras = self._name_parser_map[name].parse_known_intermixed_args(rest, None)
        for key, value in vars(sub).items():
            setattr(namespace, key, value)
        if extras:  # left for the top parser to name as unrecognized
            vars(namespace).setdefault(argparse._UNRECOGNIZED_ARGS_ATTR, []).extend(extras)


class OneSentenceParser(argparse.ArgumentParser):
    """Bad arguments are one sentence on stderr and exit 2, like every other bad input; every command takes
    its options and positionals intermixed."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _IntermixedCommands)

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def lazy_command(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """A subcommand's function, imported when it runs: parsing `iosched` arguments loads no command."""

    def run(args: argparse.Namespace) -> int:
        return getattr(importlib.import_module(module), name)(args)

    run.__qualname__ = f"{module}.{name}"
    return run
