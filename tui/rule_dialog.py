"""The persistence rule's last step: exactly what changes in the rules file (a small diff), a warning when the
rule would not follow the device, then y to write or n to leave the file alone."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from iosched.tui.dialogs import Dialog


def diff_text(diff: str) -> Text:
    """A unified diff with its added lines green and removed lines red; never read as markup. Rule lines are
    long (130-220 characters): they wrap, so every assignment the user is asked to approve is on screen."""
    out = Text(overflow="fold")
    for line in diff.splitlines():
        style = ""
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        out.append(line + "\n", style=style)
    return out


class RuleChangeScreen(Dialog[bool]):
    """Show the rules file's diff (and the warning, if any); y/Enter writes it, n/Esc does not."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,enter", "dismiss(True)", "Write"),
        Binding("n,escape", "dismiss(False)", "Cancel"),
    ]
    DEFAULT_CSS = """
    RuleChangeScreen > Vertical { width: 100; max-width: 100%; height: auto; max-height: 90%;
                                  border: thick $warning; background: $surface; padding: 0 1; }
    RuleChangeScreen #warning { color: $warning; text-style: bold; margin-bottom: 1; }
    RuleChangeScreen #diff { height: auto; max-height: 16; }
    """

    def __init__(self, path: str, diff: str, warning: str | None = None) -> None:
        super().__init__()
        self.path = path
        self.diff = diff
        self.warning = warning

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(f"{self.path} will change like this:"))
            if self.warning:
                yield Static(Text(f"Warning: {self.warning}"), id="warning")
            with VerticalScroll(id="diff"):
                yield Static(diff_text(self.diff))
            yield Static(Text.from_markup("[b]y[/b] write it   [b]n[/b] leave the file as it is"), classes="keys")
