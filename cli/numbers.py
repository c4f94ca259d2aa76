"""Numbers from the command line, checked at the edge: finite, in range, one sentence when not."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from typing import NoReturn, TypeVar

from iosched.core.base.errors import BadInput
from iosched.core.documents import params

T = TypeVar("T")


def flag_type(parse: Callable[[object], T]) -> Callable[[str], T]:
    """A parser of core/documents/params.py as an argparse type: its reason becomes argparse's one sentence, and its
    range (``range``: "at least 1 and at most 1000") is stated in the flag's help."""

    def typed(text: str) -> T:
        try:
            return parse(text)
        except BadInput as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    typed.__name__ = getattr(parse, "__name__", "value")
    typed.range = getattr(parse, "range", None)  # type: ignore[attr-defined]
    return typed


def number(lo: float, hi: float, *, integer: bool = False, lo_open: bool = False,
           hi_open: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number (whole when ``integer``) between ``lo`` and ``hi``."""
    return flag_type(params.number(lo, hi, integer=integer, lo_open=lo_open, hi_open=hi_open))


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

    def add_argument(self, *args, **kwargs):
        """An option whose parser has a range says it in its help: "(default 1; at least 0 and at most 3600)"."""
        stated = getattr(kwargs.get("type"), "range", None)
        text = kwargs.get("help")
        if stated and isinstance(text, str) and text != argparse.SUPPRESS and stated not in text:
            kwargs["help"] = f"{text[:-1]}; {stated})" if text.endswith(")") else f"{text} ({stated})"
        return super().add_argument(*args, **kwargs)

    def _check_value(self, action: argparse.Action, value: object) -> None:
        """A command that is no command is answered with the commands a person uses: those with a help line (the
        hidden `fleet-host`, which a controller runs over SSH, stays hidden here too)."""
        if isinstance(action, argparse._SubParsersAction) and action.choices is not None \
                and value not in action.choices:
            shown = ", ".join(repr(a.dest) for a in action._choices_actions)
            raise argparse.ArgumentError(action, f"invalid choice: {value!r} (choose from {shown})")
        super()._check_value(action, value)

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def lazy_command(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """A subcommand's function, imported when it runs: parsing `iosched` arguments loads no command."""

    def run(args: argparse.Namespace) -> int:
        return getattr(importlib.import_module(module), name)(args)

    run.__qualname__ = f"{module}.{name}"
    return run
