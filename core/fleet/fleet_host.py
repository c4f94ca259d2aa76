"""The host end of a lockstep fleet compare: `iosched fleet-host`, which the controller runs on each host over SSH.

It holds the host's side of the experiment for as long as the session lasts: the identity and safety checks, the
device's load lock, the variants put in place (journaled, through the one door for privileged writes), the
sampler's windows around each run, and a `fio --server` the controller's fio client drives. The server listens on a
unix socket in a folder only root may enter, reached by the controller through its SSH session's forward: no port
is opened on any network.

The controller speaks one line at a time and each answer is one JSON line (``Answer``): ``apply N`` (variant N in
place, its configuration read back), ``begin`` (a run starts: the window opens), ``end IOS`` (it ended: the
window's figures and whether the settings drifted), ``bye``. The end of its input (the session lost, the
controller gone) or a signal ends it the same way: fio's server killed, the device put back, the lock released.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iosched.core.base import encode as documents
from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.base.outfile import create_new
from iosched.core.documents.params import Variant
from iosched.core.experiment.runner import sysinfo, window_metrics
from iosched.core.experiment.slots import shielded
from iosched.core.experiment.variants import Configurator, check_variants, drifted
from iosched.core.live.monitor import Monitor
from iosched.core.live.sampler import Sample
from iosched.core.load.children import Child
from iosched.core.load.conditions import read_conditions
from iosched.core.load.fio import dies_with_us, fio_binary
from iosched.core.load.jobs import Job
from iosched.core.load.targets import Target, choose_target
from iosched.core.load.workdirs import remove_tree
from iosched.core.settings.device_lock import load_lock
from iosched.core.settings.owners import Left, Owner

SESSION = re.compile(r"[0-9a-f]{16,64}")
DIGITS = re.compile(r"[0-9]{1,12}")  # ASCII only: str.isdigit() takes '²', which int() refuses
MAX_LINE = 200  # the controller's lines are short; a longer one is no line of ours


FLEET_DIR = Path("/run/iosched/fleet")
_LEFT_BY_A_SESSION = {"fio.sock", "server.log", "owner"}  # all a session's folder ever holds


def socket_path(session: str) -> Path:
    """Where a session's fio server listens: the controller forwards to this same path, so it is the same on
    every host whatever its environment says of its run directory."""
    return FLEET_DIR / session / "fio.sock"


def _session_owner(d: Path) -> Owner | None:
    """The fleet-host a session folder names in its owner file ("PID START"; an older one "PID"), or None."""
    if not SESSION.fullmatch(d.name) or d.is_symlink() or not d.is_dir():
        return None
    return Owner.parse((d / "owner").read_text()[:48])


def kept_sessions(base: Path = FLEET_DIR) -> list[Left]:
    """The session folders `restore` leaves because their fleet-host may still be running, each with why."""
    out: list[Left] = []
    try:
        folders = sorted(base.iterdir()) if base.is_dir() else []
    except OSError:
        return out
    for d in folders:
        try:
            owner = _session_owner(d)
        except (OSError, UnicodeDecodeError):
            continue
        if owner is not None and (why := owner.alive()) is not None:
            out.append(Left(f"a fleet session's folder {d}", why))
    return out


def clean_stale_sessions(dry_run: bool = False, base: Path = FLEET_DIR) -> list[str]:
    """Remove the folders of sessions whose fleet-host is gone (SIGKILLed: nothing else skips its cleanup).

    A folder is removed only when its owner file names a process that no longer exists (or a pid now another
    process's) and it holds nothing but what a session leaves; returns what was (or would be) removed."""
    removed: list[str] = []
    try:
        folders = sorted(base.iterdir()) if base.is_dir() else []
    except OSError:
        return removed
    for d in folders:
        try:
            owner = _session_owner(d)
            if owner is None or owner.alive() is not None:
                continue
            if any(p.name not in _LEFT_BY_A_SESSION or p.is_symlink() for p in d.iterdir()):
                continue
        except (OSError, UnicodeDecodeError):
            continue
        if dry_run or remove_tree(d):
            removed.append(str(d))
    return removed


Answer = dict[str, Any]


class BusyWindow:
    """A run's window on the host: the span in which its device was busy, to a tenth of a second.

    fio's server starts a job about a second after its client connects, so a window from `begin` to `end` would
    dilute the device's rates with that idle second. The sampler looks every 0.1 s (a thread of its own, which
    alone uses the monitor until ``close``); the window runs from the look before the device's first IO to the
    look that saw its last (the whole begin-to-end span when it did none)."""

    STEP_S = 0.1

    def __init__(self, monitor: Monitor, device: str) -> None:
        self.monitor, self.device = monitor, device
        self.begin = self.prev = monitor.snapshot()
        self.first: Sample | None = None  # the look before the first IO
        self.last: Sample | None = None  # the look that saw the last IO
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _ios(self, s: Sample) -> int:
        d = s.disks.get(self.device)
        return d.reads + d.writes if d is not None else 0

    def _look(self) -> Sample:
        now = self.monitor.snapshot()
        if self._ios(now) != self._ios(self.prev):
            if self.first is None:
                self.first = self.prev
            self.last = now
        self.prev = now
        return now

    def _watch(self) -> None:
        while not self._stop.wait(self.STEP_S):
            self._look()

    def close(self) -> tuple[Sample, Sample]:
        self._stop.set()
        self._thread.join()
        end = self._look()
        if self.first is None or self.last is None:
            return self.begin, end
        return self.first, self.last


@dataclass
class HostEnd:
    """One host's side of a lockstep compare; ``held()`` takes the lock and starts fio's server, ``answer`` takes
    the controller's lines, and leaving ``held()`` puts everything back."""

    device: str
    variants: list[Variant]
    job: Job
    session: str
    root: str | Path = "/"
    cfg: Configurator | None = None
    target: Target | None = None
    config: dict[str, str] | None = None  # the variant in place, as read back
    window: BusyWindow | None = None
    t_origin: float = field(default_factory=time.monotonic)
    _monitor: Monitor | None = None
    _server: Child | None = None

    def check(self) -> None:
        """Before anything is held or changed: the session's name, the variants and where the job may run
        (raw only, as a fleet compare has no --dir; a write job refused on a device holding data)."""
        if not SESSION.fullmatch(self.session):
            raise BadInput("--session takes 16 to 64 lower-case hex digits")
        check_variants(self.device, self.variants, self.root)
        self.target = choose_target(self.device, self.job.writes, size=self.job.size, raw=True, root=self.root,
                                    scratch_ok=False)

    @contextlib.contextmanager
    def held(self) -> Iterator[Answer]:
        """The load lock, fio's server and the configurator, for the session's length; yields the ready answer."""
        self.check()
        with load_lock(self.device, "fleet compare", self.root):
            self.cfg = Configurator(self.device, self.variants, self.root)
            self._monitor = Monitor(root=self.root, capacity=1)
            folder = socket_path(self.session).parent
            try:
                self._start_server(folder)
                self.t_origin = time.monotonic()
                assert self.target is not None
                yield {"ok": True, **documents.encode(sysinfo(self.device, self.root)), "original": self.cfg.snapshot(),
                       "target": self.target.to_json(), "started": time.time(),
                       "conditions": documents.encode(read_conditions(self.device, None, None, self.root))}
            finally:
                with shielded():  # a second signal cannot cut the put-back short
                    try:
                        if self.window is not None:
                            self.window.close()
                        self._stop_server()
                        shutil.rmtree(folder, ignore_errors=True)
                    finally:
                        self.cfg.put_back()

    def _start_server(self, folder: Path, made: bool = False) -> None:
        sock, log = folder / "fio.sock", folder / "server.log"
        try:
            if not made:
                folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                folder.mkdir(mode=0o700)  # new, ours alone: fio's socket is open to anyone who can reach its folder
                # Whose it is, so `iosched restore` can remove it if this process is SIGKILLed.
                with os.fdopen(create_new(folder / "owner"), "w") as owner:
                    owner.write(Owner.me().text())
            # Its words go to a file there, not a pipe no one reads once it runs (a full pipe would stop it).
            with os.fdopen(create_new(log, replace=True), "w") as out:
                proc = subprocess.Popen(dies_with_us([fio_binary(), f"--server=sock:{sock}"]),
                                        stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
        except OSError as e:
            raise IoschedError(f"cannot start fio's server in {folder}: {e.strerror or e}") from None
        self._server = Child(proc)
        deadline = time.monotonic() + 10
        while not sock.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                if proc.poll() is not None:  # gone and reaped: its group's id is free to be given again
                    self._server = None
                said = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
                raise IoschedError("fio's server did not start" + (f": {said[-1][:200]}" if said else ""))
            time.sleep(0.02)

    def _stop_server(self) -> None:
        """The server and everything it started gone: its connections' and jobs' processes are in its group (the
        jobs are threads: the job files say thread=1), so the group is signalled and waited out."""
        server, self._server = self._server, None
        if server is None:
            return
        pgid = server.proc.pid  # its own session: the group's id is its pid
        for sig in (signal.SIGTERM, signal.SIGKILL):
            # The group itself, even once its leader is reaped: a pid in use as a group's id is not given again.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)
            server.wait(timeout=3)
            deadline = time.monotonic() + 3
            while _group_alive(pgid) and time.monotonic() < deadline:
                time.sleep(0.02)
            if not _group_alive(pgid):
                return

    def _restart(self) -> Answer:
        """A fresh server: after a client that failed, whatever job it left is gone before the next run."""
        folder = socket_path(self.session).parent
        self._stop_server()
        (folder / "fio.sock").unlink(missing_ok=True)
        self._start_server(folder, made=True)
        return {"ok": True}

    def answer(self, line: str) -> Answer:
        """The answer to one of the controller's lines; a line that is not ours is refused, nothing changed."""
        words = line.split()
        try:
            if len(line) > MAX_LINE or not words:
                raise BadInput("not a line of the fleet protocol")
            number = int(words[1]) if len(words) == 2 and DIGITS.fullmatch(words[1]) else None
            if words[0] == "apply" and number is not None and number < len(self.variants):
                return self._apply(self.variants[number])
            if words == ["begin"]:
                return self._begin()
            if words[0] == "end" and number is not None:
                return self._end(number)
            if words == ["restart"]:
                return self._restart()
            raise BadInput(f"not a line of the fleet protocol: {line[:40]!r}")
        except IoschedError as e:
            return {"ok": False, "error": str(e)}

    def _apply(self, v: Variant) -> Answer:
        if self.cfg is None:
            raise BadInput("apply before the device is held")
        self.config = None  # a failed apply leaves no variant in place to run under
        self.config = self.cfg.apply(v)
        return {"ok": True, "config": self.config}

    def _begin(self) -> Answer:
        if self.config is None or self._monitor is None:
            raise BadInput("begin before a variant is in place")
        if self.window is not None:
            raise BadInput("begin while a run's window is open")
        self.window = BusyWindow(self._monitor, self.device)
        return {"ok": True}

    def _end(self, ios: int) -> Answer:
        if self.window is None or self.config is None or self._monitor is None:
            raise BadInput("end before begin")
        s0, s1 = self.window.close()
        self.window = None
        metrics = window_metrics(self.device, s0, s1, ios or None)
        return {"ok": True, "start": s0.time - self.t_origin, "end": s1.time - self.t_origin, "metrics": metrics,
                "drift": drifted(self.device, self.config, self.root)}

    def switches(self) -> list[tuple[float, str]]:
        """The switches made, on the session's clock (the runs' start and end are on it too)."""
        return [(t - self.t_origin, s) for t, s in self.cfg.switches] if self.cfg else []


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def encode(answer: Answer) -> str:
    return json.dumps(answer, separators=(",", ":"), default=str)


def serve_lines(end: HostEnd, lines: Iterable[str], say: Callable[[str], object], idle_s: float | None = None) -> bool:
    """Answer each line until ``bye`` (True), the end of the input, or ``idle_s`` seconds without a line (False);
    ``say`` writes one answer line.

    The idle bound is for a controller that vanished without closing the session (its machine lost power, the
    network split): sshd may not see that for hours, and the device would stay on a test variant till then."""
    got: queue.Queue[str | None] = queue.Queue()

    def read() -> None:  # a thread of its own: a blocked read cannot be given a timeout
        for line in lines:
            got.put(line)
        got.put(None)

    threading.Thread(target=read, daemon=True).start()
    while True:
        try:
            line = got.get(timeout=idle_s)
        except queue.Empty:
            print(f"iosched: no word from the controller for {idle_s:.0f} s: putting the device back",
                  file=sys.stderr, flush=True)
            return False
        if line is None:
            return False
        if line.strip() == "bye":
            return True
        say(encode(end.answer(line.strip())))
