"""cli/terminal.py: what the command line writes goes through the one sanitiser, and a write that fails is one
sentence and a non-zero exit, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from saved_support import SAVED, call

from conftest import run_cli

EVIL = "\x1b]0;owned\x07\x1b[2J\r\x9b2J\u202e"
ACTED_ON = ("\x1b", "\x07", "\r", "\x9b", "\u202e")
KINDS = ["experiment", "alternation", "sequential", "command", "sweep", "matrix", "study", "fleet", "fleet_matrix"]


def _hostile(doc: object) -> None:
    """Every device name and model, host, kernel and machine of a saved document made to carry escape sequences."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key in ("host", "kernel", "machine", "model", "backing_file") and isinstance(value, str):
                doc[key] = value + EVIL
            elif key == "device" and isinstance(value, dict):
                value["name"] = value.get("name", "") + EVIL
                value["model"] = EVIL
            elif key == "notes" and isinstance(value, list):
                value.append(f"a note {EVIL}")
            else:
                _hostile(value)
    elif isinstance(doc, list):
        for x in doc:
            _hostile(x)


@pytest.mark.parametrize("kind", KINDS)
def test_a_saved_files_escape_sequences_never_reach_the_terminal_or_a_page(kind, tmp_path):
    doc = json.loads((SAVED / f"{kind}.json").read_text())
    _hostile(doc)
    path = tmp_path / f"{kind}.json"
    path.write_text(json.dumps(doc))
    shown = 0
    for extra in ([], ["--details"], ["--csv"], ["--plot"], ["--json"], ["--plot-file", str(tmp_path / "c.html")],
                  ["--plot-file", str(tmp_path / "c.txt")]):
        code, out, err = call("report", str(path), *extra)
        assert code == 0 or (kind.startswith("fleet") and "--plot-file" in extra), (extra, err)
        pages = [p.read_text() for p in tmp_path.glob("c.*")]
        for text in (out, err, *pages):
            text = text.replace("\r\n", "\n")  # CSV's line ends: no carriage return alone
            assert not any(c in text for c in ACTED_ON), (extra, [c for c in ACTED_ON if c in text])
        shown += out.count("\\x1b]0;owned\\x07")
    assert shown, "the hostile words are shown, escaped"


def test_pooled_files_and_a_refusal_quote_outside_words_escaped(tmp_path):
    doc = json.loads((SAVED / "experiment.json").read_text())
    _hostile(doc)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(doc))
    doc["started"] += 1
    b.write_text(json.dumps(doc))
    for argv in (["report", str(a), str(b)], ["report", str(tmp_path / f"no{EVIL}.json")]):
        _, out, err = call(*argv)
        assert not any(c in out + err for c in ACTED_ON), argv


# --- a write that fails ---------------------------------------------------------------------------------------


def _cli(args: list[str], stdout: object, closed: bool = False) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "iosched.cli", *args]
    if closed:  # stdout closed before iosched starts: `iosched --print-completion bash >&-`
        argv = ["sh", "-c", 'exec "$@" >&-', "sh", *argv]
    return subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60, env=os.environ)


COMMANDS = [["list"], ["jobs"], ["report", str(SAVED / "experiment.json")], ["report", str(SAVED / "matrix.json")],
            ["--print-man"], ["--print-completion", "bash"], ["--version"], ["jobs", "--help"]]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a)[:30])
def test_stdout_on_a_full_disk_or_closed_is_one_sentence_and_exit_1(args):
    with open("/dev/full", "w") as full:
        r = _cli(args, full)
    assert r.returncode == 1 and r.stderr == "iosched: cannot write to standard output: No space left on device\n", r
    r = _cli(args, None, closed=True)
    assert r.returncode == 1, r
    assert r.stderr == "iosched: cannot write to standard output: it was closed when iosched started\n", r.stderr


def test_a_reader_that_leaves_still_ends_quietly():
    r = subprocess.run(f"{sys.executable} -m iosched.cli jobs | head -c 1", shell=True, capture_output=True, text=True,
                       timeout=60, env=os.environ)
    assert r.stderr == "" and len(r.stdout) == 1


def test_a_file_iosched_opens_never_takes_a_closed_stdouts_number(tmp_path):
    """With stdout closed, the first file opened would get descriptor 1 and take every print: it is held on
    /dev/null first, and the saved file holds JSON alone."""
    out = tmp_path / "plot.txt"
    r = _cli(["report", str(SAVED / "experiment.json"), "--plot-file", str(out)], None, closed=True)
    assert r.returncode == 1 and "cannot write to standard output" in r.stderr
    assert not out.exists() or "verdict" not in out.read_text()


def test_errors_are_one_sentence_also_through_run_cli():
    r = run_cli("report", str(Path("/nonexistent") / f"x{EVIL}"))
    assert r.returncode == 2 and not any(c in r.stderr for c in ACTED_ON), r.stderr


def test_lines_from_two_threads_never_mix():
    """`print` writes its text and its newline in two calls: two threads printing at once (the exporter's refusals
    beside its first line) each get whole lines."""
    import io
    import threading

    from iosched.cli.terminal import TerminalStream

    raw = io.StringIO()
    stream = TerminalStream(raw, "error")
    words = {name: f"{name} says a whole line\x1b[2J" for name in ("a", "b", "c", "d")}

    def chatter(name: str) -> None:
        for _ in range(300):
            print(words[name], file=stream)  # type: ignore[arg-type]

    threads = [threading.Thread(target=chatter, args=(n,)) for n in words]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stream.write("no newline yet")
    stream.flush()
    lines = raw.getvalue().splitlines()
    assert lines[-1] == "no newline yet" and len(lines) == 1201
    assert set(lines[:-1]) == {f"{n} says a whole line\\x1b[2J" for n in words}


def in_terminal(args: list[str], columns: int = 80, timeout: float = 30) -> str:
    """What `iosched ARGS` shows on a terminal ``columns`` wide (a pseudo-terminal: stdout and stderr), as text."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    child = subprocess.Popen([sys.executable, "-m", "iosched.cli", *args], stdin=subprocess.DEVNULL,
                             stdout=follower, stderr=follower, env=env)
    os.close(follower)
    got = b""
    try:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            got += chunk
    finally:
        os.close(leader)
        child.wait(timeout)
    return got.decode().replace("\r\n", "\n")


def test_long_lines_break_at_spaces_on_a_terminal_and_go_whole_into_a_pipe():
    """`iosched jobs` at 80 columns: no line wider, no word cut in two (every word of the piped text stands whole),
    the descriptions continued under themselves; into a pipe the same lines whole, as scripts read them."""
    piped = run_cli("jobs").stdout
    shown = in_terminal(["jobs"])
    assert any(len(line) > 80 for line in piped.splitlines()), "nothing to break: the test proves nothing"
    assert max(len(line) for line in shown.splitlines()) <= 80
    assert shown.split() == piped.split()  # the same words, each whole, in the same order
    continued = [line for line in shown.splitlines() if line.startswith(" " * 44) and line.strip()]
    assert continued, shown
    as_json = in_terminal(["jobs", "--json"])
    assert json.loads(as_json) == json.loads(run_cli("jobs", "--json").stdout)  # data is never broken


def test_watch_folds_its_table_to_the_terminal_and_not_into_a_pipe():
    shown = in_terminal(["watch", "-c", "1", "-i", "0.1"])
    assert max(len(line) for line in shown.splitlines()) <= 80, shown
    assert shown.count("Device") == 2 and "util" in shown and "idle" in shown  # every column, in two blocks
    piped = run_cli("watch", "-c", "1", "-i", "0.1").stdout
    assert piped.count("Device") == 1 and max(len(line) for line in piped.splitlines()) > 80
