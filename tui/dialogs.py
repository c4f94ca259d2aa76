"""Dialogs (modal screens): pickers, confirmations, the typed-name check, tunables, persistence and help."""

from __future__ import annotations

from typing import ClassVar, TypeVar

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from iosched.core.base.cells import cut_at_word
from iosched.core.base.terminal_text import printable
from iosched.tui.plain import marked, plain

ResultType = TypeVar("ResultType")


class CutRow:
    """A row of fixed columns, then a text cut after a whole word to the width it is drawn at (a resize too),
    where a plain row would be cut inside a word."""

    def __init__(self, head: str, tail: str) -> None:
        self.head, self.tail = head, tail

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        room = options.max_width - cell_len(self.head)
        yield Text(printable(self.head + cut_at_word(self.tail, room)), no_wrap=True, overflow="crop")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(cell_len(self.head) + 12, cell_len(self.head) + cell_len(self.tail))


class Dialog(ModalScreen[ResultType]):
    """A modal box over an opaque screen.

    Textual's ModalScreen dims the screen behind it with a translucent background: the live graphs' braille
    and the CPU pane's blocks then show through around the box as stray characters, moving every tick. The
    box is what matters while it is open, so the screen behind it is plain.

    Notifications wait behind a dialog too: at 80x24 a toast (a switch just made before `j`) covered the job
    picker's bottom rows. They show again on the screen below when the dialog closes, unless they ran out.
    """

    DEFAULT_CSS = """
    Dialog { align: center middle; background: $background; }
    Dialog ToastRack Toast { display: none; }
    """


class SchedulerPicker(Dialog[str | None]):
    """Choose one of a device's available schedulers; the current one is marked and preselected."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Cancel")]
    DEFAULT_CSS = """
    SchedulerPicker > Vertical { width: auto; min-width: 54; max-width: 100%; height: auto;
                                 border: thick $accent; background: $surface; padding: 0 1; }
    SchedulerPicker OptionList { width: auto; min-width: 100%; max-width: 100%; height: auto; max-height: 10; }
    """

    def __init__(self, device: str, current: str | None, available: list[str]) -> None:
        super().__init__()
        self.device = device
        self.current = current
        self.available = available

    def compose(self) -> ComposeResult:
        options = [Option(plain(f"{'● ' if s == self.current else '  '}{s}"), id=s) for s in self.available]
        with Vertical():
            yield Label(marked("[b]$device[/b]: IO scheduler (Enter switches, Esc cancels)", device=self.device))
            yield OptionList(*options, id="schedulers")

    def on_mount(self) -> None:
        option_list = self.query_one(OptionList)
        if self.current in self.available:
            option_list.highlighted = self.available.index(self.current)
        option_list.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


class ConfirmScreen(Dialog[bool]):
    """A yes/no question; y/Enter answers yes, n/Esc answers no."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,enter", "dismiss(True)", "Yes"),
        Binding("n,escape", "dismiss(False)", "No"),
    ]
    DEFAULT_CSS = """
    ConfirmScreen > Vertical { width: 60; height: auto; border: thick $warning; background: $surface;
                               padding: 1 2; }
    """

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(plain(self.question))
            yield Static("[b]y[/b] yes   [b]n[/b] no", classes="keys")


class HelpScreen(Dialog[None]):
    """Every key of the screen in front, and what the figures mean."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark,f1", "dismiss(None)", "Close")]
    DEFAULT_CSS = """
    HelpScreen > VerticalScroll { width: 76; max-width: 100%; height: auto; max-height: 90%;
                                  border: thick $accent; background: $surface; padding: 0 1; }
    HelpScreen .key { height: auto; }
    HelpScreen .keys { width: 15; padding-left: 2; text-style: bold; }
    HelpScreen .text { width: 1fr; }
    """

    def __init__(self, bindings: list[tuple[str, str]], explanation: str = "") -> None:
        """``bindings``: (keys, what they do), derived from the screen in front; ``explanation``: its
        HELP_TEXT (what its figures mean), in Rich markup."""
        super().__init__()
        self.bindings = bindings
        self.explanation = explanation

    def compose(self) -> ComposeResult:
        # Each text wraps to the dialog's width beside its own key column.
        with VerticalScroll():
            yield Static("[b]iosched — keys[/b]\n")
            for key, text in self.bindings:
                with Horizontal(classes="key"):
                    yield Static(key, markup=False, classes="keys")
                    yield Static(text, markup=False, classes="text")
            if self.explanation:
                yield Static("\n" + self.explanation)


class JobPicker(Dialog[str | None]):
    """Choose a canned job for the selected device; the target it will use is shown up front, and above the
    list what the highlighted job shows, when the catalog says (the contention jobs)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Cancel")]
    DEFAULT_CSS = """
    JobPicker > Vertical { width: auto; min-width: 76; max-width: 100%; height: auto; max-height: 90%;
                           border: thick $accent; background: $surface; padding: 0 1; }
    JobPicker OptionList { width: auto; min-width: 100%; max-width: 100%; height: auto; max-height: 16; }
    JobPicker Label { width: auto; max-width: 100%; }
    JobPicker #shows { width: auto; max-width: 100%; color: $text-muted; }
    """

    def __init__(self, device: str, jobs: list[tuple[str, str, bool, str]], target_hint: str,
                 runtime: float) -> None:
        super().__init__()
        self.device = device
        self.jobs = jobs  # (name, description, writes, what it shows or "")
        self.shows = {name: shows for name, _desc, _writes, shows in jobs}
        self.target_hint = target_hint
        self.runtime = runtime

    def compose(self) -> ComposeResult:
        # A name longer than its column (the contention jobs') keeps a space before the W.
        options = [Option(CutRow(f"{name:<16} {'W' if writes else ' '} ", desc), id=name)
                   for name, desc, writes, _shows in self.jobs]
        with Vertical():
            yield Label(marked(f"[b]$device[/b]: run a job for {self.runtime:g} s (Enter starts, Esc cancels)",
                             device=self.device))
            yield Label(plain(self.target_hint))
            # Above the list, where the box's height limit never cuts it off; hidden while the highlighted job
            # has nothing to say, so the picker of the other jobs looks as it did.
            shows = Static("", id="shows", markup=False)
            shows.display = False
            yield shows
            yield OptionList(*options, id="jobs")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        shows = self.shows.get(event.option.id or "", "")
        line = self.query_one("#shows", Static)
        line.update(plain(f"shows: {shows}" if shows else ""))
        line.display = bool(shows)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


class TypeNameScreen(Dialog[bool]):
    """Destroying data needs the device's name typed in full, not a y/n."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(False)", "Cancel")]
    DEFAULT_CSS = """
    TypeNameScreen > Vertical { width: 70; max-width: 100%; height: auto; border: thick $error;
                                background: $surface; padding: 1 2; }
    """

    def __init__(self, device: str, reason: str) -> None:
        super().__init__()
        self.device = device
        self.reason = reason

    def compose(self) -> ComposeResult:
        with Vertical():
            device = self.device
            yield Static(marked("[b]This job writes to raw $device[/b] and would destroy its data:\n", device=device)
                         + plain(self.reason)
                         + marked("\n\nType [b]$device[/b] and Enter to go ahead; Esc cancels.", device=device))
            yield Input(placeholder=self.device, id="confirm-name")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.value.strip() == self.device:
            self.dismiss(True)
        else:
            self.query_one(Input).value = ""
            self.notify(f"That is not {self.device}; nothing was started.", severity="warning")


class TunablesScreen(Dialog[tuple[str, str] | None]):
    """The selected device's tunables and queue knobs with their meaning; Enter edits, the new value is
    returned as (name, value) and applied by the app (journaled, marked on the graphs)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Close")]
    DEFAULT_CSS = """
    TunablesScreen > Vertical { width: auto; min-width: 60; max-width: 100%; height: auto; max-height: 90%;
                                border: thick $accent; background: $surface; padding: 0 1; }
    /* At 80x24 the list leaves the title and two rows of meaning room inside the box (in rows: a height in vh
       made the box as tall as the list unbounded). */
    TunablesScreen OptionList { width: auto; min-width: 100%; max-width: 100%; height: auto; max-height: 16; }
    TunablesScreen Label { width: auto; max-width: 100%; }
    TunablesScreen #meaning { width: 100%; height: 2; color: $text-muted; }
    TunablesScreen Input { display: none; }
    TunablesScreen Input.-editing { display: block; }
    /* While a value is edited the list gives up rows, so the box stays on a 24-line screen. */
    TunablesScreen OptionList.-editing { max-height: 7; }
    """

    def __init__(self, device: str, settings: list) -> None:
        super().__init__()
        self.device = device
        self.settings = settings  # core.tunables.Setting
        self.editing: str | None = None

    def compose(self) -> ComposeResult:
        options = []
        for s in self.settings:
            value = f"{s.value} {s.unit}".strip()
            scope = "queue" if s.scope == "queue" else "sched"
            options.append(Option(CutRow(f"{s.name:<18} {value:<12} {scope:<6} ", s.meaning), id=s.name))
        with Vertical():
            yield Label(marked("[b]$device[/b]: settings (Enter edits, Esc closes); changes are journaled",
                             device=self.device))
            yield OptionList(*options, id="settings")
            yield Static("", id="meaning", markup=False)  # the highlighted one's meaning, whole
            yield Input(id="value")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        setting = next((s for s in self.settings if s.name == event.option.id), None)
        self.query_one("#meaning", Static).update(plain(f"{setting.name}: {setting.meaning}" if setting else ""))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.editing = event.option.id
        current = next(s.value for s in self.settings if s.name == self.editing)
        box = self.query_one(Input)
        box.value = current
        box.placeholder = f"new value for {self.editing}"
        box.add_class("-editing")
        options = self.query_one(OptionList)
        options.add_class("-editing")
        options.scroll_to_highlight()
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if self.editing is not None:
            self.dismiss((self.editing, event.value.strip()))


class PersistScreen(Dialog[str | None]):
    """Make the device's current scheduler permanent: choose what the rule matches, see the diff, confirm."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Cancel")]
    DEFAULT_CSS = """
    PersistScreen > Vertical { width: 100; max-width: 100%; height: auto; max-height: 90%;
                               border: thick $warning; background: $surface; padding: 0 1; }
    PersistScreen OptionList { height: auto; }
    PersistScreen Label { width: 100%; }
    PersistScreen #diff { height: auto; max-height: 12; }
    """

    def __init__(self, device: str, scheduler: str, choices: list[tuple[str, str]], path: str) -> None:
        super().__init__()
        self.device = device
        self.scheduler = scheduler
        self.choices = choices  # (by, "what it matches")
        self.path = path

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(marked("[b]Make $scheduler permanent for $device[/b]: a udev rule in $path.\n"
                               "Match the device by (Enter shows the rule to confirm, Esc cancels):",
                               scheduler=self.scheduler, device=self.device, path=self.path))
            yield OptionList(*[Option(plain(f"{by:<12} {what}"), id=by) for by, what in self.choices], id="by")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)
