"""Who may use `iosched serve`: pure checks of a request's Host, Origin and token, and a tab's size.

A local web server that drives a root process is reachable from every page the user's browser opens: a
foreign page can open a WebSocket to 127.0.0.1 (the browser sends its own Origin), and a DNS-rebinding page
reaches it under a foreign Host. So every request must name this server in Host, a request that carries an
Origin must come from this server's own pages, and the page and its socket need the token printed at start.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
from dataclasses import dataclass

# A tab's terminal in cells: a 4K screen at a small font is about 550x150; beyond this is no screen.
MAX_COLUMNS = 500
MAX_ROWS = 200
MIN_COLUMNS = 10
MIN_ROWS = 4


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False  # a name: it may resolve anywhere
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1 is loopback; Python < 3.13 says no
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def new_token() -> str:
    return secrets.token_urlsafe(24)


def _authority(host: str, port: int) -> str:
    """`host:port` as a browser writes it in Host and Origin: IPv6 in brackets, port 80 left out."""
    host = host.strip("[]").lower()
    if ":" in host:
        host = f"[{host}]"
    return host if port == 80 else f"{host}:{port}"


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _split_authority(authority: str) -> tuple[str, str]:
    """('host', 'port') of a Host header or an origin's authority; the port is '' when absent."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            return authority, ""
        return authority[: end + 1], authority[end + 2 :] if authority[end + 1 : end + 2] == ":" else ""
    host, _, port = authority.partition(":")
    return host, port


@dataclass(frozen=True)
class Guard:
    """The names this server answers to and its token; `refusal()` says why a request is refused, or None."""

    port: int
    token: str
    names: frozenset[str]  # host names (no port) a Host or Origin may carry
    any_address: bool = False  # bound to 0.0.0.0 or ::: any IP literal of this machine is a fair name

    @classmethod
    def for_server(cls, host: str, port: int, token: str, extra_names: tuple[str, ...] = ()) -> Guard:
        names = {host.strip("[]").lower(), *(n.lower() for n in extra_names)}
        if is_loopback(host) or is_wildcard(host):
            names |= {"localhost", "127.0.0.1", "::1"}
        if not is_loopback(host):  # on the network the machine's own names reach it too
            names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
        return cls(port, token, frozenset(n for n in names if n), any_address=is_wildcard(host))

    def _ours(self, authority: str) -> bool:
        host, port = _split_authority(authority)
        if port != (str(self.port) if self.port != 80 else ""):
            return False
        bare = host.strip("[]")
        if bare in self.names:
            return True
        # A rebinding attack needs a name; an address literal other than ours is refused unless bound to all.
        return self.any_address and _is_ip(bare)

    def token_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def refusal(self, host: str | None, origin: str | None, token: str | None, need_token: bool) -> str | None:
        """Why a request is refused, or None. ``host`` and ``origin`` are every copy of the header joined by commas
        (as WSGI does): no name or origin holds a comma, so a second copy is refused, not overlooked."""
        for name, value in (("Host", host), ("Origin", origin)):
            if value is not None and "," in value:
                return f"more than one {name} header"
        if not host or not self._ours(host):
            return f"Host {host or '(none)'!r} is not this server"
        if origin is not None:  # browsers always send it on a WebSocket and on cross-site requests
            scheme, sep, authority = origin.partition("://")
            if origin == "null" or not sep or scheme.lower() != "http" or not self._ours(authority):
                return f"Origin {origin!r} is not this server's page"
        if need_token and not self.token_ok(token):
            return "no token" if not token else "a wrong token"
        return None


def clamp_size(width: object, height: object) -> tuple[int, int]:
    """A browser's terminal size, as sent in the socket's query or a resize message, within sane bounds."""

    def number(value: object, default: int) -> int:
        try:
            return int(str(value), 10)
        except ValueError:
            return default

    w, h = number(width, 80), number(height, 24)
    return min(max(w, MIN_COLUMNS), MAX_COLUMNS), min(max(h, MIN_ROWS), MAX_ROWS)
