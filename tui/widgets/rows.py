"""The line-rendering engine under the panes: a row as runs of (text, style), and ``RowsWidget``, which draws
rows through Textual's line API and repaints only the lines whose picture changed."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

_ONE_CELL_EACH = re.compile("[\u0020-\u007e\u00a0-\u00ff\u2500-\u25fc\u2800-\u28ff]*").fullmatch  # U+25FD-E: wide
_SAME_KEY_RUN = re.compile(r"(.)\1*")


class Runs:
    """One screen row as runs of (text, style); neighbouring characters of one style share a run."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, Style]] = []

    def add(self, text: str, style: Style) -> None:
        if self.runs and self.runs[-1][1] is style:
            self.runs[-1] = (self.runs[-1][0] + text, style)
        else:
            self.runs.append((text, style))

    def add_cells(self, chars: list[str], styles: list[Style]) -> None:
        """Many one-character cells at once: joined per run of one style (charts are thousands of cells)."""
        start = 0
        for i in range(1, len(chars) + 1):
            if i == len(chars) or styles[i] is not styles[start]:
                self.add("".join(chars[start:i]), styles[start])
                start = i

    def add_keyed(self, text: str, keys: str, styles: Sequence[Style]) -> None:
        """One character per cell, cell i in ``styles[int(keys[i])]``: one run per stretch of one key, found
        by a regular expression (no per-cell work in Python, for panes redrawn every tick)."""
        for m in _SAME_KEY_RUN.finditer(keys):
            start, end = m.span()
            self.add(text[start:end], styles[int(keys[start])])

    @property
    def plain(self) -> str:
        return "".join(t for t, _ in self.runs)


class RowsWidget(Widget):
    """A widget drawn through the line API from rows built once per data change or resize.

    Building a Rich Text of thousands of one-character spans and converting it costs tens of ms per
    frame; a few merged segments per row cost well under one.
    """

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._rows: list[Runs] | None = None
        self._strips: list[Strip] = []
        self._rows_size: tuple[int, int] = (0, 0)
        self._part_styles: dict[str, Style] = {}
        self._on_base: dict[Style | None, Style] = {}  # a run's style over the widget's own: Style addition is slow
        self._built: list[Runs] = []  # the rows the current strips were made from, at this width
        self._built_width = 0
        self._base_style: Style | None = None

    def component_style(self, name: str) -> Style:
        """A component class's style, looked up once per theme rather than once per build."""
        style = self._part_styles.get(name)
        if style is None:
            style = self._part_styles[name] = self.get_component_rich_style(name)
        return style

    def build_rows(self, width: int, height: int) -> list[Runs]:
        raise NotImplementedError

    def invalidate(self) -> None:
        """The data changed: rebuild now and repaint only the lines whose picture changed.

        Repainting a line costs Textual far more than building it (styles, then the compositor's cuts):
        an idle graph filling up changes one line per tick, not all of them.
        """
        old = self._strips
        self._rows = None
        if not self.is_mounted or not self.size or not old:
            self.refresh()
            return
        self.rows()
        new = self._strips
        if len(new) != len(old):
            self.refresh()
            return
        width = self.size.width
        for y, (before, after) in enumerate(zip(old, new)):
            if before is not after:
                self.refresh(Region(0, y, width, 1))

    def on_resize(self) -> None:
        self._rows = None
        self._base_style = None  # size classes may have changed the colours around it
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._rows = None  # a new theme: the same rows in new colours
        self._part_styles = {}
        self._on_base = {}
        self._built = []
        self._base_style = None

    def rows(self) -> list[Runs]:
        size = (self.size.width, self.size.height)
        if self._rows is None or size != self._rows_size:
            width = max(1, size[0])
            rows = self.build_rows(width, max(1, size[1]))
            self._rows_size = size
            base = self._base_style
            if base is None:
                base = self._base_style = self.rich_style  # once per theme or class change, not per build
            on_base = self._on_base
            if len(on_base) > 64 or on_base.get(None) != base:  # None holds the base they were made on
                on_base.clear()
                on_base[None] = base
                self._built = []
            # A row equal to the one built at its place last time keeps that Strip: no new one to make, and
            # Textual's caches on it stay. Equal runs are mostly the same objects, so comparing is cheap.
            old_rows = self._built if self._built_width == width else []
            old_strips = self._strips
            strips = []
            for y, row in enumerate(rows):
                if y < len(old_rows) and old_rows[y].runs == row.runs:
                    strips.append(old_strips[y])
                    continue
                segments = []
                cells = 0
                for text, style in row.runs:
                    combined = on_base.get(style)
                    if combined is None:
                        combined = on_base[style] = base + style
                    segments.append(Segment(text, combined))
                    # rich measures braille one character at a time; our alphabets are one cell each.
                    cells += len(text) if _ONE_CELL_EACH(text) else cell_len(text)
                strips.append(Strip(segments, cells).adjust_cell_length(width, base))
            self._rows, self._strips, self._built, self._built_width = rows, strips, rows, width
        return self._rows

    def plain_text(self) -> str:
        return "\n".join(r.plain for r in self.rows())

    def render_lines(self, crop: Region) -> list[Strip]:
        self.rows()  # once per frame: the size check costs more than a line
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        if self._rows is None:
            self.rows()
        if y >= len(self._strips):
            return Strip.blank(self.size.width, self.rich_style)
        return self._strips[y]
