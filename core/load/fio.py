"""The fio runner: one child process, JSON status every interval, and no orphans.

Facts about fio 3.33 that shape this: forked job processes call setsid(), so a process-group kill misses
them; with ``--thread`` every job is a thread of the one process, which dies as a whole. fio ignores
SIGHUP. It exits 0 when its mounted-device guard aborts a write job, so success is judged from the JSON;
after a signal the JSON may be preceded by text lines. fio is started through util-linux `setpriv
--pdeathsig KILL`, so even a SIGKILLed iosched takes fio with it (the signal follows the spawning thread:
spawn and wait in the same thread). `preexec_fn` would do the same but is unsafe in a threaded process.
"""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from iosched.core.base.errors import IoschedError
from iosched.core.load.children import Child
from iosched.core.load.fiopath import fio_filename
from iosched.core.load.jobs import Job, JobFile
from iosched.core.load.targets import Target
from iosched.core.load.workdirs import workdir_prefix

INSTALL_HINT = "apt-get install -y fio"


class FioMissing(IoschedError):
    pass


class FioFailed(IoschedError):
    pass


class FioRefused(FioFailed):
    """fio could not open its target for lack of privilege."""


class FioUnfinished(FioFailed):
    """fio did not run its workload to the end: killed, a non-zero exit, or shorter than asked."""


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


@dataclass
class FioResult:
    raw: dict[str, Any]  # fio's full JSON
    iops: float
    read_iops: float
    write_iops: float
    mb_s: float
    total_ios: int
    clat_mean_us: float | None
    clat_p50_us: float | None
    clat_p99_us: float | None
    clat_p999_us: float | None
    runtime_s: float
    usr_cpu: float
    sys_cpu: float

    def metrics(self) -> dict[str, float | None]:
        return {"iops": self.iops, "mb_s": self.mb_s, "clat_mean_us": self.clat_mean_us,
                "clat_p50_us": self.clat_p50_us, "clat_p99_us": self.clat_p99_us, "clat_p999_us": self.clat_p999_us}


def _pct(clat: dict[str, Any], key: str) -> float | None:
    v = (clat.get("percentile") or {}).get(key)
    return v / 1000.0 if v else None


def parse_result(obj: dict[str, Any]) -> FioResult:
    """Sum the jobs (group reporting gives one per group) and take latency from the busiest direction."""
    try:
        return _parse_result(obj)
    except (KeyError, TypeError, ValueError, AttributeError, ZeroDivisionError):
        raise FioFailed("fio's JSON output has an unexpected shape") from None


def _parse_result(obj: dict[str, Any]) -> FioResult:
    jobs = obj.get("jobs") or []
    if not jobs:
        raise FioFailed("fio ran no job")
    errors = [f"{j.get('jobname')}: error {j['error']}" for j in jobs if j.get("error")]
    if os.geteuid() != 0 and any(j.get("error") in (errno.EACCES, errno.EPERM) for j in jobs):
        raise FioRefused("fio was refused access to its target (permission denied): run as root")
    if errors:
        raise FioFailed("fio reported " + "; ".join(errors))
    r_iops = sum(j["read"]["iops"] for j in jobs)
    w_iops = sum(j["write"]["iops"] for j in jobs)
    bw = sum(j[d]["bw_bytes"] for j in jobs for d in ("read", "write"))
    total = sum(j[d]["total_ios"] for j in jobs for d in ("read", "write", "trim"))
    # Latency: ios-weighted mean over directions; percentiles from the direction with most IOs.
    lat_sum, lat_n, best = 0.0, 0, None
    for j in jobs:
        for d in ("read", "write"):
            n, clat = j[d]["total_ios"], j[d].get("clat_ns") or {}
            if n and clat.get("mean") is not None:
                lat_sum += clat["mean"] * n
                lat_n += n
                if best is None or n > best[0]:
                    best = (n, clat)
    clat = best[1] if best else {}
    runtime = _job_seconds(obj)
    counts = [j[d]["total_ios"] for j in jobs for d in ("read", "write", "trim")]
    figures = [r_iops, w_iops, bw, runtime, lat_sum, *counts]
    if not all(isinstance(x, (int, float)) and math.isfinite(x) and x >= 0 for x in figures):
        raise FioFailed("fio's JSON output holds negative or non-finite figures")
    if total == 0:
        raise FioFailed("fio completed no IO")
    return FioResult(
        raw=obj, iops=r_iops + w_iops, read_iops=r_iops, write_iops=w_iops, mb_s=bw / 1e6, total_ios=total,
        clat_mean_us=lat_sum / lat_n / 1000.0 if lat_n else None,
        clat_p50_us=_pct(clat, "50.000000"), clat_p99_us=_pct(clat, "99.000000"),
        clat_p999_us=_pct(clat, "99.900000"), runtime_s=runtime,
        usr_cpu=sum(j.get("usr_cpu", 0.0) for j in jobs) / len(jobs),
        sys_cpu=sum(j.get("sys_cpu", 0.0) for j in jobs) / len(jobs),
    )


def latency_bins(obj: dict[str, Any]) -> dict[int, int]:
    """fio's completion-latency histogram (json+ ``clat_ns.bins``) over every job and direction: ns -> IOs.

    Outside input: anything malformed is skipped, never raised, so an old save without bins draws nothing.
    """
    out: dict[int, int] = {}
    jobs = obj.get("jobs") if isinstance(obj, dict) else None
    for j in jobs if isinstance(jobs, list) else []:
        for d in ("read", "write", "trim"):
            side = j.get(d) if isinstance(j, dict) else None
            clat = side.get("clat_ns") if isinstance(side, dict) else None
            bins = clat.get("bins") if isinstance(clat, dict) else None
            if not isinstance(bins, dict):
                continue
            for k, n in bins.items():
                try:
                    ns, count = int(k), int(n)
                except (TypeError, ValueError, OverflowError):
                    continue
                if ns >= 0 and count > 0:
                    out[ns] = out.get(ns, 0) + count
    return dict(sorted(out.items()))


def _job_seconds(obj: dict[str, Any]) -> float:
    """Wall seconds the jobs ran: group reporting sums job_runtime over threads, so divide it back."""
    best = 0.0
    for j in obj.get("jobs") or []:
        threads = max(int((j.get("job options") or {}).get("numjobs", 1) or 1), 1)
        best = max(best, j.get("job_runtime", 0) / 1000.0 / threads)
    return best


def _counts(obj: dict[str, Any]) -> tuple[int, int, int, float, int]:
    jobs = obj.get("jobs") or []
    r = sum(j["read"]["total_ios"] for j in jobs)
    w = sum(j["write"]["total_ios"] for j in jobs)
    b = sum(j[d]["io_bytes"] for j in jobs for d in ("read", "write"))
    lat = sum(j[d]["clat_ns"]["mean"] * j[d]["total_ios"] for j in jobs for d in ("read", "write")
              if j[d].get("clat_ns"))
    return r, w, b, lat, r + w


def command(job: Job | JobFile, target: Target, workdir: str, runtime: float | None = None,
            status_interval: float = 1.0) -> list[str]:
    """fio's argument list for a catalog job or a validated job file aimed at ``target``."""
    # json+ adds the completion-latency histogram (bins) the latency charts draw.
    argv = [fio_binary(), "--output-format=json+", f"--status-interval={status_interval:g}", "--thread",
            "--eta=never"]
    if not job.writes and target.kind == "device":
        argv.append("--readonly")  # fio's own guard too: a read job never writes to a raw device
    if isinstance(job, Job):
        argv += [f"--name={job.name}", f"--filename={fio_filename(target.path)}"]
        argv += [f"--{k}={v}" for k, v in job.fio_options()]
    else:
        path = os.path.join(workdir, "job.fio")
        # fio reads the file we write from the checked options, never the user's text; the target is ours.
        with open(path, "w") as f:
            f.write(job.render(runtime, target.path))
        argv.append(path)
    return argv


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
        code = proc.returncode
        if code is not None and code < 0:
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
            raise FioFailed(f"{e}{': ' + ' / '.join(tail) if tail else ''}") from None
        if code:
            raise FioUnfinished(f"fio exited with status {code} after {result.runtime_s:.1f} s")
        if self.expected_s is not None and result.runtime_s < self.expected_s * 0.9 - 0.5:
            raise FioUnfinished(f"fio ran {result.runtime_s:.1f} s of the {self.expected_s:g} s asked")
        return result

    def _read_stderr(self) -> None:
        assert self.proc and self.proc.stderr
        for line in self.proc.stderr:
            if len(self.stderr_text) < 64_000:
                self.stderr_text += line

    def _expire(self) -> None:
        self._expired.set()
        if self._child is not None:
            self._child.signal_group(signal.SIGKILL)

    def _read_stdout(self) -> None:
        assert self.proc and self.proc.stdout
        buf: list[str] = []
        prev: tuple[float, tuple[int, int, int, float, int]] | None = None
        for line in self.proc.stdout:
            # Each status report is one JSON object whose closing brace stands alone at the start of a line.
            if line.startswith("{"):
                buf = [line]
            elif buf:
                buf.append(line)
            if line.rstrip() != "}" or not buf:
                continue
            try:
                obj = json.loads("".join(buf))
            except (json.JSONDecodeError, RecursionError):
                buf = []
                continue
            buf = []
            self.last = obj
            now = time.monotonic()
            try:
                counts = _counts(obj)
            except (KeyError, TypeError, ValueError, AttributeError):
                continue  # not a status report of the shape we know: the final result is judged on its own
            lat = counts[3] / counts[4] / 1000.0 if counts[4] else None
            if prev is None:
                # The first report: fio's own run time so far, so the first point comes after one interval.
                dt = _job_seconds(obj)
                if dt > 0 and self.on_progress is not None:
                    self.on_progress(FioProgress(now - self.started, counts[4] / dt, counts[0] / dt,
                                                 counts[1] / dt, counts[2] / dt / 1e6, lat))
            elif self.on_progress is not None and now - prev[0] > 0.5:  # skip the short tail of the final report
                dt = now - prev[0]
                dr, dw, db = (counts[i] - prev[1][i] for i in range(3))
                self.on_progress(FioProgress(now - self.started, (dr + dw) / dt, dr / dt, dw / dt, db / dt / 1e6, lat))
            prev = (now, counts)

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


def run_fio(job: Job | JobFile, target: Target, runtime: float | None = None,
            on_progress: Callable[[FioProgress], object] | None = None,
            holder: Callable[[FioRun], None] | None = None) -> FioResult:
    """Run ``job`` on ``target`` to the end; ``holder`` receives the FioRun so another thread can stop it."""
    with tempfile.TemporaryDirectory(prefix=workdir_prefix()) as work:
        run = FioRun(command(job, target, work, runtime), on_progress)
        run.expected_s = runtime if runtime is not None else job.runtime
        if holder is not None:
            holder(run)
        # A hung fio is stopped after three times its runtime; a job file that sets its own has no limit.
        expected = runtime if runtime is not None else job.runtime if isinstance(job, Job) else None
        return run.run(timeout=None if expected is None else expected * 3 + 120)
