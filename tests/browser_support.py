"""Helpers for driving `iosched serve` in headless Chromium (tests and docs/browser_view.py).

The terminal's text is read from xterm.js itself: a shift-drag selects the whole screen (shift makes xterm
select even while the app tracks the mouse) and a copy event hands back what xterm's buffer holds.
"""

from __future__ import annotations

import os
import re
import select
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

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

# Draws each character in the page's terminal font on a canvas; returns those whose ink is that of a character
# no font has (U+E000, private use): the ones that would show as boxes or nothing.
MISSING_GLYPHS_JS = """
const chars = arguments[0], done = arguments[1];
const font = '24px "Roboto Mono"';
Promise.all(chars.map(ch => document.fonts.load(font, ch))).then(() => {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 40;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  const ink = ch => {
    ctx.clearRect(0, 0, 40, 40); ctx.font = font; ctx.fillStyle = '#fff'; ctx.fillText(ch, 4, 30);
    return Array.from(ctx.getImageData(0, 0, 40, 40).data).join(',');
  };
  const none = ink('\\ue000');
  done(chars.filter(ch => ink(ch) === none));
});
"""

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


def read_url(proc: subprocess.Popen, deadline: float) -> str:
    """The URL `iosched serve` prints at start (with its token), read as a person would from its output."""
    assert proc.stdout is not None
    seen = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                break
            seen += chunk
            m = re.search(rb"on (http://\S+\?token=\S+)", seen)
            if m:
                return m.group(1).decode()
        elif proc.poll() is not None:
            break
    raise AssertionError(f"iosched serve printed no URL: {seen.decode(errors='replace')}")


@contextmanager
def serving(*flags: str, run_dir: Path, before: tuple[str, ...] = ()) -> Iterator[str]:
    """`iosched serve` on a free loopback port in its own session; killed with all its tabs' apps after.

    Yields the URL it printed, token included."""
    port = free_port()
    env = {**os.environ, "IOSCHED_RUN_DIR": str(run_dir)}
    proc = subprocess.Popen([sys.executable, "-m", "iosched.cli", *before, "serve", "--port", str(port), *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        url = read_url(proc, deadline)
        while True:
            try:
                urllib.request.urlopen(url, timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("iosched serve did not come up") from None
                time.sleep(0.2)
        yield url
    finally:
        stop_server(proc)


def stop_server(proc: subprocess.Popen) -> None:
    """`iosched serve` and every tab's app it started: TERM to its session, KILL after 10 s."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    if proc.stdout:
        proc.stdout.close()


def start_chromium(env: dict[str, str] | None = None, size: tuple[int, int] = (1280, 1000)):
    """Debian's headless Chromium through its own chromedriver: no browser download."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={size[0]},{size[1]}"):
        options.add_argument(arg)
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER, env=env))


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
        """Walk the table's cursor to the device with the arrow keys, as a person would.

        The table is sorted by name: the distance is counted on the machine's device list, then corrected
        one row at a time (devices of other programs may come and go meanwhile).
        """
        from selenium.webdriver.common.keys import Keys

        from iosched.core.kernel.devices import list_devices

        for _ in range(60):
            m = re.search(r"\b(\S+) \[", self.status())
            current = m.group(1) if m else ""
            if current == device:
                return self.text()
            names = sorted(d.name for d in list_devices())
            if current in names and device in names:
                steps = names.index(device) - names.index(current)
            else:
                steps = 1 if current < device else -1
            self.keys(*[Keys.ARROW_DOWN if steps > 0 else Keys.ARROW_UP] * abs(steps))
            time.sleep(0.3)
        raise AssertionError(f"could not select {device}; status: {self.status()}")


