"""End to end as a person would: the real `iosched` in tmux, keys with send-keys, the screen with capture-pane."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import Loop, detach_loop, need_real

pytestmark = pytest.mark.plumbing  # measures nothing: runs beside another test (tests/run)


SESSION = f"iosched-e2e-{os.getpid()}"  # of its own: tests of other clones may run beside


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


def screen() -> str:
    return tmux("capture-pane", "-p", "-t", SESSION)


def wait_for(predicate, what: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = screen()
        if predicate(text):
            return text
        time.sleep(0.2)
    size = tmux("display-message", "-p", "-t", SESSION, "#{window_width}x#{window_height}").strip()
    raise AssertionError(f"timed out waiting for {what}; screen ({size}) was:\n{text}")


def status_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def walk_to(device: str) -> None:
    """Walk the table's cursor to ``device`` as a person would: a key, then a look once the status line has
    moved (a busy machine repaints late, and keys sent faster overshoot), turning back at either end."""
    key = "Down"
    for _ in range(100):
        line = status_line(screen())
        if f"iosched  {device} " in line:
            return
        tmux("send-keys", "-t", SESSION, key)
        try:
            wait_for(lambda t, before=line: status_line(t) != before, "the cursor to move", timeout=3)
        except AssertionError:
            key = "Up" if key == "Down" else "Down"  # it did not move: an end of the table
    raise AssertionError(f"the cursor never reached {device}; screen was:\n{screen()}")


def start_iosched(run_dir: Path, results: Path, done: Path, width: int, height: int) -> None:
    """`iosched` in a tmux window of ``width`` x ``height`` (sized first, then the app started in it: no resize race
    at start-up), its exit status into ``done``; back once its device table shows (the machine may hold more devices
    than the table shows: walk_to finds ours)."""
    cmd = (f"cd {shlex.quote(os.getcwd())} && IOSCHED_RUN_DIR={shlex.quote(str(run_dir))} "
           f"IOSCHED_RESULTS_DIR={shlex.quote(str(results))} "
           f"{shlex.quote(sys.executable)} -m iosched.cli; echo $? > {shlex.quote(str(done))}; sleep 30")
    subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
    tmux("new-session", "-d", "-s", SESSION, "-x", str(width), "-y", str(height))
    tmux("send-keys", "-t", SESSION, f"exec bash -c {shlex.quote(cmd)}", "Enter")
    wait_for(lambda t: "iosched" in status_line(t) and "loop" in t, "the device table")


def test_switch_to_bfq_with_keys_then_detach_then_quit(tmp_path: Path, private_journal: Path, make_loop):
    need_real("tmux")
    loop: Loop = make_loop()
    done = tmp_path / "exit-code"
    try:
        start_iosched(private_journal, Path(os.environ["IOSCHED_RESULTS_DIR"]), done, 100, 30)
        walk_to(loop.name)
        original = loop.current()
        assert original != "bfq"

        tmux("send-keys", "-t", SESSION, "s")
        wait_for(lambda t: "IO scheduler (Enter switches" in t, "the scheduler picker")
        tmux("send-keys", "-t", SESSION, "End")
        time.sleep(0.2)
        tmux("send-keys", "-t", SESSION, "Enter")
        wait_for(lambda t: f"{loop.name} [bfq]" in status_line(t), "the status line to say bfq")
        assert loop.scheduler_text().split().count("[bfq]") == 1
        wait_for(lambda t: f"{original} -> bfq in" in t, "the switch notification")
        # The marker's label sits on the top row of each chart, the one with the axis maximum ("┤").
        wait_for(lambda t: any("┤" in line and "bfq" in line for line in t.splitlines()), "a marker on the graphs")

        detach_loop(loop)
        # Row by row: loop1 must not be taken for present because loop10..loop19 are listed.
        wait_for(lambda t: all(line.split()[:1] != [loop.name] for line in t.split("\n", 1)[1].split("IOPS")[0]
                               .splitlines()), "the device to leave the table")
        time.sleep(1.0)
        assert "iosched" in status_line(screen()), "the app died after the device went away"

        tmux("send-keys", "-t", SESSION, "q")
        wait_for(lambda t: "Restore the original values" in t, "the restore question")
        tmux("send-keys", "-t", SESSION, "n")
        deadline = time.monotonic() + 10
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert done.read_text().strip() == "0"
        assert "iosched restore" in screen()
    finally:
        subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)


def footer_whole(text: str) -> bool:
    """The key bar's last keys whole: Help, Quit and the palette's hint ("q Qui" was the cut one)."""
    bar = text.rstrip("\n").splitlines()[-1]
    return "f1 Help" in bar and "q Quit" in bar and bar.rstrip().endswith("^p palette")


def test_at_80x24_the_live_view_a_job_a_compare_advise_and_quit(tmp_path: Path, private_journal: Path, make_loop):
    """As a newcomer at 80x24: every column up to wMB/s, each screen's keys whole, a job's line, a compare that
    decides before its last look (an interactive reader under a write flood, none against bfq, at most 8 runs each)
    with its bar full, the Advise screen, and quit."""
    need_real("tmux", "fio")
    loop: Loop = make_loop("256M")
    done = tmp_path / "exit-code"
    try:
        start_iosched(private_journal, tmp_path, done, 80, 24)
        walk_to(loop.name)
        wait_for(lambda t: " wMB/s" in t.splitlines()[1] and footer_whole(t), "wMB/s and the keys, whole")
        # A job: its line, and the keys still whole.
        tmux("send-keys", "-t", SESSION, "j")
        wait_for(lambda t: "run a job for" in t, "the job picker")
        tmux("send-keys", "-t", SESSION, "Enter")
        text = wait_for(lambda t: "▶" in status_line(t), "the job's progress in the status line")
        assert footer_whole(text), text
        tmux("send-keys", "-t", SESSION, "x")
        wait_for(lambda t: "▶" not in status_line(t), "the job to stop", timeout=20)
        # A compare until a verdict, at most 8 runs a variant of 2 s.
        tmux("send-keys", "-t", SESSION, "c")
        wait_for(lambda t: "Compare schedulers on" in t, "the compare screen")

        def type_in(*keys: str, then: str) -> str:
            """Keys one at a time, as a person types them, until the screen shows ``then``."""
            for key in keys:
                time.sleep(0.3)
                tmux("send-keys", "-t", SESSION, *(("-l", key[2:]) if key.startswith("l:") else (key,)))
            return wait_for(lambda t: then in t, then)

        type_in("Tab", "Tab", "l:interactive-under-writes", then="interactive-under-writes")  # the job field
        type_in("Tab", "C-u", "8", then="repeats  8")
        type_in("Tab", "C-u", "2", then="runtime s  2")
        text = type_in("Tab", "Tab", "Tab", "Tab", "Tab", "space", then="▐X▌ until a verdict")
        assert footer_whole(text), text
        tmux("send-keys", "-t", SESSION, "C-r")
        text = wait_for(lambda t: "done; the device is back" in t, "the verdict", timeout=180)
        lines = text.splitlines()
        (bar,) = [line for line in lines if "━" in line]
        assert bar.split()[-1] == "100%", text
        said = " ".join(" ".join(lines).split())
        # Decided at a look before the 8 runs a variant it could run (4, or 6 on a loaded machine): the bar full.
        ran = re.search(r"(\d+) runs per variant", said)
        assert ran and int(ran.group(1)) < 8 and "lower foreground p50 latency than none" in said, text
        assert footer_whole(text), text
        # The Advise screen, from the live view; then quit: nothing this session switched, so nothing to ask.
        tmux("send-keys", "-t", SESSION, "Escape")
        wait_for(lambda t: "iosched" in status_line(t), "the live view again")
        tmux("send-keys", "-t", SESSION, "a")
        text = wait_for(lambda t: "Advise: which scheduler for" in t and footer_whole(t), "the Advise screen")
        assert "· observe  · plan  · test  · decide  · keep" in text, text
        tmux("send-keys", "-t", SESSION, "Escape")
        wait_for(lambda t: "iosched" in status_line(t), "the live view again")
        tmux("send-keys", "-t", SESSION, "q")
        deadline = time.monotonic() + 15
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert done.read_text().strip() == "0"
        assert loop.current() == loop.initial_scheduler
    finally:
        subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
