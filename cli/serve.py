"""`iosched serve`: the TUI in a web browser through textual-serve, one app process per browser tab.

Loopback only unless --public (the page has no authentication); read-only unless --allow-writes.
"""

from __future__ import annotations

import argparse
import ipaddress
import shlex
import socket
import sys
from pathlib import Path

from iosched.core.errors import BadInput, IoschedError

PAGE_DIR = Path(__file__).parent / "web"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve anywhere


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError("the port must be between 1 and 65535")
    return value


def app_command(args: argparse.Namespace) -> str:
    """The command textual-serve runs for each browser tab: this same iosched, as a TUI."""
    # --served: whatever --allow-writes says, the browser never runs a command or names a file to read.
    argv = [sys.executable, "-m", "iosched", "--served", "--root", args.root, "-i", f"{args.tui_interval:g}"]
    if args.theme:
        argv += ["--theme", args.theme]
    if not args.allow_writes:
        argv.append("--read-only")
    return shlex.join(argv)


def cmd_serve(args: argparse.Namespace) -> int:
    if not is_loopback(args.host) and not args.public:
        raise BadInput(f"{args.host} is not a loopback address and the page has no authentication: add --public "
                       "to serve it on the network, or keep the default and use ssh -L 8000:localhost:8000 HOST")
    try:
        from textual_serve.server import Server
    except ImportError:
        raise IoschedError("iosched serve needs textual-serve: pip install 'iosched[serve]'") from None
    if not is_loopback(args.host):
        print(f"iosched: warning: serving on {args.host}:{args.port} without authentication: anyone who reaches "
              "it can watch" + (" and switch schedulers" if args.allow_writes else ""), file=sys.stderr)
    mode = "switching allowed" if args.allow_writes else "read-only"
    title = f"iosched on {socket.gethostname()}"
    server = Server(app_command(args), host=args.host, port=args.port, title=title, templates_path=PAGE_DIR)
    print(f"iosched: serving the TUI ({mode}) on http://{args.host}:{args.port}/  (ctrl+c stops)", file=sys.stderr)
    try:
        server.serve()
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
                   help="allow a non-loopback --host (the page has no authentication)")
    s.set_defaults(func=cmd_serve)
