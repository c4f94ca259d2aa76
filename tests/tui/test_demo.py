"""The demo sandbox, end to end in tmux: it appears, fio runs on it, it is gone after quit and after SIGKILL."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fio_support import fio_procs
from test_tmux_e2e import SESSION, tmux, wait_for

from conftest import need_real, run_cli


def start_demo(tmp_path: Path, run_dir: Path, done: Path) -> None:
    cmd = (f"cd {shlex.quote(os.getcwd())} && IOSCHED_RUN_DIR={shlex.quote(str(run_dir))} "
           f"IOSCHED_RESULTS_DIR={shlex.quote(os.environ['IOSCHED_RESULTS_DIR'])} "
           f"{shlex.quote(sys.executable)} -m iosched.cli demo --size 512M --dir {shlex.quote(str(tmp_path))}; "
           f"echo $? > {shlex.quote(str(done))}; sleep 30")
    subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
    tmux("new-session", "-d", "-s", SESSION, "-x", "100", "-y", "30")
    tmux("send-keys", "-t", SESSION, f"exec bash -c {shlex.quote(cmd)}", "Enter")


def sandbox_device(tmp_path: Path) -> tuple[str, Path]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for d in json.loads(run_cli("list", "--json").stdout):
            if (d.get("backing_file") or "").startswith(str(tmp_path)):
                return d["name"], Path(d["backing_file"])
        time.sleep(0.2)
    raise AssertionError("the sandbox never appeared in the inventory")


def attached(file: Path) -> bool:
    return bool(subprocess.run(["losetup", "-j", str(file)], capture_output=True, text=True).stdout.strip())


def test_demo_runs_a_job_and_cleans_up_on_quit(tmp_path, private_journal):
    need_real("fio", "tmux")
    done = tmp_path / "exit-code"
    start_demo(tmp_path, private_journal, done)
    try:
        dev, file = sandbox_device(tmp_path)
        wait_for(lambda t: f"iosched  {dev} " in t.splitlines()[0] if t else False, "the sandbox selected")
        wait_for(lambda t: f"Sandbox {dev}" in t, "the demo hint")
        tmux("send-keys", "-t", SESSION, "j")
        wait_for(lambda t: "run a job" in t, "the job picker")
        tmux("send-keys", "-t", SESSION, "Enter")  # the demo's first suggestion: a reader under a write flood
        wait_for(lambda t: " · bg " in t.splitlines()[0], "each role's figures in the status line")
        assert "interactive-under-writes" in wait_for(lambda t: "Foreground latency ms" in t, "the role chart")
        assert fio_procs(f"/dev/{dev}")
        # A switch on the sandbox: quitting asks nothing about it, since the sandbox goes with the demo.
        tmux("send-keys", "-t", SESSION, "s")
        wait_for(lambda t: "IO scheduler (Enter switches" in t, "the scheduler picker")
        tmux("send-keys", "-t", SESSION, "Down", "Down", "Enter")  # past the current one (none)
        wait_for(lambda t: f"{dev} [none]" not in t.splitlines()[0], "the switch")
        tmux("send-keys", "-t", SESSION, "q")
        deadline = time.monotonic() + 15
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert done.read_text().strip() == "0"
        assert not attached(file) and not file.parent.exists()
        assert fio_procs(f"/dev/{dev}") == []
    finally:
        subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)


def test_demo_killed_is_cleaned_by_restore(tmp_path, private_journal):
    need_real("tmux")
    done = tmp_path / "exit-code"
    start_demo(tmp_path, private_journal, done)
    try:
        dev, file = sandbox_device(tmp_path)
        pids = subprocess.run(["pgrep", "-f", f"iosched.cli demo --size 512M --dir {tmp_path}"],
                              capture_output=True, text=True).stdout.split()
        # The python process itself, not the shell that started it.
        argv = {int(p): Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0") for p in pids}
        (pid,) = [p for p, a in argv.items() if a[1:3] == [b"-m", b"iosched.cli"]]
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.3)
        assert attached(file)
        r = run_cli("restore", "--list")
        assert "would remove a demo sandbox" in r.stdout and attached(file)
        r = run_cli("restore")
        assert r.returncode == 0 and f"removed a demo sandbox a crashed demo left: {dev}" in r.stdout
        assert not attached(file) and not file.parent.exists()
    finally:
        subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)


def test_demo_needs_root():
    code = ("import os, sys; from iosched.cli.main import build_parser, run;"
            "args = build_parser().parse_args(['demo']);"
            "os.setgroups([]); os.setgid(65534); os.setuid(65534); sys.exit(run(args))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "run it as root" in r.stderr


@pytest.fixture
def shm_dir() -> Iterator[Path]:
    """A folder on tmpfs: a sandbox file that fio wrote at random is unlinked at once there, where on a disk its
    tens of thousands of extents take seconds to free (the time the test gives the demo to clean up)."""
    d = Path(tempfile.mkdtemp(prefix="iosched-test-", dir="/dev/shm"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_hangup_cleans_the_sandbox_and_puts_an_experiment_device_back(tmp_path, shm_dir, private_journal):
    """A dropped SSH session (tmux kill-session sends SIGHUP): no restore needed afterwards."""
    need_real("fio", "tmux")
    done = tmp_path / "exit-code"
    start_demo(shm_dir, private_journal, done)
    try:
        dev, file = sandbox_device(shm_dir)
        wait_for(lambda t: f"Sandbox {dev}" in t, "the demo hint")
        tmux("send-keys", "-t", SESSION, "c")
        wait_for(lambda t: "Compare schedulers on" in t, "the experiment screen")
        tmux("send-keys", "-t", SESSION, "C-r")
        deadline = time.monotonic() + 15
        while not fio_procs(f"/dev/{dev}") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert fio_procs(f"/dev/{dev}"), "the experiment did not start"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
    # The demo stops fio, puts the device back, detaches it, then removes its folder: wait for all, not only the
    # first. Under a loaded CI machine the whole took more than 20 s once (the device was detached later).
    deadline = time.monotonic() + 45
    while (attached(file) or file.parent.exists()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not attached(file) and not file.parent.exists()
    assert fio_procs(f"/dev/{dev}") == []
    journal = private_journal / "journal.json"
    assert not journal.exists() or json.loads(journal.read_text())["entries"] == []
