"""The fio runner: one child process, JSON status every interval, and no orphans.

Facts about fio 3.33 that shape this: forked job processes call setsid(), so a process-group kill misses
them; with ``--thread`` every job is a thread of the one process, which dies as a whole. fio ignores
SIGHUP. It exits 0 when its mounted-device guard aborts a write job, so success is judged from the JSON;
after a signal the JSON may be preceded by text lines. fio is started through util-linux `setpriv
--pdeathsig KILL`, so even a SIGKILLed iosched takes fio with it (the signal follows the spawning thread:
spawn and wait in the same thread). `preexec_fn` would do the same but is unsafe in a threaded process.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from iosched.core.base.errors import IoschedError
from iosched.core.base.outfile import write_file
from iosched.core.load.children import Child
from iosched.core.load.fio_result import FioFailed, FioRefused, FioResult, FioUnfinished, job_seconds, parse_result
from iosched.core.load.fiopath import fio_filename
from iosched.core.load.jobs import Job, JobFile
from iosched.core.load.targets import Target
from iosched.core.load.workdirs import workdir_prefix

INSTALL_HINT = "apt-get install -y fio"
# fio's output is outside input too: a lockstep fleet's client prints what a host's fio server sends it.
MAX_REPORT = 64 << 20  # one JSON report (a large job's json+ is a few MiB)
MAX_STDERR_KEPT = 64_000  # what is kept of fio's stderr, for its last words


class FioMissing(IoschedError):
    pass


def fio_binary() -> str:
    path = shutil.which("fio")
    if path is None:
        raise FioMissing(f"fio is not installed (on Debian: {INSTALL_HINT}); nothing was changed")
    return path


def dies_with_us(argv: list[str], sig: str = "KILL") -> list[str]:
    """``argv`` run through `setpriv --pdeathsig SIG`: the child gets ``sig`` when its parent thread ends."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise IoschedError("setpriv is missing (on Debian: apt-get install -y util-linux); nothing was started")
    return [setpriv, "--pdeathsig", sig, "--", *argv]


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


@dataclass(frozen=True)
class FioProgress:
    """The workload's own view over the last status interval."""

    elapsed: float  # seconds since start
    iops: float
    read_iops: float
    write_iops: float
    mb_s: float
    clat_mean_us: float | None  # cumulative mean so far
    # With two or more job sections: each role's IOPS and mean completion latency (µs) over the interval, so a
    # switch shows in the foreground's latency at once.
    roles: dict[str, RoleProgress] = field(default_factory=dict)


@dataclass(frozen=True)
class RoleProgress:
    iops: float
    clat_mean_us: float | None


Counts = tuple[int, int, int, float, int]  # reads, writes, bytes, latency sum (ns x IOs), IOs: so far


def _counts(obj: dict[str, Any]) -> dict[str, Counts]:
    """Per job name (a role): what it has done so far."""
    out: dict[str, Counts] = {}
    for j in obj.get("jobs") or []:
        r, w = j["read"]["total_ios"], j["write"]["total_ios"]
        b = sum(j[d]["io_bytes"] for d in ("read", "write"))
        lat = sum(j[d]["clat_ns"]["mean"] * j[d]["total_ios"] for d in ("read", "write") if j[d].get("clat_ns"))
        name = str(j.get("jobname"))
        r0, w0, b0, lat0, _n0 = out.get(name, (0, 0, 0, 0.0, 0))
        out[name] = (r0 + r, w0 + w, b0 + b, lat0 + lat, r0 + w0 + r + w)
    return out


def _total(per_role: dict[str, Counts]) -> Counts:
    r, w, b, lat, n = (sum(c[i] for c in per_role.values()) for i in range(5))
    return int(r), int(w), int(b), float(lat), int(n)


def _role_rates(now: dict[str, Counts], before: dict[str, Counts], dt: float) -> dict[str, RoleProgress]:
    """Each role's IOPS and mean latency over the interval (none for a workload of one section)."""
    if len(now) < 2:
        return {}
    out = {}
    for role, c in now.items():
        b = before.get(role, (0, 0, 0, 0.0, 0))
        ios, lat = c[4] - b[4], c[3] - b[3]
        out[role] = RoleProgress(ios / dt, lat / ios / 1000.0 if ios > 0 else None)
    return out


def command(job: Job | JobFile, target: Target, workdir: str, runtime: float | None = None,
            status_interval: float = 1.0) -> list[str]:
    """fio's argument list for a catalog job or a validated job file aimed at ``target``."""
    # json+ adds the completion-latency histogram (bins) the latency charts draw. The clock is the kernel's
    # (clock_gettime through the vDSO, which reads the same TSC on x86): fio's own TSC clock, its default there,
    # calibrates for about 0.1 s at every start, a tenth of a 1 s run on a fast device, for a few ns a time call.
    argv = [fio_binary(), "--output-format=json+", f"--status-interval={status_interval:g}", "--thread",
            "--eta=never", "--clocksource=clock_gettime"]
    if not job.writes and target.kind == "device":
        argv.append("--readonly")  # fio's own guard too: a read job never writes to a raw device
    if isinstance(job, Job) and not job.roles:
        argv += [f"--name={job.name}", f"--filename={fio_filename(target.path)}"]
        argv += [f"--{k}={v}" for k, v in job.fio_options()]
    else:
        path = os.path.join(workdir, "job.fio")
        # fio reads the file we write from the checked options, never the user's text; the target is ours.
        checked = job.as_job_file() if isinstance(job, Job) else job
        write_file(path, checked.render(runtime, target.path))
        argv.append(path)
    return argv


class FioHandle(Protocol):
    """What another thread may do to a running workload: one fio (FioRun) or a cgroup job's several
    (core/load/fio_group.py)."""

    @property
    def started(self) -> float: ...  # monotonic time it started, 0 before

    def stop(self) -> None: ...

    def kill(self, wait: bool = True) -> None: ...

    def finish(self) -> None: ...


@dataclass
class FioRun:
    """A running fio child. ``run()`` blocks (call it from the thread that should own the child)."""

    argv: list[str]
    on_progress: Callable[[FioProgress], object] | None = None
    proc: subprocess.Popen[str] | None = None
    started: float = 0.0
    last: dict[str, Any] | None = None
    expected_s: float | None = None  # seconds a time-based run must last to count as finished
    stderr_text: str = ""
    _stop: threading.Event = field(default_factory=threading.Event)
    _expired: threading.Event = field(default_factory=threading.Event)
    _finishing: threading.Event = field(default_factory=threading.Event)
    _too_much: threading.Event = field(default_factory=threading.Event)
    _child: Child | None = None

    def run(self, timeout: float | None = None) -> FioResult:
        self.started = time.monotonic()
        try:
            proc = subprocess.Popen(dies_with_us(self.argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, start_new_session=True)
        except FileNotFoundError as e:
            raise FioMissing(f"fio is not installed (on Debian: {INSTALL_HINT})") from e
        self.proc, self._child = proc, Child(proc)
        if self._stop.is_set():  # stopped while it was being started: it must not run its whole duration
            self._child.signal_group(signal.SIGKILL)
        # A fio stuck in the kernel (D state) prints nothing: the deadline is kept by a timer, not by its output.
        watchdog = None
        if timeout is not None:
            watchdog = threading.Timer(timeout, self._expire)
            watchdog.daemon = True
            watchdog.start()
        err_reader = threading.Thread(target=self._read_stderr, daemon=True)
        err_reader.start()
        try:
            self._read_stdout()
            self._child.wait()
        finally:
            if watchdog is not None:
                watchdog.cancel()
            self.kill()
        err_reader.join(timeout=2)
        if self._stop.is_set():
            raise FioFailed("the workload was stopped")
        if self._expired.is_set():
            raise FioFailed(f"fio did not finish within {timeout:.0f} s")
        if self._too_much.is_set():
            raise FioFailed(f"fio wrote a report larger than {MAX_REPORT >> 20} MiB (the bound on a report)")
        code = proc.returncode
        finishing = self._finishing.is_set()
        if code is not None and code < 0 and not (finishing and self.last is not None):
            raise FioUnfinished(f"fio was killed by {_signal_name(-code)} before the end of its run")
        if self.last is None:
            tail = self.stderr_text.strip().splitlines()[-3:]
            raise FioFailed("fio failed: " + (" / ".join(tail) or f"exit status {self.proc.returncode}"))
        try:
            result = parse_result(self.last)
        except FioRefused:
            raise  # one sentence already: fio's own lines would only repeat "Permission denied"
        except FioFailed as e:
            tail = [ln for ln in self.stderr_text.splitlines() if ln.startswith("fio:")][-2:]
            raise type(e)(f"{e}{': ' + ' / '.join(tail) if tail else ''}") from None  # FioDidNoIO stays itself
        if finishing:
            return result  # ended on purpose: its figures up to then (fio exits 128 after the SIGTERM)
        if code:
            raise FioUnfinished(f"fio exited with status {code} after {result.runtime_s:.1f} s")
        if self.expected_s is not None and result.runtime_s < self.expected_s * 0.9 - 0.5:
            raise FioUnfinished(f"fio ran {result.runtime_s:.1f} s of the {self.expected_s:g} s asked")
        return result

    def _read_stderr(self) -> None:
        """fio's stderr, read to its end in bounded pieces; its first MAX_STDERR_KEPT characters kept."""
        assert self.proc and self.proc.stderr
        while line := self.proc.stderr.readline(1 << 16):
            if len(self.stderr_text) < MAX_STDERR_KEPT:
                self.stderr_text += line[: MAX_STDERR_KEPT - len(self.stderr_text)]

    def _expire(self) -> None:
        self._expired.set()
        if self._child is not None:
            self._child.signal_group(signal.SIGKILL)

    def _read_stdout(self) -> None:
        assert self.proc and self.proc.stdout
        buf: list[str] = []
        size = 0  # of the report in buf
        prev: tuple[float, Counts, dict[str, Counts]] | None = None
        while line := self.proc.stdout.readline(MAX_REPORT + 1):
            # Each status report is one JSON object whose closing brace stands alone at the start of a line.
            if line.startswith("{"):
                buf, size = [line], len(line)
            elif buf:
                buf.append(line)
                size += len(line)
            if size > MAX_REPORT:  # no report of fio's: it is ended, and the run with it
                self._too_much.set()
                if self._child is not None:
                    self._child.signal_group(signal.SIGKILL)
                return
            if line.rstrip() != "}" or not buf:
                continue
            try:
                obj = json.loads("".join(buf))
            except (ValueError, RecursionError):  # not JSON, or an integer longer than Python reads
                buf = []
                continue
            buf = []
            self.last = obj
            now = time.monotonic()
            try:
                per_role = _counts(obj)
            except (KeyError, TypeError, ValueError, AttributeError):
                continue  # not a status report of the shape we know: the final result is judged on its own
            counts = _total(per_role)
            lat = counts[3] / counts[4] / 1000.0 if counts[4] else None
            if prev is None:
                # The first report: fio's own run time so far, so the first point comes after one interval.
                dt = job_seconds(obj)
                if dt > 0 and self.on_progress is not None:
                    self.on_progress(FioProgress(now - self.started, counts[4] / dt, counts[0] / dt,
                                                 counts[1] / dt, counts[2] / dt / 1e6, lat,
                                                 _role_rates(per_role, {}, dt)))
            elif self.on_progress is not None and now - prev[0] > 0.5:  # skip the short tail of the final report
                dt = now - prev[0]
                dr, dw, db = (counts[i] - prev[1][i] for i in range(3))
                self.on_progress(FioProgress(now - self.started, (dr + dw) / dt, dr / dt, dw / dt, db / dt / 1e6, lat,
                                             _role_rates(per_role, prev[2], dt)))
            prev = (now, counts, per_role)

    def kill(self, wait: bool = True) -> None:
        """Kill fio and anything in its session; safe to call twice and from any thread.

        Signals go only to a child not yet reaped (core/load/children.py). ``wait=True`` (the thread that runs
        fio) reaps it; ``wait=False`` returns at once (the UI thread): SIGTERM now, SIGKILL 3 s later from a
        timer thread if fio is still there, and the thread that runs fio reaps it.
        """
        child = self._child
        if child is None or child.reaped:
            return
        if not wait:
            child.signal_group(signal.SIGTERM)
            timer = threading.Timer(3.0, child.signal_group, (signal.SIGKILL,))
            timer.daemon = True
            timer.start()
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            child.signal_group(sig)
            if child.wait(timeout=3) is not None:
                return

    def stop(self) -> None:
        """Ask a running workload to end now (from another thread); returns at once."""
        self._stop.set()
        self.kill(wait=False)

    def finish(self) -> None:
        """End now and keep the figures so far (a background job whose command is done); returns at once.

        fio reports its figures on SIGTERM; should it not end, the SIGKILL 3 s later leaves the last status
        report, whose figures are cumulative too."""
        self._finishing.set()
        self.kill(wait=False)


def expected_of(job: Job | JobFile, runtime: float | None) -> float | None:
    """Seconds a run of ``job`` must last to count as finished (None: it ends when its work is done)."""
    return job.expected_s(runtime) if isinstance(job, JobFile) else runtime if runtime is not None else job.runtime


def timeout_of(job: Job | JobFile, runtime: float | None) -> float | None:
    """When a hung fio is stopped: after three times its runtime; a job file that sets its own has no limit."""
    expected = runtime if runtime is not None else job.runtime if isinstance(job, Job) else None
    return None if expected is None else expected * 3 + 120


def run_one_fio(job: Job | JobFile, target: Target, runtime: float | None = None,
                on_progress: Callable[[FioProgress], object] | None = None,
                holder: Callable[[FioRun], None] | None = None) -> FioResult:
    """Run ``job`` on ``target`` to the end as one fio process; ``holder`` receives the FioRun so another thread
    can stop it. (core/load/fio_group.py's run_fio runs any job: a cgroup job as one fio per role.)"""
    with tempfile.TemporaryDirectory(prefix=workdir_prefix()) as work:
        run = FioRun(command(job, target, work, runtime), on_progress)
        run.expected_s = expected_of(job, runtime)
        if holder is not None:
            holder(run)
        return run.run(timeout=timeout_of(job, runtime))
