"""A compare on many hosts (`compare --hosts`): each host's own iosched runs the compare there, over SSH.

Each host keeps its own journal and puts its own device back (a lost SSH session hangs up the remote iosched,
which restores before it exits), so a controller that dies leaves no host changed. SSH runs with the user's own
keys and configuration (BatchMode: no password is ever asked or taken), each in its own session under `setpriv
--pdeathsig`, so it dies with the controller; Ctrl-C and signals end every session. Host names, users, key files
and devices are checked before they reach a command line, and the remote command is built from checked values
only, each word quoted.

A host that fails (cannot connect, refuses, loses its session) is marked failed with the reason; the others go on.
The controller judges each host's result and pools them (core/fleet/fleet_plan.py, core/statistics/fleet_verdict.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, NamedTuple

from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.base.infile import open_regular
from iosched.core.experiment.slots import Course, Slot
from iosched.core.fleet.host_output import (
    MAX_LIST,
    MAX_RESULT,
    MAX_SAID_LINE,
    parse_json,
    read_said,
    read_whole,
)
from iosched.core.kernel.sysfs import DEVICE_NAME
from iosched.core.load.children import Child
from iosched.core.load.fio import FioProgress, dies_with_us

if TYPE_CHECKING:
    from iosched.core.documents.document import CompareDoc, ExperimentDoc, RunDoc

# A DNS name or an IPv4 literal, or an IPv6 literal in brackets: never an option (no leading '-') or a path.
HOST_NAME = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9-]{1,63})*|\[[0-9A-Fa-f:.]{2,45}\])")
USER_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
PORT = re.compile(r"[0-9]{1,5}")  # ASCII only: str.isdigit() takes "²", which int() refuses
MAX_HOSTS = 64
SCHEDULER = re.compile(r"[a-z0-9_-]{1,32}")  # as sysfs lists them


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


MAX_HOSTS_FILE = 64 << 10  # a hosts file: 64 hosts a line each, with room for comments
MAX_HOSTS_LINES = 1000
HOSTS_LINE = "HOST [DEVICE] [-p PORT] [-l USER] [-i KEYFILE]"


def _host(name: str, device: str, where: str) -> Host:
    """A host of ``--hosts h1,h2`` and DEV, both as the user typed them (so said back)."""
    if not HOST_NAME.fullmatch(name):
        nor = ", nor a hosts file here" if "/" in name else ""
        raise BadInput(f"{where}: {name[:60]!r} is not a host name or address{nor}")
    if not DEVICE_NAME.fullmatch(device) or device.startswith("-"):
        raise BadInput(f"{where}: {device[:60]!r} is not a device name")
    return Host(name, device)


def parse_hosts(spec: str, device: str | None) -> list[Host]:
    """``--hosts h1,h2`` (every host's device is DEV) or ``--hosts FILE``: one host a line, ``HOST [DEVICE]
    [-p PORT] [-l USER] [-i KEYFILE]`` (DEV where a line names none), ``#`` comments. BadInput, one sentence,
    names what is wrong; of a file, which line and why, never its words (it may be no hosts file at all)."""
    if os.path.exists(spec):  # a file of any kind: one that is not a regular file is refused as such
        if device is not None and (not DEVICE_NAME.fullmatch(device) or device.startswith("-")):
            raise BadInput(f"{device[:60]!r} is not a device name")
        hosts = [_host_line(line, f"{spec} line {n}", device) for n, line in enumerate(_hosts_file(spec), 1)
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


def _hosts_file(path: str) -> list[str]:
    """A hosts file's lines: a regular file of UTF-8 text within MAX_HOSTS_FILE and MAX_HOSTS_LINES."""
    fd = open_regular(path, "hosts file (one host a line)")
    try:
        data = os.read(fd, MAX_HOSTS_FILE + 1)
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_HOSTS_FILE:
        raise BadInput(f"{path} is larger than {MAX_HOSTS_FILE >> 10} KiB: not a hosts file (one host a line, at most "
                       f"{MAX_HOSTS})")
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise BadInput(f"{path} is not UTF-8 text: not a hosts file") from None
    if len(lines) > MAX_HOSTS_LINES:
        raise BadInput(f"{path} has more than {MAX_HOSTS_LINES} lines: not a hosts file (one host a line, at most "
                       f"{MAX_HOSTS})")
    return lines


def _host_line(line: str, where: str, device: str | None) -> Host:
    """One line of a hosts file. Its faults are said by place and reason alone: a file that is not a hosts file
    (`--hosts /etc/shadow`) must not have its words echoed."""
    words = line.split()
    if not HOST_NAME.fullmatch(words[0]):
        raise BadInput(f"{where}: its first word is not a host name or address (a hosts file has one host a line: "
                       f"{HOSTS_LINE})")
    if len(words) > 1 and not words[1].startswith("-"):
        if not DEVICE_NAME.fullmatch(words[1]):
            raise BadInput(f"{where}: its second word is not a device name (a whole disk, e.g. sdb or nvme0n1)")
        host, rest = Host(words[0], words[1]), words[2:]
    elif device is not None:
        host, rest = Host(words[0], device), words[1:]
    else:
        raise BadInput(f"{where}: it names no device, and no DEV was given ({HOSTS_LINE})")
    port = user = identity = None
    if len(rest) % 2:
        raise BadInput(f"{where}: its last option has no value ({HOSTS_LINE})")
    takes = "only -p PORT, -l USER and -i KEYFILE are taken; the rest belongs in your ssh config"
    for flag, value in zip(rest[::2], rest[1::2], strict=True):
        if flag == "-p":
            if not (PORT.fullmatch(value) and 0 < int(value) < 65536):
                raise BadInput(f"{where}: -p takes a port from 1 to 65535 ({takes})")
            port = int(value)
        elif flag == "-l":
            if not USER_NAME.fullmatch(value):
                raise BadInput(f"{where}: -l takes a user name: lower-case letters, digits, '_' and '-' ({takes})")
            user = value
        elif flag == "-i":
            if value.startswith("-") or not Path(value).is_file():
                raise BadInput(f"{where}: -i takes a key file that exists ({takes})")
            identity = value
        else:
            raise BadInput(f"{where}: an option that is not -p, -l or -i ({takes})")
    return Host(host.name, host.device, port, user, identity)


def check_host_run(run: RunDoc, n: int) -> None:
    """What a saved compare may hold but no host's run of a catalog job does: a figure below zero (every figure of
    one is a rate, a time or a share), a window that ends before it starts or before its clock's zero. IoschedError
    naming the run (``n`` from 1)."""
    if not 0 <= run.start <= run.end:
        raise IoschedError(f"run {n}'s window is not on its clock (it starts before zero or ends before it starts)")
    for key, value in run.metrics.items():
        if value is not None and value < 0:
            raise IoschedError(f"run {n}'s {key[:40]} is below zero ({value:.3g}): no run measures that")


def check_host_result(doc: ExperimentDoc) -> None:
    """A host's compare (read whole as a saved one first) as check_host_run holds each run, and its switches on the
    same clock."""
    for n, run in enumerate(doc.runs, 1):
        check_host_run(run, n)
    if any(t < 0 for t, _ in doc.switches or []):
        raise IoschedError("a switch's time is before its clock's zero")


HostStatus = Literal["running", "done", "failed", "cancelled"]


@dataclass
class HostRun:
    host: Host
    status: HostStatus = "running"
    reason: str = ""
    doc: CompareDoc | None = None  # in lockstep: the host's compare as the controller keeps it (lockstep.py)
    answer: object = None  # each by itself: the JSON its own iosched wrote, not yet read (fleet_plan.HostResults)
    stderr_tail: list[str] = field(default_factory=list)
    before: str | None = None  # the device's scheduler before the run, as the host's iosched read it
    after: str | None = None  # and after it (None: not read)
    check: str = ""  # why it could not be read
    _changing: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def live(self) -> bool:
        return self.status == "running"

    def change(self, note: str | None = None, run: RunDoc | None = None, **fields: Any) -> None:
        """The host's compare made again (``dataclasses.replace``) with ``fields``, ``note`` after its notes and
        ``run`` after its runs. Under a lock: the thread that reads the host's answers adds its runs while a Ctrl-C
        in the main thread marks it cancelled, and neither change is lost."""
        with self._changing:
            doc = self.doc
            if doc is None:
                return
            if note is not None:
                fields.update(notes=[*doc.notes, note])
            if run is not None:
                fields.update(runs=[*doc.runs, run])
            self.doc = replace(doc, **fields)

    @property
    def put_back(self) -> str:
        """What the controller found of the device afterwards, in words."""
        if self.before is None or self.after is None:
            return f"its device could not be checked ({self.check or 'no answer'})"
        if self.after == self.before:
            return f"{self.host.device} back on {self.after}"
        return f"{self.host.device} left on {self.after}, not {self.before}: run `iosched restore` there"


class SchedulerRead(NamedTuple):
    """A host's device's scheduler as its own iosched lists it ("" for a device without one), or None and why not;
    ``broke``: the host said more than its bound (it is then failed, as any host that does)."""

    scheduler: str | None
    why: str
    broke: bool = False


def read_scheduler(host: Host, iosched: str, ssh: str = "ssh", timeout: float = 30.0) -> SchedulerRead:
    """The host's device's scheduler as the host's own iosched lists it, or None and why not. The list is read
    within its bound (MAX_LIST) and its time: a host that says more, or takes longer, is not read."""
    # A quick read: not tied to its session (whose stdin is closed at once here).
    argv = dies_with_us(host.ssh_argv([iosched, "list", "--json"], ssh, tie=False), sig="TERM")
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, errors="replace", start_new_session=True)
    except OSError as e:
        return SchedulerRead(None, f"ssh: {e.strerror or e}")
    child = Child(proc)
    tail: list[str] = []
    broke: list[str] = []  # a bound broken
    slow: list[str] = []

    def read_err() -> None:
        why = read_said(proc.stderr, lambda line: tail.__setitem__(slice(None), [*tail[-2:], line]),
                        max_total=MAX_SAID_LINE * 4)
        if why is not None:
            broke.append(why)
            child.signal_group(signal.SIGTERM)

    def too_slow() -> None:
        slow.append(f"no answer within {timeout:.0f} s")
        child.signal_group(signal.SIGTERM)

    timer = threading.Timer(timeout, too_slow)
    reader = threading.Thread(target=read_err, daemon=True)
    timer.start()
    reader.start()
    try:
        text, why = read_whole(proc.stdout, MAX_LIST, "its `iosched list --json`")
        if why is not None:
            broke.append(why)
            child.signal_group(signal.SIGTERM)
        rc = child.wait(timeout=10)
        if rc is None:
            child.signal_group(signal.SIGKILL)
            rc = child.wait()
        reader.join(timeout=5)
    finally:
        timer.cancel()
        for stream in (proc.stdout, proc.stderr):
            with contextlib.suppress(OSError, ValueError):
                if stream is not None:
                    stream.close()
    if broke:
        return SchedulerRead(None, broke[0], broke=True)
    if slow:
        return SchedulerRead(None, slow[0])
    if rc != 0:
        return SchedulerRead(None, (tail or [f"exit status {rc}"])[-1][:200])
    devices = parse_json(text)
    if not isinstance(devices, list):
        return SchedulerRead(None, "its iosched list was not JSON")
    found = next((d for d in devices if isinstance(d, dict) and d.get("name") == host.device), None)
    if found is None:
        return SchedulerRead(None, f"it has no device {host.device}")
    scheduler = found.get("scheduler")
    if scheduler is None or scheduler == "":  # a device without an elevator
        return SchedulerRead("", "")
    if not (isinstance(scheduler, str) and SCHEDULER.fullmatch(scheduler)):
        return SchedulerRead(None, "its iosched list named no scheduler for it")
    return SchedulerRead(scheduler, "")


def _read_result(stream: IO[str] | None, out: list[str], broke: list[str], child: Child) -> None:
    """A host's stdout (its compare's JSON) within MAX_RESULT; past it, the bound broken and the session ended."""
    text, why = read_whole(stream, MAX_RESULT, "its compare's result")
    if why is not None:
        broke.append(why)
        child.signal_group(signal.SIGTERM)  # the remote iosched is hung up with its session and puts back
    out.append(text)


class OnItsOwn:
    """The executor of a fleet whose hosts go at their own pace (`--independent`): its one slot is every host's own
    compare at once, each ``remote(host)`` over SSH, its JSON on stdout the host's ``answer``. With ``iosched`` (the
    hosts' command), each host's device is read before and after (``HostRun.put_back``). ``end`` ends every session
    still running (each remote iosched then restores its own device) and waits for them."""

    settle = 0.0

    def __init__(self, hosts: Sequence[Host], remote: Callable[[Host], list[str]],
                 on_line: Callable[[str, str], None], ssh: str = "ssh", iosched: str | None = None,
                 answered: tuple[int, ...] = (0,)) -> None:
        self.remote, self.on_line, self.ssh, self.iosched = remote, on_line, ssh, iosched
        self.answered = answered  # the exit statuses that come with a result (an advice that could not decide: 1)
        self.runs = [HostRun(h) for h in hosts]
        self.children: list[Child] = []
        self.lock = threading.Lock()
        self.cancelled = threading.Event()  # set under the lock: no session starts after the cancel ended the others
        self.threads: list[threading.Thread] = []

    def begin(self, say: Callable[[str], None], note: Callable[[str], None]) -> None:
        return None

    def apply(self, slot: Slot) -> object:
        return slot  # each host's iosched puts its own variants in place

    def run(self, slot: Slot, placed: object, progress: Callable[[FioProgress], None]) -> list[HostRun]:
        self.threads = [threading.Thread(target=self._one, args=(r,), name=f"fleet-{r.host.name}") for r in self.runs]
        for t in self.threads:
            t.start()
        for t in self.threads:
            t.join()
        return self.runs

    def end(self) -> IoschedError | None:
        if not any(t.is_alive() for t in self.threads):
            return None
        for r in self.runs:
            if r.status == "running":
                r.status, r.reason = "cancelled", "stopped"
        with self.lock:
            self.cancelled.set()
            for c in self.children:
                c.signal_group(signal.SIGTERM)  # the session ends; the remote iosched hangs up and restores
        for t in self.threads:
            with contextlib.suppress(Exception):
                t.join(timeout=30)
        return None

    def _one(self, run: HostRun) -> None:
        iosched, ssh = self.iosched, self.ssh
        if iosched is not None:
            run.before, run.check, _ = read_scheduler(run.host, iosched, ssh)
            if run.before is None:
                run.status, run.reason = "failed", f"not started: {run.check}"
                return
        try:
            self._session(run)
        finally:
            if iosched is not None and run.status != "cancelled":
                run.after, run.check, broke = read_scheduler(run.host, iosched, ssh)
                if broke and run.status == "done":  # its result came first; a host that says too much fails
                    run.status, run.reason = "failed", run.check

    def _session(self, run: HostRun) -> None:
        argv = dies_with_us(run.host.ssh_argv(self.remote(run.host), self.ssh), sig="TERM")
        with self.lock:  # with the cancel in end(): a session starts before it, and is ended by it, or not at all
            if self.cancelled.is_set():
                return
            try:
                # stdin stays open, never written: its end (this process gone) is the remote watcher's hang-up.
                proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, errors="replace", start_new_session=True)
            except OSError as e:
                run.status, run.reason = "failed", f"cannot start ssh: {e.strerror or e}"
                return
            child = Child(proc)
            self.children.append(child)
        out: list[str] = []
        broke: list[str] = []  # the bound the host broke, if it did
        reader = threading.Thread(target=_read_result, args=(proc.stdout, out, broke, child), daemon=True)
        reader.start()

        def heard(line: str) -> None:
            run.stderr_tail = [*run.stderr_tail, line[:4096]][-3:]
            self.on_line(run.host.name, line)

        why_said = read_said(proc.stderr, heard)
        if why_said is not None:
            broke.append(why_said)
            child.signal_group(signal.SIGTERM)
        rc = child.wait()
        reader.join()
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        if run.status == "cancelled":
            return
        if broke:
            run.status, run.reason = "failed", broke[0]
            return
        if rc in self.answered:
            doc = parse_json(out[0] if out else "")
            if isinstance(doc, dict):
                run.status, run.answer = "done", doc
                return
            run.status, run.reason = "failed", "its iosched wrote no result"
            return
        why = next((s for s in reversed(run.stderr_tail) if s.startswith("iosched: ")), "")
        lost = "the SSH session was lost" if rc == 255 else f"its iosched exited with status {rc}"
        run.status, run.reason = "failed", f"{lost}: {why[9:]}" if why else lost


class OnItsOwnCourse(Course[list[HostRun], list[HostRun]]):
    """An independent fleet's course: one slot, every host's own compare; each host's result is its answer."""

    def __init__(self) -> None:
        super().__init__([Slot(0, 0)], 1)

    def record(self, doc: list[HostRun], slot: Slot, run: list[HostRun], took: float) -> list[HostRun]:
        return run

    def note(self, doc: list[HostRun], text: str) -> list[HostRun]:
        return doc
