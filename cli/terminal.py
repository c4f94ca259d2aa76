"""What the command line writes, and what becomes of a write that fails.

- Everything a command writes to stdout and stderr goes through the one sanitiser (core/base/terminal_text.py):
  a saved file's, a host's or a device's words never reach the terminal as escape sequences. iosched's own
  sequences (a progress line rewritten in place, a bold header, coloured charts drawn from a document that holds
  none) go through ``control``, never through ``write``.
- A write that fails (stdout on a full disk, /dev/full, a descriptor closed before iosched started) is one
  sentence on stderr and exit 1 (``OutputFailed``), never a traceback; a reader that left (``| head``) ends the
  command quietly, as before. A standard descriptor closed at the start is held on /dev/null, so no file iosched
  opens later can take its number.
- On a terminal, a line wider than the terminal is broken at spaces to its width (its continuation indented), so a
  word is never cut in two at the edge; tables are fitted by their commands before they reach here. Into a pipe or
  a file every line goes out whole, as written, so scripts see the same lines at any width; a command's
  machine-readable stdout (--json, --csv, --markdown -) is never broken (``unwrapped``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from iosched.core.base.cells import wrap_cells
from iosched.core.base.errors import IoschedError
from iosched.core.base.terminal_text import printable_text


class OutputFailed(IoschedError):
    """Standard output or error could not be written (exit 1)."""


class TerminalStream:
    """sys.stdout or sys.stderr, each write sanitised; ``raw`` None: the descriptor was closed when iosched started.

    Whole lines: what a thread writes waits until it ends a line (or is flushed, or a sequence of iosched's own
    follows), then goes out at once under a lock, so two threads printing together never mix within a line
    (``print`` writes its text and its newline in two calls)."""

    def __init__(self, raw: TextIO | None, name: str) -> None:
        self.raw, self.name = raw, name
        self.wrap = True  # on a terminal, lines broken at spaces to its width (``unwrapped`` turns it off)
        self._lock = threading.Lock()
        self._pending: dict[int, str] = {}  # per thread: the start of a line not yet ended
        self._mid: set[int] = set()  # threads whose line has begun with text put out by ``control``

    def columns(self) -> int | None:
        """The terminal's width when lines are broken to it (``COLUMNS`` first, as shutil reads it); else None."""
        if not self.wrap or self.raw is None:
            return None
        try:
            if not self.raw.isatty():
                return None
            env = os.environ.get("COLUMNS", "")
            return int(env) if env.isdigit() and int(env) > 0 else os.get_terminal_size(self.raw.fileno()).columns
        except (OSError, ValueError):
            return None

    def _fitted(self, text: str, me: int) -> str:
        """Whole lines (``text`` ends with one) broken at spaces to the terminal's width; a line begun by ``control``
        is left as it is (where it starts on the screen is not known)."""
        width = self.columns()
        mid = me in self._mid
        self._mid.discard(me)
        if width is None:
            return text
        lines = text.split("\n")
        return "\n".join(line if i == 0 and mid else "\n".join(wrap_cells(line, width))
                         for i, line in enumerate(lines))

    def _out(self) -> TextIO:
        if self.raw is None:
            self._pending.clear()  # nothing can be written: said once, not again at each flush
            raise OutputFailed(f"cannot write to standard {self.name}: it was closed when iosched started")
        return self.raw

    def _failed(self, e: OSError) -> OutputFailed:
        self._pending.clear()
        held_on_null(self.raw)  # what stays buffered goes nowhere: Python's own flush at exit cannot fail again
        return OutputFailed(f"cannot write to standard {self.name}: {e.strerror or e}")

    def write(self, text: str) -> int:
        me = threading.get_ident()
        with self._lock:
            buf = self._pending.pop(me, "") + printable_text(text)
            head, nl, tail = buf.rpartition("\n")
            if tail:
                self._pending[me] = tail
            if nl:
                self._put(self._fitted(head, me) + nl)
        return len(text)

    def control(self, sequence: str) -> None:
        """iosched's own terminal sequence (``\\r``, ``\\x1b[K``, colours), written as it is, after what this thread
        wrote before it."""
        me = threading.get_ident()
        with self._lock:
            text = self._pending.pop(me, "")
            self._put(text + sequence)
            if "\n" in sequence or "\r" in sequence:  # its own escape sequences after a line break take no room
                self._mid.discard(me)
            elif text:
                self._mid.add(me)

    def _drain(self) -> None:
        """Every thread's unended line written (under the lock)."""
        while self._pending:
            thread, text = self._pending.popitem()
            self._put(text)
            self._mid.add(thread)  # what that thread writes next goes on after it

    def _put(self, text: str) -> None:
        out = self._out()
        try:
            out.write(text)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise self._failed(e) from None

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        with self._lock:
            self._drain()
        if self.raw is None:
            return
        try:
            self.raw.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            raise self._failed(e) from None

    def isatty(self) -> bool:
        return self.raw is not None and self.raw.isatty()

    def fileno(self) -> int:
        return self._out().fileno()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._out(), name)


def control(stream: object, sequence: str) -> None:
    """Write iosched's own terminal sequence to ``stream`` (a TerminalStream's ``control``, else a plain write)."""
    put = getattr(stream, "control", None)
    if put is None:
        put = stream.write  # type: ignore[attr-defined]
    put(sequence)


def rewrite_line(stream: object, text: str, end: str = "") -> None:
    """A live line rewritten in place: ``\\r``, ``text`` (sanitised), then the rest of the old line cleared."""
    control(stream, "\r")
    stream.write(text)  # type: ignore[attr-defined]
    control(stream, "\x1b[K")
    if end:
        stream.write(end)  # type: ignore[attr-defined]
    stream.flush()  # type: ignore[attr-defined]


def columns(stream: object) -> int | None:
    """The width ``stream``'s lines are broken to (a terminal's, unless ``unwrapped``); None: lines go out whole."""
    return stream.columns() if isinstance(stream, TerminalStream) else None


def fitted(line: str, hang: int, stream: object | None = None) -> str:
    """``line`` broken at spaces to ``stream``'s width (default stdout), its continuations ``hang`` columns in: a
    table's last, free-text column wraps under itself."""
    width = columns(sys.stdout if stream is None else stream)
    return line if width is None else "\n".join(wrap_cells(line, width, hang))


def unwrapped(stream: object) -> None:
    """What ``stream`` writes goes out whole even on a terminal: a machine-readable output (JSON, CSV, markdown, a
    man page)."""
    if isinstance(stream, TerminalStream):
        stream.wrap = False


def held_on_null(raw: TextIO | None) -> None:
    """``raw``'s descriptor pointed at /dev/null: what is still buffered there is dropped, not written again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        if raw is not None:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, raw.fileno())
            os.close(null)


@contextlib.contextmanager
def installed() -> Iterator[None]:
    """While the command runs: standard descriptors closed at the start held on /dev/null, sys.stdout and sys.stderr
    wrapped (once: an inner use leaves them as they are), then put back as they were."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError as e:
            if e.errno != errno.EBADF:
                continue
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    out, err = sys.stdout, sys.stderr
    if not isinstance(out, TerminalStream):
        sys.stdout = TerminalStream(out, "output")  # type: ignore[assignment]
    if not isinstance(err, TerminalStream):
        sys.stderr = TerminalStream(err, "error")  # type: ignore[assignment]
    try:
        yield
    finally:
        for stream in (sys.stderr, sys.stdout):  # what a thread left unended goes out before they are put back
            with contextlib.suppress(OSError, IoschedError, ValueError):
                stream.flush()
        sys.stdout, sys.stderr = out, err


def said(message: str) -> None:
    """One sentence on stderr; nothing when stderr itself cannot be written."""
    with contextlib.suppress(OSError, IoschedError):
        print(message, file=sys.stderr, flush=True)


def finished(run: Callable[[], int]) -> int:
    """``run()``'s exit code, once what it wrote to stdout is flushed: a write that fails, then or on the way,
    is one sentence and exit 1 (an exit argparse asks for, after --help or --version, too)."""
    try:
        try:
            code = run()
        except SystemExit as e:
            sys.stdout.flush()
            raise e from None
        sys.stdout.flush()
        return code
    except OutputFailed as e:
        said(f"iosched: {e}")
        return 1
    except BrokenPipeError:
        # `iosched jobs | head`: the reader left; leave quietly (and keep Python's exit flush from failing).
        held_on_null(getattr(sys.stdout, "raw", sys.stdout))
        return 0
