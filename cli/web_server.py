"""The web server behind `iosched serve`: textual-serve's, with its doors guarded (see web_guard).

Imported only inside `cmd_serve` (textual-serve is an optional extra). textual-serve's own server accepts any
Origin and Host and any tab size; here every request passes `Guard.refusal`, the page and its socket need the
token, a tab's size is clamped, the number of tabs is bounded, and each tab's app runs in its own session with
a memory limit and is killed when its socket ends, answering or not. Once a tab's app has ended (quit, killed, or
ended by serve's own stop), what it left is put back and removed (cli/leftovers.py), each in one log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp_jinja2
import jinja2
from aiohttp import WSMsgType, web
from aiohttp.http_exceptions import HttpProcessingError
from textual_serve.app_service import AppService
from textual_serve.server import Server

from iosched.cli.leftovers import Swept, sweep
from iosched.cli.web_guard import Guard, clamp_size
from iosched.core.base.terminal_text import printable
from iosched.core.load.fio import dies_with_us
from iosched.core.settings.putback import starts_of

STOP_GRACE_S = 3.0  # a tab's app gets this long to quit after its socket ends, then its group is killed
# aiohttp's own deadline for a connection's first request head, and for an idle one between requests (its
# keep-alive timeout counts from the connect; a trickle of header bytes does not extend it).
IDLE_S = 15.0


def refused_line(request: web.Request, why: str) -> str:
    peer = request.remote or "?"
    path = "/ws/…" if request.path.startswith("/ws/") else request.path[:200]  # the token stays out of logs
    return f"iosched serve: refused {request.method} {printable(path)} from {peer}: {why}"


class OneLine(logging.Handler):
    """aiohttp's and asyncio's log records as one line each, never a traceback: a malformed request (a duplicate
    Host, a header too long) is the client's mistake, answered 400 by aiohttp's parser, and worth a line."""

    def __init__(self, log: Callable[[str], None]) -> None:
        super().__init__(logging.WARNING)
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        try:
            error = record.exc_info[1] if record.exc_info else None
            if isinstance(error, HttpProcessingError):
                peer = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
                words = next((w.strip() for w in str(error.message).splitlines() if w.strip()), "malformed")
                line = f"iosched serve: refused a malformed request from {peer}: {words.rstrip(':.')}"
            else:
                line = f"iosched serve: {record.getMessage()}"
                if error is not None:
                    line += f": {error.__class__.__name__}"
            self.log(printable(line[:300]))
        except Exception:  # a log line must never become a traceback of its own
            self.handleError(record)

    def handleError(self, record: logging.LogRecord) -> None:
        pass


def quiet_logging(log: Callable[[str], None]) -> None:
    """aiohttp's and asyncio's loggers say one line through ``log`` (their default prints a traceback)."""
    handler = OneLine(log)
    for name in ("aiohttp", "asyncio"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.propagate = False
    # A client asking for a WebSocket subprotocol we do not speak gets the socket without one, as the standard
    # says; aiohttp's warning about it, once per handshake check, tells nobody anything.
    logging.getLogger("aiohttp.websocket").setLevel(logging.ERROR)


class TabService(AppService):
    """One tab's app: its own session, a memory limit, dies with the server, killed if it will not quit; its output
    read to its end whether the socket is there or not, so an app that is ending never waits on a full pipe."""

    def __init__(self, argv: list[str], memory_mb: int, **kwargs: Any) -> None:
        super().__init__(shlex.join(argv), **kwargs)
        self.argv = argv
        self.memory_mb = memory_mb

    def _launch_argv(self) -> list[str]:
        argv = dies_with_us(self.argv)
        prlimit = shutil.which("prlimit")
        if prlimit is not None and self.memory_mb > 0:
            # RLIMIT_DATA counts the heap and private mappings, not address space reserved by threads.
            limit = self.memory_mb * 1024 * 1024
            argv = [prlimit, f"--data={limit}:{limit}", "--", *argv]
        return argv

    async def _open_app_process(self, width: int = 80, height: int = 24) -> asyncio.subprocess.Process:
        self._process = process = await asyncio.create_subprocess_exec(
            *self._launch_argv(), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self._build_environment(width=width, height=height),
            start_new_session=True)
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    async def on_data(self, payload: bytes) -> None:
        with contextlib.suppress(Exception):  # the socket is gone: the app's frames go nowhere, and it goes on
            await super().on_data(payload)

    async def on_meta(self, data: bytes) -> None:
        with contextlib.suppress(Exception):
            await super().on_meta(data)

    def _signal(self, sig: int) -> None:
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)

    async def stop(self) -> None:
        await self.end()

    async def end(self) -> str:
        """Ask the app to quit (it cancels what it runs and puts the device back); a stuck or stopped one (SIGSTOP)
        is killed with its group. Says which."""
        process, task = self._process, self._task
        if process is None:
            return "never started"
        self._task = None
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.send_meta({"type": "quit"}), 1.0)
        try:
            await asyncio.wait_for(process.wait(), STOP_GRACE_S)
            how = "quit"
        except TimeoutError:
            self._signal(signal.SIGKILL)
            await process.wait()
            how = f"did not quit within {STOP_GRACE_S:g} s and was killed"
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        return how


class GuardedServer(Server):
    def __init__(self, argv: list[str], guard: Guard, max_tabs: int, memory_mb: int,
                 log: Callable[[str], None], root: str = "/", tabs_write: bool = False, **kwargs: Any) -> None:
        super().__init__(shlex.join(argv), **kwargs)
        self.argv = argv
        self.guard = guard
        self.max_tabs = max_tabs
        self.memory_mb = memory_mb
        self.log = log
        self.root = root  # the tabs' apps' --root: where what they leave is put back
        self.tabs_write = tabs_write  # tabs may write (--allow-writes, as root): what an ended one left is put back
        self.tabs: dict[int, TabService] = {}
        self._ending: dict[int, asyncio.Task[None]] = {}
        self._last_refusal = 0.0

    def initialize_logging(self) -> None:
        """Our own one-line messages on stderr; none of textual-serve's banner."""

    async def on_startup(self, app: web.Application) -> None:
        """No banner: `announce` prints the URL once the socket listens."""

    async def on_shutdown(self, app: web.Application) -> None:
        """SIGINT or SIGTERM: every tab's app is ended and what it changed put back before serve goes (its apps die
        with it); a second signal meanwhile is told to wait, not obeyed."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.log, "iosched serve: stopping: the tabs' devices are put back first")
        if self.tabs:
            pids = ", ".join(str(t.pid) for t in self.tabs.values())
            self.log(f"iosched serve: stopping: ending the app of each tab (pid {pids})")
        await asyncio.gather(*(self.end_tab(key) for key in list(self.tabs)))

    def end_tab(self, key: int) -> Awaitable[None]:
        """The tab's app ended and what it left put back, once, whoever asks first (its socket's end, serve's)."""
        task = self._ending.get(key)
        if task is None:
            tab = self.tabs.get(key)
            if tab is None:  # ended already
                return asyncio.sleep(0)
            task = self._ending[key] = asyncio.ensure_future(self._end(key, tab))
        return asyncio.shield(task)

    async def _end(self, key: int, tab: TabService) -> None:
        pid = tab.pid
        try:
            put = self.tabs_write and pid is not None
            starts = await asyncio.to_thread(starts_of, pid, self.root) if put and pid is not None else []
            how = await tab.end()
            if pid is None:
                return
            swept = await asyncio.to_thread(sweep, self.root, False, (pid, starts)) if put else Swept()
            if starts or swept.lines or how != "quit":
                running = f" while it ran a test on {', '.join(s.device for s in starts)}" if starts else ""
                self.log(f"iosched serve: a tab ended{running}: its app (pid {pid}) {how}")
            for line in swept.lines:
                self.log(f"iosched serve: {printable(line)}")
        except Exception as e:  # one line, never a traceback; `iosched restore` is there for the rest
            self.log(f"iosched serve: putting back what a tab's app (pid {pid}) left failed: "
                     f"{printable(str(e)[:300]) or e.__class__.__name__}; run `iosched restore`")
        finally:
            self.tabs.pop(key, None)
            self._ending.pop(key, None)

    def serve(self, debug: bool = False, announce: Callable[[], None] = lambda: None) -> None:
        """Run until SIGINT or SIGTERM; `announce` is called once the port is bound, so the URL it prints works."""
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.request_exit)
        quiet_logging(self.log)
        web.run_app(self._make_app(), host=self.host, port=self.port, handle_signals=False, loop=loop,
                    print=lambda *_: announce(), keepalive_timeout=IDLE_S)

    def _refuse(self, request: web.Request, why: str, status: type[web.HTTPException],
                headers: dict[str, str] | None = None) -> web.HTTPException:
        self.log(refused_line(request, why))
        return status(text=f"iosched serve refused this request: {why}.\n", headers=headers)

    @web.middleware
    async def _check(self, request: web.Request,
                     handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        # Every copy of a header the guard reads, joined: a second Origin behind our own is not let through.
        host, origin = (",".join(request.headers.getall(name, [])) or None for name in ("Host", "Origin"))
        why = self.guard.refusal(host, origin, None, need_token=False)
        if why is not None:
            raise self._refuse(request, why, web.HTTPForbidden)
        response = await handler(request)
        # The page is ours alone: no framing by another site, no referrer carrying the token away.
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Content-Security-Policy", "frame-ancestors 'none'")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        return response

    async def _make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._check])
        app.on_shutdown.append(self.on_shutdown)
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        app.add_routes([
            web.get("/", self.handle_index, name="index"),
            web.get("/ws/{token}", self.handle_websocket, name="websocket"),
            web.static("/static", self.statics_path, name="static"),
        ])
        return app

    async def handle_index(self, request: web.Request) -> web.StreamResponse:  # type: ignore[override]
        token = request.query.get("token")
        if not self.guard.token_ok(token):
            raise self._refuse(request, "no token" if not token else "a wrong token", web.HTTPForbidden)
        try:
            font_size = min(max(int(request.query.get("fontsize", "16")), 6), 64)
        except ValueError:
            font_size = 16
        base = f"{request.host}"  # checked by the middleware: one of our names
        context = {
            "font_size": font_size,
            "app_websocket_url": f"ws://{base}/ws/{token}",
            "config": {"static": {"url": f"http://{base}/static/"}},
            "application": {"name": self.title},
        }
        response = aiohttp_jinja2.render_template("app_index.html", request, context)
        response.headers["Cache-Control"] = "no-store"
        return response

    async def _process_messages(self, websocket: web.WebSocketResponse, app_service: AppService) -> None:
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
            except (ValueError, RecursionError):  # RecursionError: a message nested thousands deep
                continue
            if not isinstance(envelope, list) or not envelope:
                continue
            kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            if kind == "stdin" and isinstance(data, str):
                await app_service.send_bytes(data.encode("utf-8", "replace"))
            elif kind == "resize" and isinstance(data, dict):
                await app_service.set_terminal_size(*clamp_size(data.get("width"), data.get("height")))
            elif kind == "ping":
                await websocket.send_json(["pong", data])
            elif kind == "blur":
                await app_service.blur()
            elif kind == "focus":
                await app_service.focus()

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        token = request.match_info.get("token")
        if not self.guard.token_ok(token):
            raise self._refuse(request, "a wrong token", web.HTTPForbidden)
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=64 * 1024)
        if not websocket.can_prepare(request).ok:  # checked before any app starts; prepare() would raise
            if request.headers.get("Upgrade", "").strip().lower() != "websocket":
                raise self._refuse(request, "the socket's address takes a WebSocket upgrade only",
                                   web.HTTPUpgradeRequired, {"Upgrade": "websocket", "Connection": "Upgrade"})
            raise self._refuse(request, "a malformed WebSocket handshake", web.HTTPBadRequest,
                               {"Sec-WebSocket-Version": "13"})
        if len(self.tabs) >= self.max_tabs:
            raise self._refuse(request, f"{self.max_tabs} tabs are open already (serve --max-tabs)",
                               web.HTTPServiceUnavailable)
        width, height = clamp_size(request.query.get("width", "80"), request.query.get("height", "24"))
        tab = TabService(self.argv, self.memory_mb, write_bytes=websocket.send_bytes,
                         write_str=websocket.send_str, close=websocket.close,
                         download_manager=self.download_manager)
        key = id(tab)
        self.tabs[key] = tab
        try:
            await websocket.prepare(request)
            await tab.start(width, height)
            await self._process_messages(websocket, tab)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # one line, never a traceback in the server's terminal
            self.log(f"iosched serve: a tab ended: {error.__class__.__name__}")
        finally:
            # Shielded: a cancelled handler (the client went away) must still end the tab's app and put back.
            await self.end_tab(key)
            with contextlib.suppress(Exception):
                await websocket.close()
        return websocket


def stderr_log(line: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {line}", file=sys.stderr, flush=True)


def make_server(argv: list[str], host: str, port: int, token: str, title: str, page_dir: Path,
                max_tabs: int, memory_mb: int, extra_names: tuple[str, ...] = (), root: str = "/",
                tabs_write: bool = False) -> GuardedServer:
    guard = Guard.for_server(host, port, token, extra_names)
    return GuardedServer(argv, guard, max_tabs, memory_mb, stderr_log, root, tabs_write, host=host, port=port,
                         title=title, templates_path=page_dir)
