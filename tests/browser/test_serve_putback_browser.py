"""`iosched serve --allow-writes` in a real headless Chromium: an advice under way on the Advise screen, then the
tab's WebSocket dropped without a goodbye (the browser killed: its sockets close, no close frame), or serve itself
stopped by SIGTERM. Either way the device comes back exactly as it was before the run (the scheduler, every tunable,
every queue knob, nr_requests set by hand among them), no fio work folder of the tab's app and no journal entry
is left, and serve's log says what happened."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_support import Page, free_port, read_url, start_chromium, stop_server
from putback_support import hand_set, journal_entries, settings_of, starts_left, work_folders
from test_serve_browser import need_chromium

from conftest import Loop, need_real


def children(pid: int) -> dict[int, list[int]]:
    """ppid -> pids of every process now."""
    out: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                out.setdefault(ppid, []).append(int(entry.name))
    return out


def descendants(pid: int) -> list[int]:
    tree, found, todo = children(pid), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def tab_apps(server: int) -> list[int]:
    """The apps a served iosched runs for its tabs (each its direct child: prlimit and setpriv exec it)."""
    pids = []
    for pid in children(server).get(server, []):
        with contextlib.suppress(OSError):
            if b"--served" in Path(f"/proc/{pid}/cmdline").read_bytes():
                pids.append(pid)
    return pids


class Served:
    """`iosched serve --allow-writes` on a free port in its own session, its output kept."""

    def __init__(self, run_dir: Path) -> None:
        port = free_port()
        self.proc = subprocess.Popen([sys.executable, "-m", "iosched.cli", "serve", "--port", str(port),
                                      "--allow-writes"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True, env={**os.environ, "IOSCHED_RUN_DIR": str(run_dir)})
        self.url = read_url(self.proc, time.monotonic() + 30)
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.seen = ""

    def log(self) -> str:
        assert self.proc.stdout is not None
        with contextlib.suppress(BlockingIOError, ValueError):
            self.seen += (os.read(self.proc.stdout.fileno(), 1 << 20) or b"").decode(errors="replace")
        return self.seen


@contextlib.contextmanager
def served(run_dir: Path) -> Iterator[Served]:
    s = Served(run_dir)
    try:
        yield s
    finally:
        if s.proc.poll() is None:
            stop_server(s.proc)


@contextlib.contextmanager
def chromium() -> Iterator:
    driver = start_chromium()
    try:
        yield driver
    finally:
        driver.quit()


def drop(driver) -> None:
    """The tab's socket ends without a goodbye: every process of the browser killed at once."""
    for pid in descendants(driver.service.process.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def advice_under_way(page: Page, loop: Loop, before: dict[str, str], server: Served) -> int:
    """Open the Advise screen on ``loop``, plan, run, and wait until the device is changed and fio writes (the
    pilot's run: the scheduler as found, from the kernel's defaults); returns the pid of the tab's app."""
    from selenium.webdriver.common.keys import Keys

    (pid,) = tab_apps(server.proc.pid)
    page.select(loop.name)
    page.keys("a")
    page.wait_for(lambda t: f"Advise: which scheduler for {loop.name}?" in t, "the Advise screen")
    page.keys(Keys.CONTROL, "r")
    page.wait_for(lambda t: "ctrl+r runs this plan" in t, "the plan", timeout=60)
    page.keys(Keys.CONTROL, "r")
    assert wait_for(lambda: settings_of(loop) != before and work_folders(pid) != [], 60), "the advice never started"
    page.wait_for(lambda t: "run 1 of" in t, "the first run under way")
    return pid


def wait_for(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


@pytest.mark.parametrize("ending", ["tab dropped", "tab dropped, its app stuck", "serve stopped"])
def test_an_advice_under_way_in_a_tab_puts_the_device_back_as_it_was(loopdev: Loop, private_journal: Path,
                                                                     ending: str):
    """The tab dropped: its app quits, cancels the advice and puts the device back itself. Its app stuck (SIGSTOP,
    deaf to the quit): serve kills it after the grace and puts the device back from the run's starting point.
    serve stopped by SIGTERM: each tab's app is ended and its device put back before serve goes."""
    need_real("fio")
    need_chromium()
    before = hand_set(loopdev)
    with served(private_journal) as server, chromium() as driver:
        pid = advice_under_way(Page(driver, server.url), loopdev, before, server)
        said = f"a tab ended while it ran a test on {loopdev.name}: its app (pid {pid})"
        if ending == "serve stopped":
            os.killpg(server.proc.pid, signal.SIGTERM)
            assert server.proc.wait(60) == 0
            assert f"stopping: ending the app of each tab (pid {pid})" in server.log()
        else:
            if ending == "tab dropped, its app stuck":
                os.kill(pid, signal.SIGSTOP)
            drop(driver)
        assert wait_for(lambda: said in server.log(), 60), server.log()
        assert not Path(f"/proc/{pid}").exists()
        assert settings_of(loopdev) == before
        assert journal_entries(private_journal) == [] and starts_left(private_journal) == []
        assert work_folders(pid) == []
        log = server.log().split(said, 1)[1]
        if ending == "tab dropped, its app stuck":
            assert log.startswith(" did not quit within 3 s and was killed"), log
            assert f"{loopdev.name}: put back as pid {pid}'s run found it: " in log and "nr_requests 64" in log, log
            assert f"removed a fio work directory a killed run left: /tmp/iosched-fio-{pid}-" in log, log
        else:
            assert log.startswith(" quit") and f"{loopdev.name}: as pid {pid}'s run found it" in log, log
