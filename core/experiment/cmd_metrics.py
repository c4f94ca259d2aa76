"""Your application's own figure: metrics read from a timed command's output.

`compare --cmd "pgbench …" --cmd-metric 'tps=tps = ([0-9.]+):higher'` reads, after each run, the last match of
the regular expression in what the command printed (stdout and stderr together); its first group, or the whole
match when it has none, is the run's value of that metric. A run whose output lacks it is invalid, with the reason,
and stays out of the statistics. ``higher``/``lower`` says which way is better, so that a verdict can say "better"
or "worse"; without it the verdict says only which way the figure went.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from iosched.core.base.errors import BadInput
from iosched.core.experiment.metrics import CMD_METRIC, METRIC_NAMES, ROLE_METRIC_NAMES

# Prefixes of the figures iosched writes into each run itself (dev_iops, cpu_irq, cmd_usr_s, …).
_OURS = ("dev_", "cpu_", "cmd_", "bg_", "tracer_")
MAX_PATTERN = 500
MAX_METRICS = 8
OUTPUT_TAIL = 1 << 20  # what is searched: the last MiB of the output (the figures come at the end)

Better = Literal["higher", "lower"]


@dataclass(frozen=True)
class CmdMetric:
    name: str
    pattern: str
    better: Better | None = None

    @property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern, re.MULTILINE)

    def to_json(self) -> dict[str, str | None]:
        return {"name": self.name, "pattern": self.pattern, "better": self.better}

    def read(self, output: str) -> float | str:
        """The value in ``output`` (its last match), or why there is none, in words."""
        found = None
        for m in self.regex.finditer(output):
            found = m
        if found is None:
            return f"the command's output has no {self.name} (no match for {self.pattern!r})"
        text = found.group(1) if self.regex.groups else found.group(0)
        try:
            value = float((text or "").strip())
        except ValueError:
            return f"the command's {self.name} is not a number: {text[:40]!r}"
        if not math.isfinite(value):
            return f"the command's {self.name} is not a finite number: {text[:40]!r}"
        return value


def check_name(name: str) -> str | None:
    """Why ``name`` cannot name a command's figure, or None."""
    if not CMD_METRIC.fullmatch(name):
        return "a name is a lower-case letter then up to 31 letters, digits or _"
    if name in METRIC_NAMES or name in ROLE_METRIC_NAMES or name.startswith(_OURS):
        return "iosched measures a figure of that name itself"
    return None


def parse_cmd_metric(text: str) -> CmdMetric:
    """``NAME=REGEX[:higher|lower]`` as given to --cmd-metric; BadInput with one sentence otherwise."""
    name, sep, rest = text.partition("=")
    if not sep or not rest:
        raise BadInput(f"--cmd-metric {text!r}: give NAME=REGEX[:higher|lower], e.g. 'tps=tps = ([0-9.]+):higher'")
    why = check_name(name)
    if why:
        raise BadInput(f"--cmd-metric {text!r}: {name!r} cannot name it: {why}")
    better: Better | None = None
    if rest.endswith(":higher"):
        rest, better = rest[: -len(":higher")], "higher"
    elif rest.endswith(":lower"):
        rest, better = rest[: -len(":lower")], "lower"
    why = check_pattern(rest)
    if why:
        raise BadInput(f"--cmd-metric {text!r}: {why}")
    return CmdMetric(name, rest, better)


def check_pattern(pattern: str) -> str | None:
    """Why ``pattern`` cannot read a figure, or None."""
    if not pattern:
        return "the regular expression is empty"
    if len(pattern) > MAX_PATTERN:
        return f"the regular expression is longer than {MAX_PATTERN} characters"
    try:
        compiled = re.compile(pattern, re.MULTILINE)
    except re.error as e:
        return f"{pattern!r} is not a regular expression ({e})"
    if compiled.groups > 1:
        return f"{pattern!r} has {compiled.groups} groups: keep one, around the number (others as (?:…))"
    return None


def parse_cmd_metrics(texts: list[str] | None) -> list[CmdMetric]:
    got = [parse_cmd_metric(t) for t in texts or []]
    if len(got) > MAX_METRICS:
        raise BadInput(f"--cmd-metric: at most {MAX_METRICS}")
    names = [m.name for m in got]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup:
        raise BadInput(f"--cmd-metric: {dup} is named twice")
    return got


def read_figures(metrics: list[CmdMetric], output: str) -> tuple[dict[str, float], str | None]:
    """Each metric's value in the output, and why the run is invalid (the first figure missing), or None."""
    values: dict[str, float] = {}
    why = None
    for m in metrics:
        got = m.read(output)
        if isinstance(got, str):
            why = why or got
        else:
            values[m.name] = got
    return values, why
