"""A compare on many hosts (`compare --hosts`): each host's own iosched runs the compare there, over SSH.

Each host keeps its own journal and puts its own device back (a lost SSH session hangs up the remote iosched,
which restores before it exits), so a controller that dies leaves no host changed. SSH runs with the user's own
keys and configuration (BatchMode: no password is ever asked or taken), each in its own session under `setpriv
--pdeathsig`, so it dies with the controller; Ctrl-C and signals end every session. Host names, users, key files
and devices are checked before they reach a command line, and the remote command is built from checked values
only, each word quoted.

A host that fails (cannot connect, refuses, loses its session) is marked failed with the reason; the others go on.
The controller judges each host's result and pools them (core/experiment/pooled.py via cli/pooled.py).
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from iosched.core.base.errors import BadInput
from iosched.core.base.infile import read_bounded
from iosched.core.kernel.sysfs import DEVICE_NAME
from iosched.core.load.children import Child
from iosched.core.load.fio import dies_with_us

# A DNS name or an IPv4 literal, or an IPv6 literal in brackets: never an option (no leading '-') or a path.
HOST_NAME = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9-]{1,63})*|\[[0-9A-Fa-f:.]{2,45}\])")
USER_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
PORT = re.compile(r"[0-9]{1,5}")  # ASCII only: str.isdigit() takes "²", which int() refuses
MAX_HOSTS = 64
MAX_OUTPUT = 64 << 20


@dataclass(frozen=True)
class Host:
    name: str  # as ssh reaches it
    device: str
    port: int | None = None
    user: str | None = None
    identity: str | None = None  # a key file

    def ssh_argv(self, remote: Sequence[str], ssh: str = "ssh", tie: bool = True,
                 forward: tuple[str, str] | None = None) -> list[str]:
        """ssh's argument list running ``remote`` (each word quoted) on this host, with the user's own keys; with
        ``tie``, the remote command hangs up when the session ends (``tied``: its stdin must stay open); with
        ``forward`` (local socket, remote socket), connections to the local unix socket reach the remote one."""
        argv = [ssh, "-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=5",
                "-o", "ServerAliveCountMax=3"]
        if forward is not None:
            argv += ["-o", "ExitOnForwardFailure=yes", "-o", "StreamLocalBindUnlink=yes", "-o",
                     "StreamLocalBindMask=0177", "-L", f"{forward[0]}:{forward[1]}"]
        if self.port is not None:
            argv += ["-p", str(self.port)]
        if self.user is not None:
            argv += ["-l", self.user]
        if self.identity is not None:
            argv += ["-i", self.identity]
        command = tied(remote) if tie else " ".join(shlex.quote(w) for w in remote)
        return [*argv, "--", self.name.strip("[]"), command]


def tied(remote: Sequence[str]) -> str:
    """The remote shell command: ``remote`` (each word quoted) in the background, and a watcher that hangs it up
    when the session's stdin closes. Without a terminal sshd sends no SIGHUP when a session is lost, so a remote
    iosched would otherwise run on, holding its device changed; hung up, it puts the device back and exits."""
    cmd = " ".join(shlex.quote(w) for w in remote)
    return (f"exec 3<&0; {cmd} & p=$!; (cat <&3 >/dev/null 2>&1; kill -HUP $p 2>/dev/null) >/dev/null 2>&1 & "
            "w=$!; exec 3<&-; wait $p; s=$?; kill $w 2>/dev/null; exit $s")


def _host(name: str, device: str, where: str) -> Host:
    if not HOST_NAME.fullmatch(name):
        raise BadInput(f"{where}: {name[:60]!r} is not a host name or address")
    if not DEVICE_NAME.fullmatch(device) or device.startswith("-"):
        raise BadInput(f"{where}: {device[:60]!r} is not a device name")
    return Host(name, device)


def parse_hosts(spec: str, device: str | None) -> list[Host]:
    """``--hosts h1,h2`` (every host's device is DEV) or ``--hosts FILE``: one host a line, ``HOST [DEVICE]
    [-p PORT] [-l USER] [-i KEYFILE]`` (DEV where a line names none), ``#`` comments. BadInput, one sentence,
    names what is wrong."""
    if Path(spec).is_file():
        text = read_bounded(spec, 1 << 20, "hosts file").decode("utf-8", "replace")
        hosts = [_host_line(line, f"{spec} line {n}", device) for n, line in enumerate(text.splitlines(), 1)
                 if line.strip() and not line.lstrip().startswith("#")]
    else:
        if device is None:
            raise BadInput("--hosts h1,h2,… needs DEV, the device on every host (or a hosts file: HOST DEVICE)")
        hosts = [_host(h.strip(), device, "--hosts") for h in spec.split(",") if h.strip()]
    if len(hosts) < 2:
        raise BadInput("--hosts needs two hosts or more (one host: compare on it)")
    if len(hosts) > MAX_HOSTS:
        raise BadInput(f"--hosts names more than {MAX_HOSTS} hosts")
    if len({h.name for h in hosts}) != len(hosts):
        raise BadInput("--hosts names a host twice")
    return hosts


def _host_line(line: str, where: str, device: str | None) -> Host:
    words = line.split()
    if len(words) > 1 and not words[1].startswith("-"):
        host, rest = _host(words[0], words[1], where), words[2:]
    elif device is not None:
        host, rest = _host(words[0], device, where), words[1:]
    else:
        raise BadInput(f"{where}: expected HOST DEVICE [-p PORT] [-l USER] [-i KEYFILE]")
    port = user = identity = None
    if len(rest) % 2:
        raise BadInput(f"{where}: {rest[-1][:30]!r} has no value")
    for flag, value in zip(rest[::2], rest[1::2], strict=True):
        if flag == "-p" and PORT.fullmatch(value) and 0 < int(value) < 65536:
            port = int(value)
        elif flag == "-l" and USER_NAME.fullmatch(value):
            user = value
        elif flag == "-i" and Path(value).is_file() and not value.startswith("-"):
            identity = value
        else:
            raise BadInput(f"{where}: {flag[:10]} {value[:40]!r}: only -p PORT, -l USER and -i KEYFILE (an existing "
                           "file) are taken; the rest belongs in your ssh config")
    return Host(host.name, host.device, port, user, identity)


@dataclass
class HostRun:
    host: Host
    status: str = "running"  # running, done, failed, cancelled
    reason: str = ""
    doc: dict[str, Any] | None = None
    stderr_tail: list[str] = field(default_factory=list)
    before: str | None = None  # the device's scheduler before the run, as the host's iosched read it
    after: str | None = None  # and after it (None: not read)
    check: str = ""  # why it could not be read

    @property
    def put_back(self) -> str:
        """What the controller found of the device afterwards, in words."""
        if self.before is None or self.after is None:
            return f"its device could not be checked ({self.check or 'no answer'})"
        if self.after == self.before:
            return f"{self.host.device} back on {self.after}"
        return f"{self.host.device} left on {self.after}, not {self.before}: run `iosched restore` there"


def read_scheduler(host: Host, iosched: str, ssh: str = "ssh", timeout: float = 30.0) -> tuple[str | None, str]:
    """The host's device's scheduler as the host's own iosched lists it, or None and why not."""
    try:
        # A quick read: not tied to its session (whose stdin is closed at once here).
        out = subprocess.run(dies_with_us(host.ssh_argv([iosched, "list", "--json"], ssh, tie=False), sig="TERM"),
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
                             timeout=timeout, start_new_session=True)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"ssh: {e}"
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or [f"exit status {out.returncode}"])[-1]
        return None, last[:200]
    try:
        devices = json.loads(out.stdout)
        found = next((d for d in devices if isinstance(d, dict) and d.get("name") == host.device), None)
    except (ValueError, TypeError, RecursionError):
        return None, "its iosched list was not JSON"
    if found is None:
        return None, f"it has no device {host.device}"
    return str(found.get("scheduler") or ""), ""


def _bounded_read(stream: IO[str] | None, out: list[str]) -> None:
    """A host's stdout, kept up to MAX_OUTPUT and read to its end (a host writing more is not left blocked)."""
    if stream is None:
        return
    kept = 0
    while chunk := stream.read(1 << 16):
        if kept < MAX_OUTPUT:
            out.append(chunk[: MAX_OUTPUT - kept])
            kept += len(out[-1])


def run_fleet(hosts: Sequence[Host], remote: Callable[[Host], list[str]], on_line: Callable[[str, str], None],
              ssh: str = "ssh", iosched: str | None = None) -> list[HostRun]:
    """Run ``remote(host)`` on every host at once over SSH; its JSON on stdout is the host's result. With
    ``iosched`` (the hosts' command), each host's device is read before and after (``HostRun.put_back``). Returns
    when all have ended; Ctrl-C ends every session (each remote iosched then restores its own device) and
    re-raises."""
    runs = [HostRun(h) for h in hosts]
    children: list[Child] = []
    lock = threading.Lock()
    cancelled = threading.Event()  # set under the lock: no session starts after the cancel has ended the others

    def one(run: HostRun) -> None:
        if iosched is not None:
            run.before, run.check = read_scheduler(run.host, iosched, ssh)
            if run.before is None:
                run.status, run.reason = "failed", f"not started: {run.check}"
                return
        try:
            session(run)
        finally:
            if iosched is not None and run.status != "cancelled":
                run.after, run.check = read_scheduler(run.host, iosched, ssh)

    def session(run: HostRun) -> None:
        argv = dies_with_us(run.host.ssh_argv(remote(run.host), ssh), sig="TERM")
        with lock:  # with the cancel below: a session starts before it, and is ended by it, or not at all
            if cancelled.is_set():
                return
            try:
                # stdin stays open, never written: its end (this process gone) is the remote watcher's hang-up.
                proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, errors="replace", start_new_session=True)
            except OSError as e:
                run.status, run.reason = "failed", f"cannot start ssh: {e.strerror or e}"
                return
            child = Child(proc)
            children.append(child)
        out: list[str] = []
        reader = threading.Thread(target=_bounded_read, args=(proc.stdout, out), daemon=True)
        reader.start()
        assert proc.stderr is not None
        for line in proc.stderr:
            line = line.rstrip("\n")[:4096]
            run.stderr_tail = [*run.stderr_tail, line][-3:]
            on_line(run.host.name, line)
        rc = child.wait()
        reader.join()
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        text = "".join(out)[:MAX_OUTPUT]
        if run.status == "cancelled":
            return
        if rc == 0:
            try:
                doc = json.loads(text)
            except (ValueError, RecursionError):
                doc = None
            if isinstance(doc, dict):
                run.status, run.doc = "done", doc
                return
            run.status, run.reason = "failed", "its iosched wrote no result"
            return
        why = next((s for s in reversed(run.stderr_tail) if s.startswith("iosched: ")), "")
        lost = "the SSH session was lost" if rc == 255 else f"its iosched exited with status {rc}"
        run.status, run.reason = "failed", f"{lost}: {why[9:]}" if why else lost

    threads = [threading.Thread(target=one, args=(r,), name=f"fleet-{r.host.name}") for r in runs]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    except BaseException:
        for r in runs:
            if r.status == "running":
                r.status, r.reason = "cancelled", "stopped"
        with lock:
            cancelled.set()
            for c in children:
                c.signal_group(signal.SIGTERM)  # the session ends; the remote iosched hangs up and restores
        for t in threads:
            with contextlib.suppress(Exception):
                t.join(timeout=30)
        raise
    return runs
