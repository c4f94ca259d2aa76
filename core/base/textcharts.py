"""Cheap terminal charts: braille line charts and stacked CPU columns, as pure functions of numbers.

A full plotext frame costs 25-100 ms at 200x50; these cost well under a millisecond for a pane, so live
panes can redraw every tick. plotext is meant for detailed, one-off result charts, never for live panes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

# Braille dot bits by (x, y) inside a 2x4 cell, y counted from the top.
_DOT = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))
BRAILLE_BASE = 0x2800


def nice_ceiling(value: float) -> float:
    """A round axis maximum at or above ``value``: 1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten."""
    if value <= 0 or math.isnan(value):
        return 1.0
    exp = math.floor(math.log10(value))
    for step in (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0):
        top = step * float(10**exp)  # int ** int is typed Any (a negative power is a float)
        if top >= value * 0.999999:
            return top
    return float(10 ** (exp + 1))


def _span_mask(side: int, first: int, last: int) -> int:
    mask = 0
    for dot in range(first, last + 1):
        mask |= _DOT[side][dot]
    return mask


# The dots of one side (left/right column) of a cell from dot a to dot b (0 = top) as one mask: a vertical
# join fills whole cells in one step instead of dot by dot.
_SPAN_MASKS = [[[_span_mask(side, a, b) for b in range(4)] for a in range(4)] for side in (0, 1)]


def braille_cells(series: Sequence[Sequence[float | None]], width: int, height: int,
                  ymax: float) -> tuple[list[int], list[int]]:
    """Draw series into ``height`` rows of ``width`` braille cells, row-major: (dot bits, series index) lists.

    The newest point sits at the right edge, one point per dot column (two per cell). Consecutive points
    are joined vertically so a line stays continuous. Where series overlap a cell, the later one wins the
    colour and both keep their dots. ``None`` is a gap. An empty cell has bits 0 and index -1.
    """
    cols, rows = width * 2, height * 4
    bits = [0] * max(0, width * height)
    owner = [-1] * max(0, width * height)
    if width <= 0 or height <= 0 or ymax <= 0:
        return bits, owner
    top = rows - 1
    # A point alone in its cell (a flat stretch, an idle device's zero line) needs one lookup by its height.
    cell_row_of = [(top - y) >> 2 for y in range(rows)]
    one_dot = [[_DOT[side][(top - y) & 3] for y in range(rows)] for side in (0, 1)]
    for index, values in enumerate(series):
        visible = list(values)[-cols:]
        offset = cols - len(visible)
        prev_y: int | None = None
        for i, v in enumerate(visible):
            if v is None or v != v:  # None or NaN: a gap
                prev_y = None
                continue
            y = round(v / ymax * top)  # 0 = bottom
            y = 0 if y < 0 else top if y > top else y
            x = offset + i
            if prev_y is None or prev_y == y:
                k = cell_row_of[y] * width + (x >> 1)
                bits[k] |= one_dot[x & 1][y]
                owner[k] = index
                prev_y = y
                continue
            lo, hi = (y, prev_y) if y < prev_y else (prev_y, y)
            column, side = x >> 1, _SPAN_MASKS[x & 1]
            top_row, top_dot = divmod(top - hi, 4)  # counted from the top
            bottom_row, bottom_dot = divmod(top - lo, 4)
            for cell_row in range(top_row, bottom_row + 1):
                k = cell_row * width + column
                bits[k] |= side[top_dot if cell_row == top_row else 0][bottom_dot if cell_row == bottom_row else 3]
                owner[k] = index
            prev_y = y
    return bits, owner


def braille_grid(series: Sequence[Sequence[float | None]], width: int, height: int,
                 ymax: float) -> list[list[tuple[int, int]]]:
    """braille_cells as rows of (dot bits, series index) cells, (0, -1) where empty."""
    bits, owner = braille_cells(series, width, height, ymax)
    if width <= 0 or height <= 0:
        return [[(0, -1) for _ in range(width)] for _ in range(height)]
    return [list(zip(bits[r * width:(r + 1) * width], owner[r * width:(r + 1) * width])) for r in range(height)]


def marker_columns(times: Sequence[float], marks: Sequence[float], width: int) -> dict[int, int]:
    """Cell column of each marker time inside the visible window -> marker index.

    ``times`` are the sample times of the plotted points (newest last); a marker lands on the first point
    at or after it, so the switch shows between the last "before" and the first "after" sample.
    """
    cols = width * 2
    visible = list(times)[-cols:]
    offset = cols - len(visible)
    out: dict[int, int] = {}
    for m_index, mark in enumerate(marks):
        for i, t in enumerate(visible):
            if t >= mark:
                out[(offset + i) // 2] = m_index
                break
    return out


def marker_labels(marks: dict[int, str], width: int) -> dict[int, str]:
    """Where each marker's label goes on a chart's top row: column -> character.

    ``marks``: a marker's cell column -> its label; a later marker is at the same column or to the right.
    Labels are placed newest first, since the newest matters most, and never touch another label, so close
    switches never read as one word ("bfqyber"). Each goes whole beside its line where the row is free:
    right, else left, else left of the run of adjacent lines it ends (two switches a cell apart). Failing
    that it is cut to the room it has when at least three letters stay, else it goes whole to the left over
    the top cells of older markers' lines (they still show below it), else it is cut to a few cells or left out.
    """
    lines = set(marks)
    taken: set[int] = set()  # cells a label may not use: other labels and the gap beside each
    out: dict[int, str] = {}

    def room(start: int, step: int, blocked: set[int]) -> int:
        n, col = 0, start
        while 0 <= col < width and col not in blocked and col not in taken:
            n, col = n + 1, col + step
        return n

    for col, label in sorted(marks.items(), reverse=True):  # newest (rightmost) first
        label = label[:width]
        if not label:
            continue
        first = col
        while first - 1 in lines:
            first -= 1
        # (room, the cell next to the line) of each free place, in order of preference
        places = [(room(col + 1, 1, lines), col + 1), (room(col - 1, -1, lines), col - 1),
                  (room(first - 1, -1, lines), first - 1)]
        fits = [(n, at) for n, at in places if n >= len(label)]
        n, at = fits[0] if fits else max(places, key=lambda p: p[0])  # equals: the first
        if n < len(label) and n < min(len(label), 4):
            if room(col - 1, -1, {col}) >= len(label):  # over older lines, all to the left
                n, at = len(label), col - 1
            elif n < 2:
                continue
        if n < len(label):
            label = label[:n - 1] + "…"
        start = at if at > col else at - len(label) + 1
        out.update({start + i: ch for i, ch in enumerate(label)})
        taken.update(range(start - 1, start + len(label) + 1))
    return out


CPU_STACK_FIELDS = ("usr", "sys", "iowait", "irq", "soft", "steal")


# Tick steps of a time axis, in seconds: the first that keeps ticks at least TICK_GAP cells apart is taken.
_TICK_STEPS = (5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)
TICK_GAP = 16


def span_text(seconds: float) -> str:
    """"45s", "2m", "1.5m", "2h": short, for an axis label."""
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        m = seconds / 60
        return f"{m:.0f}m" if m >= 10 or m == int(m) else f"{m:.1f}m"
    h = seconds / 3600
    return f"{h:.0f}h" if h >= 10 or h == int(h) else f"{h:.1f}h"


def sample_interval(times: Sequence[float]) -> float | None:
    """Seconds between samples, from the median of the latest gaps (a pause or a slow tick does not skew it)."""
    gaps = sorted(b - a for a, b in itertools.pairwise(times[-33:]) if b > a)
    return gaps[len(gaps) // 2] if gaps else None


def time_axis(times: Sequence[float], width: int) -> str:
    """The time axis under a braille chart of ``width`` cells whose newest point is at the right edge, two
    points a cell: ticks (┴) at round times before now, each labelled on its left ("-2m┴"), "now" at the right
    end. Blank when the sample interval is unknown (fewer than two samples)."""
    dt = sample_interval(times)
    if dt is None or dt < 1e-6 or width < 8:  # under a microsecond (a recording's 1e-313): no interval of ours
        return " " * max(0, width)
    per_cell = 2 * dt
    step = next((s for s in _TICK_STEPS if s / per_cell >= TICK_GAP), None)
    chars = ["─"] * width
    chars[-3:] = "now"
    free_until = width - 4  # columns left of "now" and a blank
    ticks = 0
    k = 1
    while step is not None:
        col = width - 1 - round(k * step / per_cell)
        label = f"-{span_text(k * step)}"
        if col - len(label) < 0:
            break
        if col < free_until:
            chars[col] = "┴"
            chars[col - len(label):col] = label
            free_until = col - len(label) - 1
            ticks += 1
        k += 1
    if not ticks:  # no round time fits: say the window's span at its left end
        label = f"-{span_text(width * per_cell)}"
        if len(label) < width - 4:
            chars[:len(label)] = label
    return "".join(chars)


def cpu_stack_column(values: dict[str, float], height: int) -> list[int]:
    """Which category fills each row of one column (bottom row first); -1 for idle.

    Row r covers percent (r*100/height .. (r+1)*100/height); it takes the category under its midpoint.
    """
    bounds = []
    acc = 0.0
    for name in CPU_STACK_FIELDS:
        acc += values.get(name, 0.0)
        bounds.append(acc)
    column = []
    for r in range(height):
        mid = (r + 0.5) * 100.0 / height
        column.append(next((i for i, b in enumerate(bounds) if mid < b), -1))
    return column


SPARK = " ▁▂▃▄▅▆▇█"


def spark_char(percent: float) -> str:
    """One block character for 0-100%."""
    p = min(max(percent, 0.0), 100.0)
    return SPARK[min(len(SPARK) - 1, math.ceil(p / 100.0 * (len(SPARK) - 1)))]


def error_bar(mean: float, low: float, high: float, top: float, width: int) -> str:
    """A horizontal bar to ``mean`` with the confidence interval drawn as ├──┤ over it; scale 0..top."""
    if width < 3 or top <= 0 or math.isnan(mean):
        return " " * max(width, 0)

    def col(v: float) -> int:
        x = v / top * (width - 1)  # clamped before rounding: a tiny top can make it infinite
        return 0 if not x > 0 else round(min(x, width - 1))

    cells = ["█" if i < col(mean) else " " for i in range(width)]
    lo, hi = col(max(low, 0.0)), col(high)
    for i in range(lo, hi + 1):
        cells[i] = "─" if cells[i] == " " else "╪"
    cells[lo], cells[hi] = "├", "┤"
    if lo == hi:
        cells[lo] = "│"
    return "".join(cells)


def log_bar(value: float, low: float, high: float, width: int) -> str:
    """A bar on a log scale from ``low`` to ``high`` (latencies span decades)."""
    if width < 1 or value <= 0 or low <= 0 or high <= low:
        return ""
    frac = (math.log10(value) - math.log10(low)) / (math.log10(high) - math.log10(low))
    n = max(1, min(width, round(frac * width)))
    return "█" * n
