"""Your application's own figure: metrics read from a timed command's output.

`compare --cmd "pgbench …" --cmd-metric 'tps=tps = ([0-9.]+):higher'` reads, after each run, the last match of
the regular expression in what the command printed (stdout and stderr together); its first group, or the whole
match when it has none, is the run's value of that metric. A run whose output lacks it, or whose figure is not a
number in a figure's range (core/base/figures.py), is invalid, with the reason, and stays out of the statistics.
``higher``/``lower`` says which way is better, so that a verdict can say "better" or "worse"; without it the verdict
says only which way the figure went.

The patterns run in a child process with a deadline (core/experiment/pattern_search.py): one that backtracks
without end makes its run invalid ("the pattern … took longer than 5 s on the command's output"), never a hung
experiment; and the flag refuses one that does so on a few short probe lines before anything runs.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Literal

from iosched.core.base.errors import BadInput, shown
from iosched.core.base.figures import figure_fault
from iosched.core.documents.document import CmdMetricDoc
from iosched.core.documents.params import MAX_METRICS, check_name, check_pattern
from iosched.core.experiment.pattern_child import MAX_TEXT

OUTPUT_TAIL = 1 << 20  # what is searched: the last MiB of the output (the figures come at the end)

Better = Literal["higher", "lower"]


@dataclass(frozen=True)
class CmdMetric:
    name: str
    pattern: str
    better: Better | None = None

    def doc(self) -> CmdMetricDoc:
        return CmdMetricDoc(name=self.name, pattern=self.pattern, better=self.better)

    def read(self, output: str) -> float | str:
        """The value in ``output`` (its last match), or why there is none, in words."""
        values, why = read_figures([self], output)
        return values.get(self.name, why or "")

    def figure(self, text: str | None) -> float | str:
        """The value of the last match's text (None: no match), or why there is none, in words."""
        if text is None:
            return f"the command's output has no {self.name} (no match for {self.pattern!r})"
        if len(text) > MAX_TEXT:
            return f"the command's {self.name} is not a number: {shown(text)}"
        try:
            value = float(text.strip())
        except ValueError:
            return f"the command's {self.name} is not a number: {text[:40]!r}"
        if not math.isfinite(value):
            return f"the command's {self.name} is not a finite number: {text[:40]!r}"
        why = figure_fault(value)
        return value if why is None else f"the command's {self.name} {why}"


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


def parse_cmd_metrics(texts: list[str] | None, probe: bool = True) -> list[CmdMetric]:
    """Each --cmd-metric; ``probe``: the patterns tried on short probe lines too (a child process, ~20 ms), and one
    that backtracks without bound there refused."""
    got = [parse_cmd_metric(t) for t in texts or []]
    if len(got) > MAX_METRICS:
        raise BadInput(f"--cmd-metric: at most {MAX_METRICS}")
    names = [m.name for m in got]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup:
        raise BadInput(f"--cmd-metric: {dup} is named twice")
    if not (probe and got):
        return got
    # Imported here: the child's machinery (fio's death signal, the experiment's Cancelled) is not the parser's.
    from iosched.core.experiment.pattern_search import PROBE_DEADLINE_S, PROBE_LENGTH, slow_pattern

    slow = slow_pattern([m.pattern for m in got])
    if slow is not None:
        m = next(m for m in got if m.pattern == slow)
        raise BadInput(f"--cmd-metric {m.name}={shown(slow, 60)}: the regular expression takes longer than "
                       f"{PROBE_DEADLINE_S:g} s on a line of {PROBE_LENGTH} repeated characters, so it would hold "
                       "every run: repeats inside repeats, such as (a+)+, backtrack without end")
    return got


def read_figures(metrics: list[CmdMetric], output: str, cancelled: threading.Event | None = None,
                 ) -> tuple[dict[str, float], str | None]:
    """Each metric's value in the output, and why the run is invalid (the first figure missing or out of range, or
    a pattern that took longer than its deadline), or None. Cancelled when ``cancelled`` is set meanwhile."""
    from iosched.core.experiment.pattern_search import RUN_DEADLINE_S, search

    if not metrics:
        return {}, None
    found = search([m.pattern for m in metrics], [output], RUN_DEADLINE_S, cancelled)
    values: dict[str, float] = {}
    why = None
    for m, texts in zip(metrics, found.found, strict=False):
        got = m.figure(texts[0])
        if isinstance(got, str):
            why = why or got
        else:
            values[m.name] = got
    if found.slow is not None:
        slow = metrics[found.slow]
        why = why or (f"the pattern of {slow.name} ({shown(slow.pattern, 60)}) took longer than {RUN_DEADLINE_S:g} s "
                      "on the command's output, so its figure was not read")
    elif found.failed is not None:
        why = why or f"the command's figures were not read: {found.failed}"
    return values, why
