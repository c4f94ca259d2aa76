"""`iosched serve` in a real headless Chromium: the page draws the TUI, keys from the browser reach it, and
writes happen only with --allow-writes (sysfs read back).

The terminal's text comes from xterm.js's own buffer (see browser_support).
"""

from __future__ import annotations

import os
import re
import shutil
import time
import urllib.request
from pathlib import Path

import pytest
from browser_support import MISSING_GLYPHS_JS, Page, serving, start_chromium

from conftest import Loop, need, need_real


def need_chromium() -> None:
    need(shutil.which("chromium") is not None and shutil.which("chromedriver") is not None,
         "needs chromium and chromedriver (Debian: chromium chromium-driver)")
    try:
        import selenium  # noqa: F401
    except ImportError:
        need(False, "needs selenium (the test extra)")


@pytest.fixture
def browser():
    need_chromium()
    driver = start_chromium()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def bare_browser(tmp_path: Path):
    """Chromium that sees no font on the machine at all, like a viewer's laptop that has none we use."""
    need_chromium()
    conf = tmp_path / "fonts.conf"
    conf.write_text(f'<?xml version="1.0"?>\n<fontconfig><cachedir>{tmp_path}/fc-cache</cachedir></fontconfig>\n')
    driver = start_chromium({**os.environ, "FONTCONFIG_FILE": str(conf)})
    try:
        yield driver
    finally:
        driver.quit()


def next_scheduler(loop: Loop) -> str:
    names = loop.scheduler_text().replace("[", "").replace("]", "").split()
    return names[(names.index(loop.current()) + 1) % len(names)]


def test_page_loads_nothing_from_outside(private_journal: Path):
    with serving(run_dir=private_journal) as url:
        html = urllib.request.urlopen(url, timeout=5).read().decode()
    links = re.findall(r'(?:src|href)="([^"]*)"', html) + re.findall(r'url\("?([^")]*)', html)
    assert links, html
    base = url.split("?")[0]
    outside = [u for u in links if u.startswith(("http:", "https:", "//")) and not u.startswith(base)]
    assert outside == []


def test_every_glyph_the_tui_draws_renders_without_any_font_on_the_viewers_machine(bare_browser,
                                                                                  private_journal: Path):
    from glyph_coverage import XTERM_DRAWS, drawn_characters

    chars = [chr(c) for c in sorted(drawn_characters()) if c not in XTERM_DRAWS and c != 0x2800]  # U+2800 is blank
    with serving(run_dir=private_journal) as url:
        Page(bare_browser, url)
        # Control: a snowman is in common system fonts but not in the page's: it must show as missing here.
        assert bare_browser.execute_async_script(MISSING_GLYPHS_JS, ["\u2603", "A"]) == ["\u2603"]
        assert bare_browser.execute_async_script(MISSING_GLYPHS_JS, chars) == []


def test_read_only_view_shows_the_device_and_refuses_a_switch(browser, loopdev: Loop, private_journal: Path):
    need_real()
    before = loopdev.scheduler_text()
    from iosched.core.settings.writer_lock import acquire_writer_lock

    # A writer (a terminal TUI) holds the lock: read-only views open beside it all the same.
    lock = acquire_writer_lock(private_journal)
    assert lock is not None
    try:
        with serving(run_dir=private_journal) as url:
            page = Page(browser, url)
            assert "read-only" in page.status()
            # The key bar (the last row) shows keys. A served app starts blurred, and Textual's Footer draws no
            # keys while blurred: the bar stayed blank for good, so waiting a little still fails then.
            page.wait_for(lambda t: "Help" in t.splitlines()[-1] and "Quit" in t.splitlines()[-1],
                          "the keys in the key bar", timeout=10)
            text = page.select(loopdev.name)
            row = next(line for line in text.splitlines() if line.split()[:1] == [loopdev.name])
            assert loopdev.current() in row.split()
            # Only our own origin was loaded: the fonts and scripts come from this server.
            entries = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
            base = url.split("?")[0]
            assert entries and all(e.startswith(base) or e.startswith("ws://127.0.0.1") for e in entries), entries
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


FOREIGN_PAGE = """<!DOCTYPE html><html><body><script>
  // What a hostile page would do, knowing even the token: drive the root TUI over its socket.
  const ws = new WebSocket("WS_URL");
  ws.onopen = () => { document.title = "opened";
                      ws.send(JSON.stringify(["stdin", "s"])); ws.send(JSON.stringify(["stdin", "\\r"])); };
  ws.onerror = () => { if (document.title !== "opened") document.title = "refused"; };
</script></body></html>"""


def test_a_foreign_page_in_the_browser_cannot_open_the_socket(browser, loopdev: Loop, private_journal: Path,
                                                               tmp_path: Path):
    need_real()
    import http.server
    import threading

    from browser_support import free_port

    before = loopdev.scheduler_text()
    with serving("--allow-writes", run_dir=private_journal) as url:
        port, token = url.split(":")[2].split("/")[0], url.rsplit("token=", 1)[1]
        (tmp_path / "evil.html").write_text(FOREIGN_PAGE.replace("WS_URL", f"ws://127.0.0.1:{port}/ws/{token}"))
        handler = lambda *a: http.server.SimpleHTTPRequestHandler(*a, directory=str(tmp_path))  # noqa: E731
        other = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
        threading.Thread(target=other.serve_forever, daemon=True).start()
        try:
            browser.get(f"http://127.0.0.1:{other.server_address[1]}/evil.html")
            deadline = time.monotonic() + 20
            while browser.title not in ("opened", "refused") and time.monotonic() < deadline:
                time.sleep(0.1)
            assert browser.title == "refused"
        finally:
            other.shutdown()
            other.server_close()
        # The server's own page still works in the same browser.
        Page(browser, url)
    assert loopdev.scheduler_text() == before
