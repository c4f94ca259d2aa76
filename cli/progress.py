"""An experiment's progress on stderr, without scrolling the answer away.

On a terminal: one live line, rewritten in place (run k of n, the variant, fio's figures now, the time left, the
interim estimate of the primary metric), cleared before the result. Into a file or a pipe, or with `--details`:
one line per finished run (never fio's per-second status), the interim lines only when they change (a new complete
round of runs, or the boundary crossed). Notes (a busy machine, a matrix's look) are lines of their own either way.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from iosched.cli.terminal import control, rewrite_line
from iosched.core.base.cells import cut_at_word
from iosched.core.base.units import si
from iosched.core.documents.metrics import roles_of
from iosched.core.experiment.cmd_metrics import CmdMetric
from iosched.core.experiment.events import Event, LookReached, Note, Progress, RunEnded, RunStarted, SaveFailed
from iosched.core.experiment.matrix import format_duration
from iosched.core.load.replay_lag import METRIC as REPLAY_LAG
from iosched.core.load.replay_lag import seconds_text
from iosched.core.load.submission import TASK, WORKERS
from iosched.core.present.conditions import steady_mark
from iosched.core.present.sentences import interim_lines, interim_words, look_words
from iosched.core.statistics.verdict import Standing


class ProgressPrinter:
    """Draws the service's events (see the module's docstring). ``live``: a terminal (default: whether ``stream``
    is one); ``lines``: one line per finished run even on a terminal (`--details`); ``quiet``: notes only (`--json`,
    `--csv`); ``own``: a command's figures (--cmd-metric), first on each run's line."""

    def __init__(self, stream: TextIO | None = None, live: bool | None = None, lines: bool = False,
                 quiet: bool = False, own: Sequence[CmdMetric] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.run_lines = lines or not self.live
        self.quiet = quiet
        self.own = list(own or [])
        self.shown = False  # a live line is on the screen
        self.began = time.monotonic()
        self.finished = 0
        self.where = ""  # "run 3 of 9 · bfq"
        self.now = ""  # what that run is doing: "2 s · fio 115.3k IOPS"
        self.eta = ""
        self.standing: Standing | None = None
        self.said: tuple[int, bool] | None = None  # the interim lines last printed: at which count, decided
        self.warned = False  # a failed save was said

    def __call__(self, e: Event) -> None:
        if isinstance(e, SaveFailed):
            self.warned = True
            self._line(f"iosched: warning: the result could not be saved to {e.text}; it goes on unsaved")
            return
        if self.quiet and not isinstance(e, (Note, LookReached)):
            return
        if isinstance(e, RunStarted):
            self.where = f"run {e.index + 1} of {e.total} · {e.label}" if e.total else f"run {e.index + 1} · {e.label}"
            self.eta = e.eta
            self._draw("starting")
        elif isinstance(e, Progress):
            p = e.progress
            lat = f", clat {p.clat_mean_us:.0f} µs" if p.clat_mean_us is not None else ""
            self._draw(f"{p.elapsed:.0f} s · fio {si(p.iops)} IOPS{lat}")
        elif isinstance(e, RunEnded):
            self.finished += 1
            self.eta = e.eta or self._left(e.total)
            if e.standing is not None and e.standing.estimates:
                self.standing = e.standing
            if self.run_lines:
                self._line(self.run_line(e))
                s = e.standing
                lines = interim_lines(s) if s is not None else []
                key = (s.count, s.decided_at is not None) if s is not None else (0, False)
                if lines and key != self.said:
                    self.said = key
                    for text in lines:
                        self._line(f"    so far: {text}")
            self._draw("done")
        elif isinstance(e, Note):
            self._line(f"iosched: {e.text}")
        elif isinstance(e, LookReached):
            self._line(f"iosched: {look_words(e)}")

    def run_line(self, e: RunEnded) -> str:
        m = e.run.metrics
        bad = "" if e.run.valid else f"  INVALID: {e.run.invalid_reason}"
        main = f"IOPS {si(m.get('iops'))}" if "iops" in m else f"wall {m.get('wall_s') or 0:.2f} s"
        if e.run.startup is not None:  # a start-up: its time (or that it was ended at the cap), the background's rate
            main = f"start-up {e.run.startup.sentence()}  bg {si(m.get('bg:mb_s'))} MB/s"
        main = "".join(f"{r.name} {si(m.get(r.name))}  " for r in self.own) + main
        if (lag := m.get(REPLAY_LAG)) is not None:  # a timed replay: how far behind the capture's timing it ended
            main += f"  replay lag {seconds_text(lag)}"
            if (p99 := m.get("total_p99_us")) is not None:  # what it is judged on: its latency in the block layer
                main += f"  block-layer p99 {si(p99)} µs"
        # Each role's rate and tail: what a contention job is about.
        roles = "".join(f"  {r} {si(m.get(f'{r}:iops'))} IOPS p99 {si(m.get(f'{r}:clat_p99_us'))} µs"
                        for r in roles_of(m))
        total = f"{e.index + 1}/{e.total}" if e.total else f"{e.index + 1}"
        left = f"  ETA {e.eta}" if e.eta else ""
        split = ""
        if m.get(TASK) is not None or m.get(WORKERS) is not None:  # where the CPU went: fio's threads, the kworkers
            split = f" (task {si(m.get(TASK))}, all kworkers {si(m.get(WORKERS))})"
        return (f"run {total} {e.label:<14} {main}  CPU/IO {si(m.get('cpu_us_per_io'))} µs{split}{roles}{bad}"
                f"{steady_mark(e.run)}{left}")

    def _left(self, total: int) -> str:
        """The time left, from the runs finished so far (a compare's; a matrix says its own)."""
        if not total or self.finished >= total:
            return ""
        return format_duration((time.monotonic() - self.began) / self.finished * (total - self.finished))

    def _draw(self, now: str) -> None:
        """The live line (a terminal only), cut to its width."""
        self.now = now
        if not self.live or not self.where:
            return
        parts = [self.where, now]
        if self.eta:
            parts.append(f"about {self.eta} left")
        if self.standing is not None and (so_far := interim_words(self.standing)):
            parts.append(so_far)
        width = max(20, shutil.get_terminal_size((80, 24)).columns - 1)
        rewrite_line(self.stream, cut_at_word(" · ".join(parts), width))
        self.shown = True

    def _line(self, text: str) -> None:
        """A line that stays, printed above the live line."""
        if self.shown:
            control(self.stream, "\r\x1b[K")
        self.stream.write(text + "\n")
        self.stream.flush()
        if self.shown:
            self.shown = False
            self._draw(self.now)

    def close(self) -> None:
        """Clears the live line: the result follows on a clean screen."""
        if self.shown:
            control(self.stream, "\r\x1b[K")
            self.stream.flush()
            self.shown = False
