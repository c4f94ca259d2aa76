"""`iosched list` as text: one line per device, fitted to a terminal's width or whole at its natural width.

A terminal gets the columns that fit, by priority (as the TUI's device table puts the important ones first):
long cells are shortened first, then the least important columns are dropped. A pipe or a file gets every
column at its natural width, one line per device, never wrapped: a script reads whole rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from iosched.core.base.cells import cell_width, head_cells, pad_cells, tail_cells
from iosched.core.base.terminal_text import printable
from iosched.core.base.units import human_size
from iosched.core.kernel.device_doc import DeviceDoc

GAP = "  "
ELLIPSIS = "…"


@dataclass(frozen=True)
class Column:
    header: str
    drop_rank: int  # dropped in this order when the width runs out (0: never dropped)
    min_width: int = 0  # shortened down to this before anything is dropped (0: never shortened)
    keep_tail: bool = False  # shorten in the middle: a path's last part says the most


COLUMNS: tuple[Column, ...] = (
    Column("NAME", 0),
    Column("MAJ:MIN", 1),
    Column("SIZE", 5),
    Column("TYPE", 2),
    Column("MODEL", 3, min_width=8),
    Column("SCHEDULERS", 0),
    Column("MOUNTED / USED BY", 4, min_width=16, keep_tail=True),
)
SCHEDULERS = 5  # index of the column shortened to the current scheduler as a last resort


_printable = printable  # a cell on one line: a newline in a backing file's name shown escaped


def sched_text(d: DeviceDoc) -> str:
    if not d.schedulers:
        return "(no scheduler)"
    return " ".join(f"[{s}]" if s == d.scheduler else s for s in d.schedulers)


def _short_sched(d: DeviceDoc) -> str:
    if not d.schedulers:
        return "-"
    others = len(d.schedulers) - 1
    return f"[{d.scheduler}]" + (f" +{others}" if others else "")


def device_cells(d: DeviceDoc) -> list[str]:
    kind = "HDD" if d.rotational else "SSD"
    used = ", ".join(d.mountpoints + [f"holder {h}" for h in d.holders])
    if d.backing_file:
        used = (used + ", " if used else "") + f"file {d.backing_file}"
    model = d.model or d.transport or ""
    cells = [d.name, d.maj_min, human_size(d.size_bytes), kind, model, sched_text(d), used]
    return [_printable(c) for c in cells]


def shorten(text: str, width: int, keep_tail: bool = False) -> str:
    """``text`` cut to ``width`` terminal columns with an ellipsis (in the middle when ``keep_tail``)."""
    if cell_width(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    if keep_tail:
        head = head_cells(text, (width - 1) // 3)
        return head + ELLIPSIS + tail_cells(text, width - 1 - cell_width(head))
    return head_cells(text, width - 1) + ELLIPSIS


def _natural(rows: list[list[str]], cols: list[int]) -> dict[int, int]:
    return {c: max(cell_width(r[c]) for r in rows) for c in cols}


def _fit(rows: list[list[str]], cols: list[int], width: int) -> dict[int, int] | None:
    """Column widths that fit ``width``, shortening the shortenable columns; None when they cannot fit."""
    widths = _natural(rows, cols)
    over = sum(widths.values()) + len(GAP) * (len(cols) - 1) - width
    if over <= 0:
        return widths
    # Take from the widest shortenable column first, down to its minimum.
    flexible = [c for c in cols if COLUMNS[c].min_width]
    while over > 0:
        room = [c for c in flexible if widths[c] > max(COLUMNS[c].min_width, len(COLUMNS[c].header))]
        if not room:
            return None
        c = max(room, key=lambda k: widths[k])
        widths[c] -= 1
        over -= 1
    return widths


def table_lines(devices: list[DeviceDoc], width: int | None) -> list[str]:
    """The header and one line per device; ``width`` None: every column at its natural width."""
    rows = [[c.header for c in COLUMNS], *(device_cells(d) for d in devices)]
    cols = list(range(len(COLUMNS)))
    widths = _natural(rows, cols)
    if width is not None:
        drop_order = sorted((c for c in cols if COLUMNS[c].drop_rank), key=lambda c: COLUMNS[c].drop_rank)
        fitted = None
        for k in range(len(drop_order) + 1):
            cols = [c for c in range(len(COLUMNS)) if c not in drop_order[:k]]
            fitted = _fit(rows, cols, width)
            if fitted is not None:
                break
        if fitted is None:  # NAME and SCHEDULERS alone are too wide: the current scheduler only
            rows = [rows[0], *([*r[:SCHEDULERS], _short_sched(d), *r[SCHEDULERS + 1:]]
                               for r, d in zip(rows[1:], devices))]
            fitted = _natural(rows, cols)
        widths = fitted
    out = []
    for r in rows:
        cells = [pad_cells(shorten(r[c], widths[c], COLUMNS[c].keep_tail), widths[c]) for c in cols]
        out.append(GAP.join(cells).rstrip())
    return out
