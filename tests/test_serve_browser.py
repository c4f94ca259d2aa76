"""`iosched serve` in a real headless Chromium: the page draws the TUI, keys from the browser reach it, and
writes happen only with --allow-writes (sysfs read back).

The terminal's text is read from xterm.js itself: a shift-drag selects the whole screen (shift makes xterm
select even while the app tracks the mouse) and a copy event hands back what xterm's buffer holds.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import Loop, need, need_real

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

COPY_SCREEN_JS = """
const dt = new DataTransfer();
document.querySelector('.xterm').dispatchEvent(
    new ClipboardEvent('copy', {clipboardData: dt, bubbles: true, cancelable: true}));
return dt.getData('text/plain');
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(*flags: str, run_dir: Path) -> Iterator[str]:
    """`iosched serve` on a free loopback port in its own session; killed with all its tabs' apps after."""
    port = free_port()
    env = {**os.environ, "IOSCHED_RUN_DIR": str(run_dir)}
    proc = subprocess.Popen([sys.executable, "-m", "iosched", "serve", "--port", str(port), *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(url, timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
                    raise AssertionError(f"iosched serve did not come up: {out}") from None
                time.sleep(0.2)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if proc.stdout:
            proc.stdout.close()


@pytest.fixture
def browser():
    need(shutil.which("chromium") is not None and shutil.which("chromedriver") is not None,
         "needs chromium and chromedriver (Debian: chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        need(False, "needs selenium (the test extra)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


class Page:
    """One browser tab showing the served TUI."""

    def __init__(self, driver, url: str) -> None:
        self.driver = driver
        driver.get(url)
        self.wait_for(lambda t: "Device" in t and "iosched" in t, "the app's first frame")

    def text(self) -> str:
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.by import By
        from selenium.webdriver.common.keys import Keys

        screen = self.driver.find_element(By.CSS_SELECTOR, ".xterm-screen")
        w, h = screen.size["width"], screen.size["height"]
        if not w or not h:
            return ""
        (ActionChains(self.driver).key_down(Keys.SHIFT)
         .move_to_element_with_offset(screen, -w // 2 + 1, -h // 2 + 1).click_and_hold()
         .move_to_element_with_offset(screen, w // 2 - 1, h // 2 - 1).release().key_up(Keys.SHIFT).perform())
        return self.driver.execute_script(COPY_SCREEN_JS) or ""

    def wait_for(self, predicate: Callable[[str], bool], what: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            if self.driver.find_elements("css selector", ".xterm-screen"):
                text = self.text()
                if predicate(text):
                    return text
            time.sleep(0.3)
        raise AssertionError(f"timed out waiting for {what}; the page's terminal showed:\n{text}")

    def keys(self, *keys: str) -> None:
        from selenium.webdriver.common.by import By

        self.driver.find_element(By.CSS_SELECTOR, ".xterm-helper-textarea").send_keys(*keys)

    def status(self) -> str:
        return self.text().splitlines()[0]

    def select(self, device: str) -> str:
        """Walk the table's cursor to the device with the arrow keys, as a person would."""
        from selenium.webdriver.common.keys import Keys

        for _ in range(200):
            m = re.search(r"\b(\S+) \[", self.status())
            if m and m.group(1) == device:
                return self.text()
            self.keys(Keys.ARROW_DOWN if m is None or m.group(1) < device else Keys.ARROW_UP)
            time.sleep(0.1)
        raise AssertionError(f"could not select {device}; status: {self.status()}")


def next_scheduler(loop: Loop) -> str:
    names = loop.scheduler_text().replace("[", "").replace("]", "").split()
    return names[(names.index(loop.current()) + 1) % len(names)]


def test_page_loads_nothing_from_outside(private_journal: Path):
    with serving(run_dir=private_journal) as url:
        html = urllib.request.urlopen(url, timeout=5).read().decode()
    links = re.findall(r'(?:src|href)="([^"]*)"', html) + re.findall(r'url\("?([^")]*)', html)
    assert links, html
    outside = [u for u in links if u.startswith(("http:", "https:", "//")) and not u.startswith(url)]
    assert outside == []


def test_read_only_view_shows_the_device_and_refuses_a_switch(browser, loopdev: Loop, private_journal: Path):
    need_real()
    before = loopdev.scheduler_text()
    from iosched.core.writer_lock import acquire_writer_lock

    # A writer (a terminal TUI) holds the lock: read-only views open beside it all the same.
    lock = acquire_writer_lock(private_journal)
    assert lock is not None
    try:
        with serving(run_dir=private_journal) as url:
            page = Page(browser, url)
            assert "read-only" in page.status()
            text = page.select(loopdev.name)
            row = next(line for line in text.splitlines() if line.split()[:1] == [loopdev.name])
            assert loopdev.current() in row.split()
            # Only our own origin was loaded: the fonts and scripts come from this server.
            entries = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
            assert entries and all(e.startswith(url) or e.startswith("ws://127.0.0.1") for e in entries), entries
            # The page's own fonts loaded: Roboto Mono from this server, the glyph subset from the page.
            faces = browser.execute_script(
                "return [...document.fonts].map(f => [f.family, f.unicodeRange, f.status])")
            assert any("U+2800-28FF" in r and s == "loaded" for _, r, s in faces), faces
            assert any(r == "U+0-10FFFF" and s == "loaded" for _, r, s in faces), faces
            page.keys("s")
            page.wait_for(lambda t: "Read-only" in t, "the read-only notice")
            from selenium.webdriver.common.keys import Keys

            page.keys(Keys.ARROW_DOWN, Keys.ENTER)  # what would pick the next scheduler in a picker
            page.wait_for(lambda t: "Read-only" in t, "the notice still up")
            assert loopdev.scheduler_text() == before
    finally:
        os.close(lock)


def test_allow_writes_switches_from_the_browser_and_a_second_tab_is_a_view(browser, loopdev: Loop,
                                                                          private_journal: Path):
    need_real()
    from selenium.webdriver.common.keys import Keys

    target = next_scheduler(loopdev)
    with serving("--allow-writes", run_dir=private_journal) as url:
        page = Page(browser, url)
        assert "read-only" not in page.status()
        page.select(loopdev.name)
        page.keys("s")
        page.wait_for(lambda t: "IO scheduler" in t, "the scheduler picker")
        page.keys(Keys.ARROW_DOWN, Keys.ENTER)
        deadline = time.monotonic() + 20
        while loopdev.current() != target and time.monotonic() < deadline:
            time.sleep(0.1)
        assert loopdev.current() == target
        page.wait_for(lambda t: f"{loopdev.name} [{target}]" in t, "the switched scheduler on the page")

        # The first tab holds the writer lock: a second tab opens as a read-only view and says why.
        browser.switch_to.new_window("tab")
        second = Page(browser, url)
        second.wait_for(lambda t: "holds the writer lock" in t and "read-only" in t.splitlines()[0],
                        "the second tab's read-only notice")
