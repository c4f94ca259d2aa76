"""`iosched serve` refuses every request that is not from its own page: a real server, a real WebSocket client.

Any web page the user opens can reach a loopback server: a foreign Origin, a foreign Host (DNS rebinding) or a
missing token is refused with one logged line, before any app starts; a tab's size, count and memory are
bounded, and its app ends when its socket does, answering or not.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
from browser_support import free_port, read_url, stop_server

from iosched.cli.web_guard import MAX_COLUMNS, MAX_ROWS, Guard, clamp_size, is_loopback

from conftest import run_cli


def test_guard_names_this_server_alone():
    g = Guard.for_server("127.0.0.1", 8000, "t0ken")
    assert g.refusal("127.0.0.1:8000", None, "t0ken", need_token=True) is None
    assert g.refusal("localhost:8000", "http://localhost:8000", "t0ken", need_token=True) is None
    assert g.refusal("[::1]:8000", "http://127.0.0.1:8000", "t0ken", need_token=True) is None
    assert "Host" in g.refusal("evil.example:8000", None, "t0ken", need_token=True)
    assert "Host" in g.refusal("127.0.0.1:8001", None, "t0ken", need_token=True)
    assert "Host" in g.refusal("10.0.0.1:8000", None, "t0ken", need_token=True)  # bound to loopback only
    assert "Host" in g.refusal(None, None, "t0ken", need_token=True)
    for origin in ("http://evil.example", "http://127.0.0.1:8001", "null", "https://127.0.0.1:8000",
                   "http://localhost.evil.example:8000", "file://"):
        assert "Origin" in g.refusal("127.0.0.1:8000", origin, "t0ken", need_token=True), origin
    assert g.refusal("127.0.0.1:8000", None, None, need_token=True) == "no token"
    assert g.refusal("127.0.0.1:8000", None, "t0ke", need_token=True) == "a wrong token"
    assert g.refusal("127.0.0.1:8000", None, None, need_token=False) is None
    # Every copy of a header, joined by commas (WSGI's way, and serve's): a second one is refused.
    assert g.refusal("127.0.0.1:8000,127.0.0.1:8000", None, "t0ken", need_token=True) == "more than one Host header"
    assert g.refusal("127.0.0.1:8000", "http://127.0.0.1:8000,http://evil.example", "t0ken",
                     need_token=True) == "more than one Origin header"
    wide = Guard.for_server("0.0.0.0", 80, "t")
    assert wide.refusal("192.0.2.7", "http://192.0.2.7", "t", need_token=True) is None  # any literal, port 80
    assert "Host" in wide.refusal("rebind.example", None, "t", need_token=True)


def test_tab_sizes_are_clamped():
    assert clamp_size("100000", "100000") == (MAX_COLUMNS, MAX_ROWS)
    assert clamp_size("-5", "0") == (10, 4)
    assert clamp_size("x", None) == (80, 24)
    assert clamp_size("9" * 5000, 30) == (80, 30)  # too many digits for int(): the default, no traceback


def test_mapped_loopback_is_loopback():
    assert is_loopback("::ffff:127.0.0.1") and is_loopback("[::ffff:127.0.0.2]")
    assert not is_loopback("::ffff:10.0.0.1")
    r = run_cli("serve", "--host", "::ffff:127.0.0.1", "--port", "1", "--max-tabs", "0")
    assert r.returncode == 2 and "--max-tabs" in r.stderr and "--public" not in r.stderr


@dataclass
class Served:
    proc: subprocess.Popen
    url: str  # as printed, token included
    port: int

    @property
    def token(self) -> str:
        return self.url.rsplit("token=", 1)[1]

    def ws(self, token: str | None = None, query: str = "width=80&height=24") -> str:
        return f"http://127.0.0.1:{self.port}/ws/{self.token if token is None else token}?{query}"

    seen: str = ""

    def log(self) -> str:
        """Everything the server printed so far (its output pipe is non-blocking)."""
        assert self.proc.stdout is not None
        with suppress(BlockingIOError):
            self.seen += (os.read(self.proc.stdout.fileno(), 1 << 20) or b"").decode(errors="replace")
        return self.seen


@contextmanager
def serve(*flags: str, run_dir: Path) -> Iterator[Served]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "iosched.cli", "serve", "--port", str(port), *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, "IOSCHED_RUN_DIR": str(run_dir)})
    try:
        url = read_url(proc, time.monotonic() + 30)
        os.set_blocking(proc.stdout.fileno(), False)
        yield Served(proc, url, port)
    finally:
        stop_server(proc)


def children_of(pid: int) -> list[int]:
    """Live (not zombie) children of a process."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                state, ppid = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
            except (OSError, ValueError):
                continue
            if int(ppid) == pid and state != "Z":
                found.append(int(entry.name))
    return found


def tab_pids(server: Served) -> list[int]:
    """The apps the server runs for its tabs (each is its direct child: prlimit and setpriv exec it)."""
    pids = []
    for pid in children_of(server.proc.pid):
        try:
            if b"--served" in Path(f"/proc/{pid}/cmdline").read_bytes():
                pids.append(pid)
        except OSError:
            pass
    return pids


def tab_size_and_limit(pid: int) -> tuple[tuple[str, str], str]:
    """The terminal size a tab's app was started with, and its data-size limit in bytes."""
    env = dict(v.split("=", 1) for v in Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in v)
    limits = Path(f"/proc/{pid}/limits").read_text().splitlines()
    data = next(line for line in limits if line.startswith("Max data size"))
    return (env["COLUMNS"], env["ROWS"]), data.split()[3]


def wait_until(predicate, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


async def handshake(url: str, origin: str | None = None, host: str | None = None) -> int:
    """The HTTP status of a WebSocket handshake (101 when accepted; the socket is closed at once)."""
    headers = {k: v for k, v in (("Origin", origin), ("Host", host)) if v is not None}
    async with aiohttp.ClientSession() as session:
        try:
            async with session.ws_connect(url, headers=headers) as ws:
                await ws.receive(timeout=20)  # the app's first output
                return 101
        except aiohttp.WSServerHandshakeError as e:
            return e.status


def test_a_foreign_page_no_token_or_a_foreign_host_is_refused_and_logged(private_journal: Path):
    with serve("--allow-writes", run_dir=private_journal) as s:
        origin = f"http://127.0.0.1:{s.port}"
        attempts = [
            (s.ws(), "http://evil.example", None, "Origin 'http://evil.example'"),
            (s.ws(token=""), origin, None, None),  # no token: no such route at all
            (s.ws(token="x" * len(s.token)), origin, None, "a wrong token"),
            (s.ws(), None, f"rebind.example:{s.port}", "Host 'rebind.example"),
        ]
        for url, origin_header, host, logged in attempts:
            assert asyncio.run(handshake(url, origin_header, host)) in (403, 404), url
            assert tab_pids(s) == []  # refused before any app started
            if logged:
                assert wait_until(lambda logged=logged: logged in s.log()), (logged, s.log())
        # The page itself: the token is needed, and a rebinding Host gets nothing either.
        import urllib.error
        import urllib.request

        for url, headers in ((s.url.split("?")[0], {}), (s.url, {"Host": f"rebind.example:{s.port}"})):
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5)
            assert e.value.code == 403
        page = urllib.request.urlopen(s.url, timeout=5)
        assert page.status == 200 and page.headers["X-Frame-Options"] == "DENY"
        # Its own page's origin, under either loopback name, is let in.
        assert asyncio.run(handshake(s.ws(), origin)) == 101
        assert asyncio.run(handshake(s.ws(), f"http://localhost:{s.port}")) == 101


def test_an_oversized_tab_is_clamped_and_limited_and_tabs_are_counted(private_journal: Path):
    async def scenario(s: Served) -> None:
        async with aiohttp.ClientSession() as session:
            first = await session.ws_connect(s.ws(query="width=100000&height=100000"))
            await first.receive(timeout=20)
            [pid] = tab_pids(s)
            size, data_limit = tab_size_and_limit(pid)
            assert size == (str(MAX_COLUMNS), str(MAX_ROWS))
            assert data_limit == str(96 * 1024 * 1024)
            await first.send_json(["resize", {"width": 10**6, "height": "lots"}])  # clamped, not a traceback
            second = await session.ws_connect(s.ws())
            await second.receive(timeout=20)
            with pytest.raises(aiohttp.WSServerHandshakeError) as e:
                await session.ws_connect(s.ws())
            assert e.value.status == 503
            assert len(tab_pids(s)) == 2
            await first.close()
            await second.close()

    with serve("--max-tabs", "2", "--tab-memory", "96", run_dir=private_journal) as s:
        asyncio.run(scenario(s))
        assert wait_until(lambda: tab_pids(s) == [])
        assert "2 tabs are open already" in s.log()


def test_a_tab_that_will_not_answer_is_killed_when_its_socket_ends(private_journal: Path):
    async def scenario(s: Served) -> int:
        async with aiohttp.ClientSession() as session:
            ws = await session.ws_connect(s.ws())
            await ws.receive(timeout=20)
            [pid] = tab_pids(s)
            os.kill(pid, signal.SIGSTOP)  # deaf to the quit message
            await ws.close()
            return pid

    with serve(run_dir=private_journal) as s:
        pid = asyncio.run(scenario(s))
        assert wait_until(lambda: pid not in children_of(s.proc.pid), 30)
        assert s.proc.poll() is None  # the server itself goes on


def status_of(port: int, head: bytes) -> bytes:
    """The status code the server answers a raw request head with (a few seconds or the test fails)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(head)
        seen = b""
        while b"\r\n" not in seen:
            chunk = s.recv(4096)
            assert chunk, f"closed without an answer to {head[:80]!r}"
            seen += chunk
    return seen.split(b" ", 2)[1]


def test_malformed_requests_are_answered_and_print_no_traceback(private_journal: Path):
    with serve(run_dir=private_journal) as s:
        host = f"Host: 127.0.0.1:{s.port}\r\n".encode()
        ours = f"Origin: http://127.0.0.1:{s.port}\r\n".encode()
        page, ws = f"/?token={s.token}".encode(), f"/ws/{s.token}".encode()
        upgrade = b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
        cases = [
            (b"GET " + page + b" HTTP/1.1\r\n" + host + host + b"\r\n", b"400"),  # a second Host
            (b"GET " + ws + b" HTTP/1.1\r\n" + host + b"\r\n", b"426"),  # the socket's address, no upgrade
            (b"HEAD " + ws + b" HTTP/1.1\r\n" + host + b"\r\n", b"426"),
            (b"GET " + ws + b" HTTP/1.1\r\n" + host + upgrade + b"\r\n", b"400"),  # no Sec-WebSocket-Key
            (b"GET " + page + b" HTTP/1.1\r\n" + host + ours + b"Origin: http://evil.example\r\n\r\n", b"403"),
            (b"GET " + ws + b" HTTP/1.1\r\n" + host + ours + b"Origin: http://evil.example\r\n" + upgrade +
             b"Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\n\r\n", b"403"),
            (b"GET " + page + b" HTTP/1.1\r\n\r\n", b"400"),  # no Host at all
            (b"GET " + page + b" HTTP/1.0\r\n\r\n", b"403"),  # no Host, and HTTP/1.0 needs none
            (b"GET " + page + b" HTTP/1.1\r\n" + host + b"X-Big: " + b"a" * 100_000 + b"\r\n\r\n", b"400"),
            (b"GET " + page + b" HTTP/1.1\r\n" + host + b"".join(b"X-%d: a\r\n" % n for n in range(500)) + b"\r\n",
             b"400"),
            (b"GET /" + b"a" * 100_000 + b" HTTP/1.1\r\n" + host + b"\r\n", b"400"),
            (b"GET " + page + b" HTTP/1.1\r\n" + host + b"X-Bad: a\x01b\r\n\r\n", b"400"),
            (b"POST " + page + b" HTTP/1.1\r\n" + host + b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
             b"400"),
        ]
        for head, status in cases:
            assert status_of(s.port, head) == status, head[:120]
        assert tab_pids(s) == []
        assert wait_until(lambda: len(s.log().strip().splitlines()) >= len(cases))  # each said
        time.sleep(0.5)
        log = s.log()
        lines = log.strip().splitlines()  # (the URL line was read by serve())
        assert "Traceback" not in log and "Error handling request" not in log, log
        assert len(lines) == len(cases) and all("iosched serve: refused" in line for line in lines), log
        assert s.token not in "\n".join(lines)  # a refused socket's address is logged without its token
        assert s.proc.poll() is None
