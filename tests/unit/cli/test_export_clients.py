"""`iosched export` against clients that do not play fair, over raw sockets to a real exporter process: clients
that trickle their request head a header line at a time, one client opening hundreds of connections, clients from
many addresses, idle and aborted ones. A scrape with the token is answered beside all of them, the trickle is
closed at the head's deadline though it never stops sending, and the exporter prints no traceback.

The bounds proven here are "not hung" bounds: a scrape is given a few seconds (it takes milliseconds), a
trickling connection twenty (its deadline is five)."""

from __future__ import annotations

import os
import select
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser_support import free_port

from iosched.cli.scrape_server import HEAD_DEADLINE_S, MAX_PENDING, MAX_PER_ADDRESS

from fixtree import diskstats_line

TOKEN = "t0k3n-" + "x" * 20


@dataclass
class Exporter:
    proc: subprocess.Popen
    port: int
    seen: str = ""

    def stderr(self) -> str:
        """Everything the exporter printed so far (its stderr pipe is non-blocking)."""
        assert self.proc.stderr is not None
        with suppress(BlockingIOError, TypeError):
            self.seen += (os.read(self.proc.stderr.fileno(), 1 << 20) or b"").decode(errors="replace")
        return self.seen

    def request(self, head: str, source: str = "127.0.0.1", timeout: float = 5.0) -> bytes:
        """The whole answer to a request head sent in one packet; fails when none comes within ``timeout``."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout,
                                      source_address=(source, 0)) as s:
            s.sendall(head.encode())
            return b"".join(iter(lambda: s.recv(65536), b""))

    def scrape(self, source: str = "127.0.0.1", extra: str = "") -> bytes:
        return self.request(f"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                            f"Authorization: Bearer {TOKEN}\r\n{extra}\r\n", source)


@pytest.fixture
def exporter(tree, tmp_path: Path) -> Iterator[Exporter]:
    tree.add_disk("sda", "8:0", scheduler="[mq-deadline] none bfq")
    tree.set_diskstats([diskstats_line(8, 0, "sda", [0] * 17)])
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "iosched.cli", "--root", str(tree.root), "export", "--listen",
                             f"127.0.0.1:{port}", "--token-file", str(token), "-i", "0.5"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert proc.stderr is not None
        ready, _, _ = select.select([proc.stderr], [], [], 30)
        assert ready, "the exporter did not start"
        os.set_blocking(proc.stderr.fileno(), False)
        ex = Exporter(proc, port)
        deadline = time.monotonic() + 30
        while "metrics on http://" not in ex.stderr():
            assert proc.poll() is None and time.monotonic() < deadline, ex.stderr()
            time.sleep(0.05)
        yield ex
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Trickle:
    """Clients that send a request line, then a header line every ``every`` seconds, never the blank line; each
    closed connection is opened again at once, as an attacker would."""

    def __init__(self, port: int, count: int, every: float = 1.0, source: str = "127.0.0.1") -> None:
        self.port, self.every, self.source = port, every, source
        self.stop = threading.Event()
        self.opened = 0
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(count)]

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=5,
                                              source_address=(self.source, 0)) as s:
                    self.opened += 1
                    s.sendall(b"GET /metrics HTTP/1.1\r\n")
                    while not self.stop.wait(self.every):
                        s.sendall(b"X-Slow: still here\r\n")
            except OSError:
                self.stop.wait(0.05)

    def __enter__(self) -> Trickle:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(10)


@contextmanager
def idle_connections(port: int, count: int, source: str = "127.0.0.1") -> Iterator[list[socket.socket]]:
    socks = []
    try:
        for _ in range(count):
            socks.append(socket.create_connection(("127.0.0.1", port), source_address=(source, 0)))
        yield socks
    finally:
        for s in socks:
            s.close()


def ok(answer: bytes) -> bool:
    return answer.startswith(b"HTTP/1.0 200 OK") and b"iosched_scheduler{" in answer


def test_scrapes_are_answered_beside_trickling_clients_and_one_client_opening_many(exporter: Exporter):
    # 20 trickling connections from the scraper's own address (on loopback every client shares it), re-opened
    # as soon as closed, for longer than the head's deadline.
    with Trickle(exporter.port, 20) as trickle:
        time.sleep(1.0)
        answers = []
        until = time.monotonic() + HEAD_DEADLINE_S + 2
        while time.monotonic() < until:
            answers.append(exporter.scrape())
            time.sleep(0.5)
        # One client opening many idle connections, more than the bound in all, beside the trickle.
        with idle_connections(exporter.port, MAX_PENDING + 50):
            answers.append(exporter.scrape())
        assert trickle.opened > 20  # closed at the deadline, they came back
    assert all(ok(a) for a in answers), [a[:80] for a in answers]
    err = exporter.stderr()
    assert "Traceback" not in err and "Error" not in err, err


def test_one_address_opening_many_pushes_out_its_own_not_a_scraper_from_elsewhere(exporter: Exporter):
    # Clients of 127.0.0.2..127.0.0.31, each over its share: the total bound is reached; a scraper elsewhere on
    # loopback is still answered, and each hog's oldest connections were the ones closed.
    with idle_connections(exporter.port, MAX_PER_ADDRESS + 4, source="127.0.0.2") as hog:
        time.sleep(0.5)
        pushed = []
        for s in hog[:4]:
            s.settimeout(5)
            pushed.append(s.recv(4096))
        assert all(p.startswith(b"HTTP/1.0 503") for p in pushed), pushed
        others = [idle_connections(exporter.port, MAX_PER_ADDRESS, source=f"127.0.0.{n}") for n in range(3, 32)]
        for crowd in others:
            crowd.__enter__()
        try:
            assert ok(exporter.scrape(source="127.0.0.1"))
            assert ok(exporter.scrape(source="127.0.0.200"))
        finally:
            for crowd in others:
                crowd.__exit__(None, None, None)
    err = exporter.stderr()
    assert "Traceback" not in err, err
    assert "to make room" in err  # said once, not once per connection
    assert len(err.strip().splitlines()) == 2, err


def test_a_trickle_is_closed_at_the_deadline_of_the_whole_head(exporter: Exporter):
    with socket.create_connection(("127.0.0.1", exporter.port)) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\n")
        start = time.monotonic()
        answer = b""
        while time.monotonic() - start < 20:
            try:
                s.sendall(b"X-Slow: a\r\n")  # a line every 0.5 s: a timeout per read would never fire
            except OSError:
                break
            ready, _, _ = select.select([s], [], [], 0.5)
            if ready:
                answer = s.recv(4096)
                break
        took = time.monotonic() - start
    assert answer.startswith(b"HTTP/1.0 408"), answer
    assert HEAD_DEADLINE_S - 0.5 < took < 20
    assert "Traceback" not in exporter.stderr()


def test_idle_aborted_and_malformed_clients_cost_nothing_and_print_no_traceback(exporter: Exporter):
    port = exporter.port
    # Idle: answered 408 at the head's deadline.
    with socket.create_connection(("127.0.0.1", port), timeout=20) as idle:
        assert idle.recv(4096).startswith(b"HTTP/1.0 408")
    # Aborted: a reset half-way through a head, and a reset right after a scrape asked for its answer; no more at
    # once than one address may hold, or a busy exporter rightly closes one to make room and says so.
    for head in (b"GET /metrics HTTP/1.1\r\nHo", f"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                 f"Authorization: Bearer {TOKEN}\r\n\r\n".encode()):
        for _ in range(MAX_PER_ADDRESS // 2):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(head)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
    # Malformed or foreign requests get an answer in one packet.
    host = f"Host: 127.0.0.1:{port}\r\n"
    auth = f"Authorization: Bearer {TOKEN}\r\n"
    cases = [
        (f"GET /metrics HTTP/1.1\r\n{host}{host}{auth}\r\n", b"403"),  # a second Host
        (f"GET /metrics HTTP/1.1\r\n{host}Origin: http://127.0.0.1:{port}\r\nOrigin: http://evil.example\r\n"
         f"{auth}\r\n", b"403"),  # a second Origin behind our own
        (f"GET /metrics HTTP/1.1\r\n{auth}\r\n", b"403"),  # no Host
        (f"GET /metrics HTTP/1.1\r\n{host}X-Big: {'a' * 20000}\r\n\r\n", b"431"),
        ("\x00\x01garbage\r\n\r\n", b"400"),
        (f"GET /metrics HTTP/1.1\r\n{host}" + "".join(f"X-{n}: a\r\n" for n in range(150)) + "\r\n", b"431"),
        (f"POST /metrics HTTP/1.1\r\n{host}{auth}Content-Length: 999999999999\r\n\r\n", b"405"),
    ]
    for head, status in cases:
        answer = exporter.request(head)
        assert answer.split(b" ")[1] == status, (head[:60], answer[:200])
    assert ok(exporter.scrape())
    time.sleep(0.5)
    err = exporter.stderr()
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err  # the start line alone
