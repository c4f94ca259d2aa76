"""End to end as a person would: the real `iosched` in tmux, keys with send-keys, the screen with capture-pane."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from conftest import Loop, detach_loop, need_real

SESSION = "iosched-e2e"


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


def test_switch_to_bfq_with_keys_then_detach_then_quit(tmp_path: Path, private_journal: Path, make_loop):
    need_real("tmux")
    loop: Loop = make_loop()
    done = tmp_path / "exit-code"
    cmd = (f"cd {shlex.quote(os.getcwd())} && IOSCHED_RUN_DIR={shlex.quote(str(private_journal))} "
           f"IOSCHED_RESULTS_DIR={shlex.quote(os.environ['IOSCHED_RESULTS_DIR'])} "
           f"{shlex.quote(sys.executable)} -m iosched.cli; echo $? > {shlex.quote(str(done))}; sleep 30")
    subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
    # Size the window first, then start the app in it: no resize race at start-up.
    tmux("new-session", "-d", "-s", SESSION, "-x", "100", "-y", "30")
    tmux("send-keys", "-t", SESSION, f"exec bash -c {shlex.quote(cmd)}", "Enter")
    try:
        # The machine may hold more devices than the table shows: wait for the app, then walk to ours.
        wait_for(lambda t: "iosched" in status_line(t) and "loop" in t, "the device table")
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
