"""A user's regular expressions (`--cmd-metric NAME=REGEX`) run against a deadline.

Python's `re` backtracks and cannot be interrupted: `(a+)+$` over a long line of 'a's that ends in anything else
runs for ever, a CPU at 100%, the experiment's thread stuck and the device held on its variant until Ctrl-C. So the
patterns run in a child process (core/experiment/pattern_child.py: the standard library alone, dying with iosched),
killed at its deadline; the run whose figures it was reading is then invalid, with the reason, and the experiment
goes on. What it reads is already bounded (the last MiB of the command's output). A regex engine without
backtracking (RE2) would have been a new dependency, and would change what a pattern means (no lookaround, no
backreference); the child costs about 20 ms of a run (bench/pattern_child.py).

Before anything runs, ``slow_pattern`` tries each pattern over short lines of one repeated character (each
character the pattern names, digits, letters, blanks), each ended by a character that breaks the match: a pattern
that backtracks without bound needs seconds to centuries there, a sound one microseconds. One that does is refused
at once, with the reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from iosched.core.experiment.control import Cancelled
from iosched.core.load.fio import dies_with_us

RUN_DEADLINE_S = 5.0  # every pattern of a run together, over the command's output
PROBE_DEADLINE_S = 2.0  # every pattern of a flag or a study together, over the probes (the child's start included)
PROBE_LENGTH = 64  # 2**64 ways for (a+)+ to fail, microseconds for a pattern that fails one way
_PROBE_CHARS = "aZ09 \t._-=:"  # besides the pattern's own characters
_PROBE_ENDS = ("\0", " ", "!")  # what ends each probe line: each breaks some pattern's match at the last moment
_CHILD = Path(__file__).with_name("pattern_child.py")
_POLL_S = 0.1


@dataclass(frozen=True)
class Search:
    """What the child found: per pattern it finished, per text, the last match's text (None: no match); and the
    index of the pattern it was still on at its deadline, or why it failed, if it did not finish them all."""

    found: list[list[str | None]]
    slow: int | None = None
    failed: str | None = None


def search(patterns: Sequence[str], texts: Sequence[str], deadline_s: float,
           cancelled: threading.Event | None = None) -> Search:
    """Each pattern's last match in each text, found by the child within ``deadline_s`` (all of them together);
    Cancelled when ``cancelled`` is set meanwhile (the child is killed either way)."""
    payload = json.dumps({"patterns": list(patterns), "texts": list(texts)}).encode("ascii")
    # Its own session: a Ctrl-C at the terminal is iosched's to handle. It dies with the thread that started it.
    proc = subprocess.Popen(dies_with_us([sys.executable, "-I", "-S", str(_CHILD)]), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    end = time.monotonic() + deadline_s
    late = False
    try:
        given: bytes | None = payload
        while True:
            try:
                out, err = proc.communicate(given, timeout=_POLL_S)
                break
            except subprocess.TimeoutExpired:
                given = None  # the input goes on being written: it is given once
                if cancelled is not None and cancelled.is_set():
                    raise Cancelled("cancelled") from None
                if time.monotonic() >= end:
                    late = True
                    proc.kill()
                    out, err = proc.communicate()  # what it wrote before: nothing is lost
                    break
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    found = _lines(out, len(patterns), len(texts))
    if late:
        return Search(found, slow=len(found))
    if proc.returncode != 0 or len(found) != len(patterns):
        last = (err.decode(errors="replace").strip().splitlines() or ["no word"])[-1][:120]
        return Search(found, failed=f"the pattern reader ended with status {proc.returncode} ({last})")
    return Search(found)


def _lines(out: bytes, patterns: int, texts: int) -> list[list[str | None]]:
    """The child's lines in order, as far as they are whole and of their shape."""
    found: list[list[str | None]] = []
    for line in out.split(b"\n"):
        try:
            index, got = json.loads(line)
        except ValueError:
            break
        if index != len(found) or index >= patterns or not isinstance(got, list) or len(got) != texts:
            break
        found.append([x if isinstance(x, str) else None for x in got])
    return found


def probes(patterns: Sequence[str]) -> list[str]:
    """Short lines of one repeated character each, ended by a character that breaks the match."""
    own = dict.fromkeys(c for p in patterns for c in p if c.isprintable())
    chars = list(dict.fromkeys([*_PROBE_CHARS, *own]))[:48]
    return [c * PROBE_LENGTH + end for c in chars for end in _PROBE_ENDS]


_sound: set[str] = set()  # patterns that passed: a flag parsed twice is probed once


def slow_pattern(patterns: Sequence[str]) -> str | None:
    """The first of ``patterns`` that backtracks without bound on the probes, or None."""
    todo = [p for p in dict.fromkeys(patterns) if p not in _sound]
    if not todo:
        return None
    got = search(todo, probes(todo), PROBE_DEADLINE_S)
    if got.slow is not None:
        return todo[got.slow]
    if got.failed is None:
        _sound.update(todo)
    return None
