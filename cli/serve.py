"""`iosched serve`: the TUI in a web browser through textual-serve, one app process per browser tab.

Loopback only unless --public; read-only unless --allow-writes. Every page the user's browser opens can reach a
loopback server, so the page and its socket need the token of the URL printed at start, and Host and Origin
must name this server (cli/web_guard.py); tabs are bounded in number, size and memory (cli/web_server.py).
"""

from __future__ import annotations

import argparse
import os
import shlex
import socket
import sys
from pathlib import Path

from iosched.cli.web_guard import is_loopback, new_token
from iosched.core.base.errors import BadInput, IoschedError

PAGE_DIR = Path(__file__).parent / "web"


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError("the port must be between 1 and 65535")
    return value


def _count(lo: int, hi: int, what: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{what} must be between {lo} and {hi}")
        return value
    return parse


def app_argv(args: argparse.Namespace) -> list[str]:
    """The command run for each browser tab: this same iosched, as a TUI."""
    # --served: whatever --allow-writes says, the browser never runs a command or names a file to read.
    argv = [sys.executable, "-m", "iosched.cli", "--served", "--root", args.root, "-i", f"{args.tui_interval:g}"]
    if args.theme:
        argv += ["--theme", args.theme]
    if not args.allow_writes:
        argv.append("--read-only")
    return argv


def app_command(args: argparse.Namespace) -> str:
    return shlex.join(app_argv(args))


def cmd_serve(args: argparse.Namespace) -> int:
    if not is_loopback(args.host) and not args.public:
        raise BadInput(f"{args.host} is not a loopback address and the page travels unencrypted: add --public "
                       "to serve it on the network, or keep the default and use ssh -L 8000:localhost:8000 HOST")
    try:
        from iosched.cli.web_server import make_server
    except ImportError:
        raise IoschedError("iosched serve needs textual-serve: pip install 'iosched[serve]'") from None
    if not is_loopback(args.host):
        print(f"iosched: warning: serving on {args.host}:{args.port} over plain HTTP: anyone who sees the URL "
              "can watch" + (" and switch schedulers" if args.allow_writes else ""), file=sys.stderr)
    mode = "switching allowed" if args.allow_writes else "read-only"
    title = f"iosched on {socket.gethostname()}"
    token = new_token()
    server = make_server(app_argv(args), args.host, args.port, token, title, PAGE_DIR, args.max_tabs,
                         args.tab_memory, root=args.root, tabs_write=args.allow_writes and os.geteuid() == 0)
    shown = f"[{args.host.strip('[]')}]" if ":" in args.host else args.host

    def announce() -> None:
        print(f"iosched: serving the TUI ({mode}) on http://{shown}:{args.port}/?token={token}  (ctrl+c stops)",
              file=sys.stderr, flush=True)

    try:
        server.serve(announce=announce)
    except OSError as e:
        raise IoschedError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}") from None
    return 0


def add_arguments(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("serve", help="the TUI in a web browser (read-only unless --allow-writes)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1, loopback only)")
    s.add_argument("--port", type=_port, default=8000, help="port (default 8000)")
    s.add_argument("--allow-writes", action="store_true",
                   help="let browser views switch schedulers, run jobs and experiments, tune and persist")
    s.add_argument("--public", action="store_true",
                   help="allow a non-loopback --host (plain HTTP: the token travels unencrypted)")
    s.add_argument("--max-tabs", type=_count(1, 64, "--max-tabs"), default=8,
                   help="browser tabs open at once (default 8; each runs its own app)")
    s.add_argument("--tab-memory", type=_count(64, 65536, "--tab-memory"), default=512, metavar="MIB",
                   help="memory one tab's app may use, in MiB (default 512)")
    s.set_defaults(func=cmd_serve)
