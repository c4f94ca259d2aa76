"""The compare screen while an experiment runs and after: the messages its worker posts, and ``RunView``, the
widget they are drawn in (the progress bar, a matrix's time left, the live fio line, each finished run, the
interim estimates, then the result with its charts)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import ProgressBar, Static

from iosched.core.base.terminal_text import printable
from iosched.core.base.units import short_number
from iosched.core.documents.document import AlternationDoc, CompareDoc, MatrixDoc
from iosched.core.documents.metrics import is_metric
from iosched.core.documents.params import check_name
from iosched.core.experiment.events import Event, LookReached, Note, Progress, RunEnded, RunStarted
from iosched.core.experiment.matrix import format_duration
from iosched.core.load.replay_lag import METRIC as REPLAY_LAG
from iosched.core.load.replay_lag import seconds_text
from iosched.core.load.targets import Refused
from iosched.core.present.sentences import interim_lines, look_words
from iosched.tui.compare_result import result_text
from iosched.tui.plain import plain
from iosched.tui.status_line import EXTRA, USEFUL, FittedLine

if TYPE_CHECKING:
    from iosched.core.live.monitor import Monitor


class ExperimentEvent(Message):
    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event

    def can_replace(self, message: Message) -> bool:
        # A newer fio status replaces a stale one still queued; run boundaries are never dropped.
        return (isinstance(message, ExperimentEvent) and isinstance(message.event, Progress)
                and isinstance(self.event, Progress))


class ExperimentEnded(Message):
    def __init__(self, doc: CompareDoc | AlternationDoc | MatrixDoc | None, error: str = "",
                 refused: Refused | None = None, saved: Path | None = None, save_error: str = "",
                 kind: str = "") -> None:
        super().__init__()
        self.kind = kind  # compare, alternate or matrix
        self.doc = doc
        self.error = error
        self.refused = refused
        self.saved = saved  # the file holding the result (or a cancelled matrix's finished runs)
        self.save_error = save_error  # where and why it could not be saved ("PATH: reason")


def _own_figure(key: str, value: object) -> bool:
    """A figure a command's output gave (--cmd-metric), not one iosched measures itself."""
    return isinstance(value, (int, float)) and not is_metric(key) and check_name(key) is None


class RunView(Vertical):
    """The progress row, the live line, the interim lines and the results pane: the service's events drawn as they
    come (``show``), then the result (``show_result``)."""

    # Every row counts at 80x24: the status lines one row each, the results take what is left.
    DEFAULT_CSS = """
    RunView { height: 1fr; }
    RunView #progress-row { height: 1; padding: 0 1; }
    RunView ProgressBar, RunView ProgressBar Bar { width: 1fr; }
    RunView #eta { width: auto; padding-left: 1; color: $text-muted; display: none; }
    RunView #live { height: 1; padding: 0 1; }
    RunView #so-far { height: auto; padding: 0 1; color: $accent; display: none; }
    RunView #results { height: 1fr; padding: 0 1; }
    """

    def __init__(self, monitor: Monitor, device: str) -> None:
        super().__init__(id="run")
        self.monitor = monitor
        self.device = device
        self.fio_iops: float | None = None
        self.began = 0.0  # when this experiment (or its resumed part) started, and the runs done then
        self.done_at_start = 0
        self.done = 0
        self.result: tuple[CompareDoc | AlternationDoc | MatrixDoc, Path | None] | None = None  # the one shown
        self.details = False  # the result shown with every table and the charts

    def compose(self) -> ComposeResult:
        with Horizontal(id="progress-row"):
            yield ProgressBar(total=1, show_eta=False, id="progress")
            yield Static("", id="eta")  # a matrix's own estimate, corrected by the runs so far
        yield FittedLine(id="live", sep=" · ")  # one row at 80x24: parts left out whole, words never cut
        yield Static("", id="so-far")
        with VerticalScroll(id="results"):
            yield Static("", id="report", markup=False)  # plain text: a model or path may hold "["

    def start(self, total: int, done: int = 0) -> None:
        self.began, self.done_at_start, self.done = time.monotonic(), done, done
        self.query_one(ProgressBar).update(total=total, progress=done)
        self.query_one("#report", Static).update("")
        self.result = None
        self.so_far([])

    def show(self, e: Event) -> None:
        if isinstance(e, RunStarted):
            self.eta(self.where(e))
        if isinstance(e, Progress):
            self.fio_iops = e.progress.iops
            self.live(e)
        elif isinstance(e, RunEnded):
            self.done += 1
            self.query_one(ProgressBar).advance(1)
            m = e.run.metrics
            bad = "" if e.run.valid else f"  INVALID: {e.run.invalid_reason}"
            # A command has no IOPS of its own: its wall time, and its own figures (--cmd-metric) first.
            main = (f"{short_number(m['iops'] or 0.0)} IOPS" if "iops" in m else
                    "  ".join([*(f"{k} {short_number(v)}" for k, v in m.items() if v is not None and _own_figure(k, v)),
                               f"wall {m.get('wall_s', 0):.2f} s"]))
            if e.run.startup is not None:  # a start-up: its time (or that it was over the cap), its load's rate
                main = f"start-up {e.run.startup.sentence()}  bg {short_number(m.get('bg:mb_s') or 0.0)} MB/s"
            if (lag := m.get(REPLAY_LAG)) is not None:  # a timed replay: how far behind the capture's timing it ended
                main += f"  replay lag {seconds_text(lag)}"
            line = printable(f"run {e.index + 1}: {e.label}  {main}  CPU/IO {m.get('cpu_us_per_io') or 0:.1f} µs{bad}")
            rep = self.query_one("#report", Static)
            rep.update(f"{rep.content}\n{line}" if str(rep.content) else line)
            if e.standing is not None and (lines := interim_lines(e.standing)):  # a compare's interim estimates
                self.so_far(lines)
        elif isinstance(e, (Note, LookReached)):  # e.g. a busy machine, said once; a matrix's look
            text = e.text if isinstance(e, Note) else look_words(e)
            if text:
                rep = self.query_one("#report", Static)
                note = printable(f"note: {text}")
                rep.update(f"{rep.content}\n{note}" if str(rep.content) else note)

    def where(self, e: RunStarted) -> str:
        """"run 3 of 8 · bfq · about 40 s left": a matrix says its own estimate (from its plan, corrected by the
        runs so far); a compare's comes from the runs it has finished."""
        text = f"run {e.index + 1} of {e.total} · {e.label}"
        if e.eta:
            return f"{text} · about {e.eta} left"
        finished = self.done - self.done_at_start
        if finished > 0 and e.total > self.done:
            left = (time.monotonic() - self.began) / finished * (e.total - self.done)
            return f"{text} · about {format_duration(left)} left"
        return text

    def eta(self, text: str) -> None:
        """A matrix's time left beside the progress bar; no room taken from the bar otherwise."""
        eta = self.query_one("#eta", Static)
        eta.update(plain(text))
        eta.display = bool(text)

    def so_far(self, lines: list[str]) -> None:
        """The interim estimates while the run goes on; hidden (not left above the verdict) when it ends."""
        so_far = self.query_one("#so-far", Static)
        so_far.update(plain("\n".join(f"so far: {t}" for t in lines)))
        so_far.display = bool(lines)

    def status(self, *parts: str | tuple[str, int]) -> None:
        """The status row: each part a text that stays (cut after a word if it must) or (text, priority), a part
        of a higher priority number left out first when the row is short (tui/status_line.py)."""
        self.query_one("#live", FittedLine).show(*parts)

    def live(self, e: Progress) -> None:
        rates = self.monitor.last_rates
        dev: list[tuple[str, int]] = []
        if rates is not None and self.device in rates.disks:
            d = rates.disks[self.device]
            dev = [(f"device {short_number(d.r_s + d.w_s)} IOPS", USEFUL), (f"r_await {d.r_await:.2f} ms", EXTRA)]
        p = e.progress
        assert p is not None
        self.status(f"now: {e.label}", f"fio {short_number(p.iops)} IOPS, clat {p.clat_mean_us or 0:.0f} µs", *dev)

    def show_result(self, doc: CompareDoc | AlternationDoc | MatrixDoc, saved: Path | None,
                    details: bool = False) -> None:
        """The result in the scrolling results pane, from its top (a second run's verdict too): a compare's summary,
        or with ``details`` its every table and charts; a matrix's table and charts."""
        self.result = (doc, saved)
        self.details = details
        bar = self.query_one(ProgressBar)  # done: a verdict reached early leaves planned runs unmade, not undone
        bar.update(total=bar.total or 1, progress=bar.total or 1)
        self.eta("")
        self.query_one("#report", Static).update(result_text(doc, saved, details))
        from iosched.tui.result_charts import ResultCharts  # plotext loads with the first result

        results = self.query_one("#results", VerticalScroll)
        results.query(ResultCharts).remove()
        if details or isinstance(doc, MatrixDoc):
            results.mount(ResultCharts(doc))
        results.scroll_home(animate=False)

    def toggle_details(self) -> bool:
        """A compare's result: the summary, or every table with the charts, and back. False: no result to show."""
        if self.result is None or isinstance(self.result[0], MatrixDoc):
            return False
        self.show_result(*self.result, details=not self.details)
        return True

    def page(self, pages: int) -> None:
        """The results a page down (or up: ``pages`` < 0)."""
        results = self.query_one("#results", VerticalScroll)
        results.scroll_to(y=results.scroll_y + pages * max(1, results.scrollable_content_region.height - 1),
                          animate=False)
