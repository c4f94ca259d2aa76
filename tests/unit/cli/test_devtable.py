"""`iosched list` never breaks a row: fitted to a terminal (COLUMNS, an 80-column tmux pane, a wide one) by
dropping or shortening the less important columns, and whole lines at their natural width into a pipe."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

from iosched.cli.devtable import table_lines
from iosched.core.kernel.devices import list_devices

from conftest import need, run_cli
from fixtree import FixTree

LONG_FILE = "/var/lib/images/a-rather-long-directory-name/holding/the-backing-file-of-this-loop-device.img"
MODEL = "Samsung SSD 980 PRO with Heatsink 2TB"


def wide_tree(root: Path) -> FixTree:
    tree = FixTree(root)
    tree.add_disk("sda", "8:0", size_sectors=7814037168, rotational=True,
                  scheduler="mq-deadline kyber [bfq] none", extra={"device/model": MODEL})
    tree.add_disk("loop7", "7:7", size_sectors=4194304, extra={"loop/backing_file": LONG_FILE})
    tree.add_disk("nvme0n1", "259:0", size_sectors=1953525168, scheduler="[none] mq-deadline kyber bfq")
    tree.write("proc/self/mountinfo", "29 1 259:0 / /home/someone/with/a/long/mount/point rw - ext4 x rw\n")
    return tree


def by_name(lines: list[str]) -> dict[str, str]:
    return {line.split()[0]: line for line in lines[1:]}


def test_a_pipe_gets_every_row_whole_at_its_natural_width(tmp_path):
    tree = wide_tree(tmp_path / "root")
    r = run_cli("--root", str(tree.root), "list", env={"COLUMNS": "80"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 4 and lines[0].startswith("NAME")
    rows = by_name(lines)
    assert set(rows) == {"sda", "loop7", "nvme0n1"}
    assert rows["loop7"].endswith(f"file {LONG_FILE}")
    assert MODEL in rows["sda"] and "mq-deadline kyber [bfq] none" in rows["sda"]
    assert rows["nvme0n1"].endswith("/home/someone/with/a/long/mount/point")
    assert max(len(line) for line in lines) > 80  # natural width, not the 80 columns a pipe is assumed to have
    assert "\x1b" not in r.stdout


def test_fitted_to_80_columns_by_priority(tmp_path):
    devices = list_devices(wide_tree(tmp_path / "root").root)
    lines = table_lines(devices, 80)
    assert len(lines) == 4 and all(len(line) <= 80 for line in lines)
    header = lines[0].split()
    # The scheduler column is never dropped; MAJ:MIN goes first, before the model or where it is used.
    assert "NAME" in header and "SCHEDULERS" in header and "MAJ:MIN" not in lines[0]
    rows = by_name(lines)
    assert "mq-deadline kyber [bfq] none" in rows["sda"]
    assert rows["loop7"].endswith("-device.img") and "…" in rows["loop7"]  # a path keeps its tail
    natural = table_lines(devices, None)
    assert by_name(natural)["loop7"].endswith(LONG_FILE)
    assert all(len(line) <= 40 for line in table_lines(devices, 40))
    assert "[bfq] +3" in by_name(table_lines(devices, 20))["sda"]  # the last resort: the current one only


def test_control_characters_in_a_cell_stay_on_their_row(tmp_path):
    tree = FixTree(tmp_path / "root")
    tree.add_disk("loop3", "7:3", extra={"loop/backing_file": "/tmp/evil\rname\x1b[2J"})
    lines = table_lines(list_devices(tree.root), None)
    assert len(lines) == 2 and "\x1b" not in lines[1] and "\r" not in lines[1]


def _tmux_lines(tmp_path: Path, width: int, env: str = "") -> list[str]:
    """``iosched list`` in a tmux pane ``width`` columns wide (its own tmux server): the screen's lines."""
    need(shutil.which("tmux") is not None, "needs tmux (Debian package tmux)")
    tree = wide_tree(tmp_path / f"root{width}")
    sock, session, marker = f"iosched-list-{uuid.uuid4().hex[:8]}", "list", "--list-done--"
    cmd = (f"cd {shlex.quote(os.getcwd())} && {env} {shlex.quote(sys.executable)} -m iosched.cli "
           f"--root {shlex.quote(str(tree.root))} list; echo {marker}; sleep 60")

    def tmux(*args: str) -> str:
        return subprocess.run(["tmux", "-L", sock, *args], capture_output=True, text=True, check=True).stdout

    tmux("new-session", "-d", "-s", session, "-x", str(width), "-y", "20")
    socket = Path(tmux("display-message", "-p", "#{socket_path}").strip())
    try:
        tmux("send-keys", "-t", session, f"clear; exec bash -c {shlex.quote(cmd)}", "Enter")
        deadline, text = time.monotonic() + 30, ""
        while time.monotonic() < deadline:
            text = tmux("capture-pane", "-p", "-t", session)
            if f"\n{marker}" in text:
                break
            time.sleep(0.1)
        lines = text.splitlines()
        assert marker in lines, text
        start = next(i for i, line in enumerate(lines) if line.startswith("NAME"))
        return lines[start:lines.index(marker)]
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-session", "-t", session], capture_output=True)
        socket.unlink(missing_ok=True)  # the server left with its last session; its socket file stays


def test_terminals_80_columns_wide_by_pane_or_by_columns_and_a_wide_one(tmp_path):
    for lines in (_tmux_lines(tmp_path, 80), _tmux_lines(tmp_path, 200, env="COLUMNS=80")):
        assert len(lines) == 4, lines  # one screen line per row: nothing wrapped
        assert all(len(line) <= 80 for line in lines)
        assert set(by_name(lines)) == {"sda", "loop7", "nvme0n1"}
    wide = _tmux_lines(tmp_path, 200)
    assert len(wide) == 4 and by_name(wide)["loop7"].endswith(LONG_FILE) and "MAJ:MIN" in wide[0]
