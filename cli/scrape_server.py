"""The HTTP server behind `iosched export`: prometheus-client's WSGI app, served so that a slow client costs only
itself.

A thread per connection (wsgiref's way, and prometheus-client's own server) lets 16 clients that send a header
line every few seconds hold every thread, and a timeout per read never fires on a trickle. Here one thread reads
the request head of every connection without blocking, each head within a deadline counted from the connect (a
trickle does not extend it) and within a size bound; connections still sending their head are bounded per client
address and in all, and when a bound is reached the oldest unfinished connection of the address holding the most
is closed to make room, so a client that opens many or sends slowly pushes out its own. A scrape sends its head
in one packet and is never the oldest unfinished one for long. Only a whole head reaches one of a few worker
threads, which runs the WSGI app and writes the answer within a deadline. Idle, slow, vanished or aborted
clients are closed without a traceback; a bound that closes connections is said in one line, at most once a
minute.
"""

from __future__ import annotations

import contextlib
import io
import queue
import selectors
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from wsgiref.handlers import SimpleHandler
from wsgiref.simple_server import ServerHandler, WSGIRequestHandler

HEAD_DEADLINE_S = 5.0  # a whole request head, from the connect: a scrape sends it in one packet
MAX_HEAD_BYTES = 16 * 1024
MAX_PER_ADDRESS = 8  # connections still sending their head, per client address
MAX_PENDING = 128  # the same, in all
WORKERS = 4  # answers written at once; a scrape takes milliseconds
MAX_READY = 32  # whole requests waiting for a worker; beyond, 503
WRITE_DEADLINE_S = 10.0  # to write one answer (a client that does not read it)
NOTE_EVERY_S = 60.0

_HEAD_ENDS = (b"\r\n\r\n", b"\n\n")


@dataclass(eq=False)
class _Pending:
    """A connection whose request head is still coming."""

    sock: socket.socket
    peer: tuple[Any, ...]
    since: float
    head: bytearray = field(default_factory=bytearray)

    @property
    def address(self) -> str:
        return str(self.peer[0])


def _short_answer(sock: socket.socket, status: str, text: str) -> None:
    """A few bytes of answer to a client we are closing, without waiting for it to take them."""
    body = f"{text}\n".encode()
    head = (f"HTTP/1.0 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode()
    with contextlib.suppress(OSError):
        sock.setblocking(False)
        sock.send(head + body)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.close()


class _Output(io.RawIOBase):
    """The answer's bytes to the socket, all of them within one deadline for the whole answer."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the client did not take the answer in time")
        self._sock.settimeout(left)
        self._sock.sendall(data)
        return memoryview(data).nbytes


class _Responder(ServerHandler):
    """wsgiref's handler, quiet: a client gone or too slow is nobody's error; anything else is one line."""

    log: Callable[[str], None] = staticmethod(lambda _line: None)

    def log_exception(self, exc_info: Any) -> None:
        error = exc_info[1]
        if not isinstance(error, OSError):
            self.log(f"iosched export: a scrape failed: {error.__class__.__name__}: {error}")

    def close(self) -> None:
        SimpleHandler.close(self)  # no access log line


class _Request(WSGIRequestHandler):
    """One request whose head has been read already: parsed by wsgiref, answered by the WSGI app."""

    default_request_version = "HTTP/1.0"  # an error answer to a line that is no request still has a status line
    error_content_type = "text/plain; charset=utf-8"
    error_message_format = "%(code)d %(message)s\n"

    def __init__(self, sock: socket.socket, head: bytes, peer: tuple[Any, ...], server: ScrapeServer) -> None:
        self._head = head
        super().__init__(sock, peer, server)  # type: ignore[arg-type]  # handles the request

    def setup(self) -> None:
        self.connection = self.request
        self.rfile = io.BytesIO(self._head)  # type: ignore[assignment]
        self.wfile = _Output(self.connection, time.monotonic() + WRITE_DEADLINE_S)  # type: ignore[assignment]

    def handle(self) -> None:
        self.raw_requestline = self.rfile.readline(MAX_HEAD_BYTES + 1)
        if not self.parse_request():  # an error answer has been sent
            return
        server: ScrapeServer = self.server  # type: ignore[assignment]
        responder = _Responder(self.rfile, self.wfile, io.StringIO(), self.get_environ(),  # type: ignore[arg-type]
                               multithread=True)
        responder.log = server.log
        responder.request_handler = self  # type: ignore[attr-defined]
        responder.run(server.app)

    def log_message(self, format: str, *args: Any) -> None:  # the base class names it format
        pass


class ScrapeServer:
    """Serves ``app`` on ``host:port`` (see the module's words) once `serve_forever` runs, until `shutdown`."""

    def __init__(self, host: str, port: int, app: Callable[..., Any],
                 log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.create_server((host, port), family=family, backlog=128)
        self.socket.setblocking(False)
        self.server_address = self.socket.getsockname()
        self.app = app
        self.log = log
        self.base_environ = {"SERVER_NAME": host, "GATEWAY_INTERFACE": "CGI/1.1",
                             "SERVER_PORT": str(self.server_address[1]), "REMOTE_HOST": "", "CONTENT_LENGTH": "",
                             "SCRIPT_NAME": ""}
        self._pending: dict[socket.socket, _Pending] = {}
        self._ready: queue.Queue[tuple[socket.socket, bytes, tuple[Any, ...]] | None] = queue.Queue(MAX_READY)
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._stopping = threading.Event()
        self._running = threading.Event()
        self._stopped = threading.Event()
        self._workers: list[threading.Thread] = []
        self._pushed_out: Counter[str] = Counter()  # closed to make room since the last note, by address
        self._next_note = 0.0

    def get_app(self) -> Callable[..., Any]:  # what wsgiref's request handler asks of its server
        return self.app

    # The reading thread --------------------------------------------------------------------------------------

    def serve_forever(self) -> None:
        self._running.set()
        try:
            self._workers = [threading.Thread(target=self._work, name=f"export-answer-{n}", daemon=True)
                             for n in range(WORKERS)]
            for worker in self._workers:
                worker.start()
            self._selector.register(self.socket, selectors.EVENT_READ, None)
            self._selector.register(self._wake_r, selectors.EVENT_READ, None)
            while not self._stopping.is_set():
                now = time.monotonic()
                soonest = min((p.since for p in self._pending.values()), default=now)
                wait = min(max(soonest + HEAD_DEADLINE_S - now, 0.0), 1.0)
                for key, _ in self._selector.select(wait):
                    if key.fileobj is self.socket:
                        self._accept()
                    elif key.fileobj is self._wake_r:
                        with contextlib.suppress(OSError):
                            self._wake_r.recv(64)
                    else:
                        self._read(key.data)
                self._expire(time.monotonic())
        except (OSError, ValueError):
            if not self._stopping.is_set():  # closed under us only when stopping
                raise
        finally:
            self._stopped.set()

    def _accept(self) -> None:
        for _ in range(64):  # a burst at a time, so the connections already here get their turn
            try:
                sock, peer = self.socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # out of descriptors, or the connection died in the backlog: breathe, go on
                time.sleep(0.05)
                return
            sock.setblocking(False)
            pending = _Pending(sock, peer, time.monotonic())
            if self._receive(pending):  # its head is often here already
                continue
            self._make_room(pending.address)
            self._pending[sock] = pending
            self._selector.register(sock, selectors.EVENT_READ, pending)

    def _make_room(self, address: str) -> None:
        """Room for one more unfinished connection from ``address``: the oldest of that address goes when it has
        its share, the oldest of the address with the most when all are taken."""
        while len(mine := [p for p in self._pending.values() if p.address == address]) >= MAX_PER_ADDRESS:
            self._push_out(min(mine, key=lambda p: p.since))
        while len(self._pending) >= MAX_PENDING:
            busiest, _ = Counter(p.address for p in self._pending.values()).most_common(1)[0]
            self._push_out(min((p for p in self._pending.values() if p.address == busiest), key=lambda p: p.since))

    def _push_out(self, pending: _Pending) -> None:
        if self._receive(pending):  # it had finished or left, its news not read yet: no one pushed out
            return
        self._forget(pending)
        _short_answer(pending.sock, "503 Service Unavailable", "too many unfinished requests from this address")
        _close(pending.sock)
        self._pushed_out[pending.address] += 1

    def _read(self, pending: _Pending) -> None:
        if pending.sock in self._pending:  # not pushed out earlier in this round
            self._receive(pending)

    def _receive(self, pending: _Pending) -> bool:
        """Reads what the client sent; True once the connection is done with here (handed on or closed)."""
        try:
            chunk = pending.sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            chunk = b""
        pending.head += chunk
        ends = [i + len(end) for end in _HEAD_ENDS if (i := pending.head.find(end)) >= 0]
        if not chunk:  # the client left
            self._forget(pending)
            _close(pending.sock)
        elif ends and min(ends) <= MAX_HEAD_BYTES:
            self._forget(pending)
            self._hand_on(pending)
        elif ends or len(pending.head) > MAX_HEAD_BYTES:
            self._forget(pending)
            _short_answer(pending.sock, "431 Request Header Fields Too Large",
                          f"the request's head is over {MAX_HEAD_BYTES} bytes")
            _close(pending.sock)
        else:
            return False
        return True

    def _hand_on(self, pending: _Pending) -> None:
        try:
            self._ready.put_nowait((pending.sock, bytes(pending.head), pending.peer))
        except queue.Full:
            _short_answer(pending.sock, "503 Service Unavailable", "busy: try again")
            _close(pending.sock)

    def _expire(self, now: float) -> None:
        for pending in [p for p in self._pending.values() if now - p.since > HEAD_DEADLINE_S]:
            self._forget(pending)
            _short_answer(pending.sock, "408 Request Timeout", f"no whole request within {HEAD_DEADLINE_S:g} s")
            _close(pending.sock)
        if self._pushed_out and now >= self._next_note:
            address, most = self._pushed_out.most_common(1)[0]
            closed = sum(self._pushed_out.values())
            what = "connection" if closed == 1 else "connections"
            self.log(f"iosched export: closed {closed} unfinished {what} to make room (at most {MAX_PER_ADDRESS} per "
                     f"address and {MAX_PENDING} in all; {most} from {address}): slow or idle clients")
            self._pushed_out.clear()
            self._next_note = now + NOTE_EVERY_S

    def _forget(self, pending: _Pending) -> None:
        if self._pending.pop(pending.sock, None) is not None:
            with contextlib.suppress(KeyError, ValueError, OSError):
                self._selector.unregister(pending.sock)

    # The answering threads -----------------------------------------------------------------------------------

    def _work(self) -> None:
        while (item := self._ready.get()) is not None:
            sock, head, peer = item
            try:
                sock.setblocking(True)
                _Request(sock, head, peer, self)
            except OSError:
                pass  # the client left or would not take the answer: its loss alone
            except Exception as e:  # one line, never a traceback
                self.log(f"iosched export: a scrape failed: {e.__class__.__name__}: {e}")
            finally:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_WR)
                _close(sock)

    # Stopping ------------------------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stops `serve_forever` (from another thread) and waits until it has."""
        self._stopping.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        if self._running.is_set():
            self._stopped.wait(5)

    def server_close(self) -> None:
        for pending in list(self._pending.values()):
            self._forget(pending)
            _close(pending.sock)
        with contextlib.suppress(queue.Empty):
            while (item := self._ready.get_nowait()) is not None:
                _close(item[0])
        for _ in self._workers:
            with contextlib.suppress(queue.Full):
                self._ready.put_nowait(None)
        for sock in (self.socket, self._wake_r, self._wake_w):
            _close(sock)
        self._selector.close()
