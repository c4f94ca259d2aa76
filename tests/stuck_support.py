"""A kernel whose scheduler switch does not return (kernel bugzilla 219166), for tests of the one door's deadline: the
one door's writer process (core/settings/writes.py) made to wait for good on any write to a queue/scheduler file,
other writes going through as ever. Which writer runs is the module's ``_CHILD``; the one running is closed first so
the next write starts one running the code given."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from iosched.core.settings import writes

REAL_CHILD = writes._CHILD
_OPEN = "    try:\n        fd = os.open("
HANGING_CHILD = REAL_CHILD.replace(
    _OPEN, '    if path.endswith(b"/queue/scheduler"):\n        import time\n        time.sleep(3600)\n' + _OPEN, 1)
assert HANGING_CHILD != REAL_CHILD


def writer_code(monkeypatch: pytest.MonkeyPatch, code: str) -> None:
    """The writers from now on run ``code``: the one running is closed, the next write starts one."""
    monkeypatch.setattr(writes, "_CHILD", code)
    writes._WRITER.close()


def hanging_switches(monkeypatch: pytest.MonkeyPatch, deadline: str = "0.3") -> Iterator[None]:
    """Switches that never return, reported after ``deadline`` seconds; every writer left is ended afterwards (the
    kernel letting go). A generator for a fixture to yield from."""
    writer_code(monkeypatch, HANGING_CHILD)
    monkeypatch.setenv("IOSCHED_WRITE_DEADLINE", deadline)
    left = writes._WRITER.left
    left.clear()
    try:
        yield
    finally:
        for proc in [*left, *([writes._WRITER.proc] if writes._WRITER.proc else [])]:
            proc.kill()
            proc.wait()
        left.clear()
        writes._WRITER.close()


def let_go(pid: int) -> None:
    """The kernel returns at last: the stuck writer ``pid`` ends (and is reaped, as the next write would)."""
    (writer,) = [p for p in writes._WRITER.left if p.pid == pid]
    writer.kill()
    writer.wait()


_READ = "    t0 = time.perf_counter()\n"


def marking(code: str, mark: Path) -> str:
    """Writer ``code`` that creates ``mark`` as soon as it holds a request, before it does anything with it: a test's
    Ctrl-C then lands while the kernel has the write, however long the request took to arrive (a loaded machine)."""
    marked = code.replace(_READ, f"    open({str(mark)!r}, 'w').close()\n" + _READ, 1)
    assert marked != code
    return marked


def late_child(seconds: float) -> str:
    """Writer code whose every write returns ``seconds`` late (a switch under load), then lands as ever."""
    code = REAL_CHILD.replace(_OPEN, f"    time.sleep({seconds})\n" + _OPEN, 1)
    assert code != REAL_CHILD
    return code


def end_left_writers() -> None:
    """Every writer abandoned so far ended and reaped (the kernel letting go), and the running one closed."""
    for proc in writes._WRITER.left:
        proc.kill()
        proc.wait()
    writes._WRITER.left.clear()
    writes._WRITER.close()
