"""Check boxes whose state reads without colour, and the compare screen's scheduler checklist with its baseline.

Textual draws every box with the same "X" and tells checked from unchecked by colour alone, which the mono
theme, NO_COLOR and colour-blind eyes cannot see: here an unchecked box is empty. Only glyphs the terminal
and the served page already draw (the box's half blocks, "X", a space): nothing new for the web font.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import ClassVar

from rich.segment import Segment
from textual.binding import Binding, BindingType
from textual.strip import Strip
from textual.widgets import Checkbox, SelectionList
from textual.widgets.option_list import OptionDoesNotExist
from textual.widgets.selection_list import Selection

from iosched.tui.plain import plain

EMPTY = " "


class MarkedCheckbox(Checkbox):
    """A checkbox with an "X" when on and an empty box when off."""

    @property
    # Textual's name for the glyph inside the box, read at each render. Textual declares it a plain class
    # attribute though it only reads it: a read-only property in its place is what mypy refuses.
    def BUTTON_INNER(self) -> str:  # type: ignore[override]
        return Checkbox.BUTTON_INNER if self.value else EMPTY


def baseline_of(selected: list[str], chosen: str | None) -> str | None:
    """The variant every other is judged against: the one chosen if it is still selected, else the first
    selected (in the order they were selected); None when nothing is selected."""
    if chosen is not None and chosen in selected:
        return chosen
    return selected[0] if selected else None


def variant_order(selected: list[str], chosen: str | None) -> list[str]:
    """The selected schedulers with the baseline first (core judges every variant against the first)."""
    base = baseline_of(selected, chosen)
    return [] if base is None else [base, *(s for s in selected if s != base)]


class SchedulerChecklist(SelectionList[str]):
    """The schedulers to compare: space ticks, ``b`` makes the highlighted one the baseline, marked in the list."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("b", "make_baseline", "Baseline", tooltip="make the highlighted scheduler the baseline"),
    ]

    def __init__(self, names: list[str], picked: Collection[str | None], id: str | None = None,
                 baseline: str | None = None) -> None:
        self.names = names
        self.chosen: str | None = baseline  # None: the first selected is the baseline
        super().__init__(*[Selection(plain(n), n, n in picked) for n in names], id=id)

    @property
    def baseline(self) -> str | None:
        return baseline_of(list(self.selected), self.chosen)

    @property
    def order(self) -> list[str]:
        return variant_order(list(self.selected), self.chosen)

    def on_mount(self) -> None:
        self.mark_baseline()

    def on_selection_list_selected_changed(self, _event: SelectionList.SelectedChanged) -> None:
        if self.chosen not in self.selected:
            self.chosen = None  # unticked: the baseline goes back to the first selected
        self.mark_baseline()  # the message goes on to the screen, which names the baseline

    def action_make_baseline(self) -> None:
        if self.highlighted is None:
            return
        name = self.names[self.highlighted]
        self.chosen = name
        if name in self.selected:
            self.mark_baseline()
            self.post_message(self.SelectedChanged(self))  # the screen's baseline line follows
        else:
            self.select(name)  # posts SelectedChanged

    def mark_baseline(self) -> None:
        base = self.baseline
        for i, name in enumerate(self.names):
            self.replace_option_prompt_at_index(i, plain(f"{name} (baseline)" if name == base else name))

    def render_line(self, y: int) -> Strip:
        line = super().render_line(y)
        try:
            option = self.get_option_at_index(self.scroll_offset.y + y)
        except OptionDoesNotExist:
            return line
        segments = list(line)
        # Textual puts the box first: left half block, the inner glyph, right half block.
        if option.value in self._selected or len(segments) < 2 or segments[1].text != Checkbox.BUTTON_INNER:
            return line
        segments[1] = Segment(EMPTY, segments[1].style)
        return Strip(segments, line.cell_length)
