"""The CPU pane: stacked usr/sys/iowait/irq/soft/steal over time and one spark per CPU."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.style import Style

from iosched.core.base.textcharts import CPU_STACK_FIELDS, cpu_stack_column, spark_char
from iosched.core.live.rates import CpuRates
from iosched.tui.widgets.rows import RowsWidget, Runs

_CPU_KEY = "0123456"  # a CPU cell's style key by category; idle (-1) is the last
_CPU_CELL = str.maketrans({"0": "█", "1": "█", "2": "█", "3": "█", "4": "█", "5": "█", "6": "·"})


class CpuPane(RowsWidget):
    """Stacked usr/sys/iowait/irq/soft/steal for "all" over time, plus one spark per CPU."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *(f"cpu--{f}" for f in CPU_STACK_FIELDS), "cpu--title", "cpu--idle"}
    DEFAULT_CSS = """
    CpuPane { height: 6; }
    CpuPane > .cpu--usr { color: $success; }
    CpuPane > .cpu--sys { color: $error; }
    CpuPane > .cpu--iowait { color: $warning; }
    CpuPane > .cpu--irq { color: $accent; }
    CpuPane > .cpu--soft { color: $secondary; }
    CpuPane > .cpu--steal { color: $primary; }
    CpuPane > .cpu--idle { color: $text-muted; }
    CpuPane > .cpu--title { text-style: bold; }
    """

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._history: list[CpuRates | None] = []
        self._per_cpu: dict[str, CpuRates] = {}
        self._columns: dict[int, tuple[CpuRates, str]] = {}  # id(sample) -> (sample, column keys)

    def set_data(self, history: Sequence[CpuRates | None], per_cpu: dict[str, CpuRates]) -> None:
        history = list(history)[-max(1, self.size.width):]
        if history == self._history and per_cpu == self._per_cpu:
            return
        self._history = history
        self._per_cpu = per_cpu
        self.invalidate()

    def build_rows(self, width: int, height: int) -> list[Runs]:
        stack_rows = max(1, height - 2)
        # By category: the stacked fields in order, then idle last (category -1).
        styles = [self.component_style(f"cpu--{f}") for f in CPU_STACK_FIELDS] + [self.component_style("cpu--idle")]
        plain = Style()
        title = Runs()
        title.add("CPU", self.component_style("cpu--title"))
        latest = self._history[-1] if self._history else None
        for f, style in zip(CPU_STACK_FIELDS, styles):
            title.add(" ■", style)
            title.add(f"{f} {'-' if latest is None else f'{getattr(latest, f):.1f}'}", plain)
        rows = [title]
        # A column depends only on its sample: worked out once, when the sample arrives, as a string of style
        # keys (bottom row first), then only picked apart row by row as it scrolls. The history holds the
        # samples, so an id stays theirs while they are on screen.
        known, self._columns = self._columns, {}
        columns: list[str] = []
        idle = _CPU_KEY[-1] * stack_rows
        for r in self._history[-width:]:
            if r is None:
                columns.append(idle)
                continue
            hit = known.get(id(r))
            if hit is not None and hit[0] is r and len(hit[1]) == stack_rows:
                col = hit[1]
            else:
                col = "".join([_CPU_KEY[c] for c in cpu_stack_column(r._asdict(), stack_rows)])
            self._columns[id(r)] = (r, col)
            columns.append(col)
        pad = width - len(columns)
        for row in reversed(range(stack_rows)):
            runs = Runs()
            runs.add(" " * pad, plain)
            keys = "".join([col[row] for col in columns])
            runs.add_keyed(keys.translate(_CPU_CELL), keys, styles)
            rows.append(runs)
        per_cpu = Runs()
        for key in sorted((k for k in self._per_cpu if k != "all"), key=int):
            busy = 100.0 - self._per_cpu[key].idle
            per_cpu.add(f"{key}:", plain)
            per_cpu.add(spark_char(busy), styles[0])
            per_cpu.add(f"{busy:3.0f}% ", plain)
        rows.append(per_cpu)
        return rows
