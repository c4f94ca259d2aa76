"""Timed commands (`compare --cmd`): a shell command in its own session that dies with iosched, timed alone or
while a background fio job loads the device (`--background`: start-up and wall times under load).

A command's whole process tree ends with its run (core/load/cmd_tree.py, the one way iosched runs a command): where
it can, the command runs in a cgroup of its own (core/settings/cmd_cgroup.py), which holds whatever it starts, setsid
or not, and is killed whole when the command ends; its process group (killed while the command is a zombie, so that
its id is still its own) and its session end the rest everywhere. Nothing it leaves behind holds the output pipe,
so the run never waits on it. A command that fails (a non-zero exit, a signal) is an invalid run with its reason, not
the end of the experiment.

Under a background (``beside``, which a start-up's replay runs under too: core/experiment/startup.py), each run
starts the job, waits for its first IO and a settle, runs and times the command, and ends the job, keeping its
figures up to then (``bg:iops``, ``bg:clat_p99_us``, ...: the job's pooled figures under the role name ``bg``). The
job is spawned and waited for by a thread of its own, alive for as long as fio is (the death signal follows the
spawning thread), so a killed iosched takes it along.
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, NoReturn, TypeVar

from iosched.core.base.errors import IoschedError
from iosched.core.experiment.cmd_metrics import OUTPUT_TAIL, CmdMetric, read_figures
from iosched.core.experiment.control import Cancelled, Control
from iosched.core.load.children import Child
from iosched.core.load.cmd_tree import command_argv, end_tree, invoking_user, user_env
from iosched.core.load.fio import FioHandle, FioProgress, dies_with_us
from iosched.core.load.fio_group import run_fio
from iosched.core.load.fio_result import FIGURES, FioResult
from iosched.core.load.jobs import Job, JobFile
from iosched.core.load.targets import Target
from iosched.core.settings.cmd_cgroup import CmdCgroup, close_cmd_cgroup, open_cmd_cgroup

BACKGROUND = "bg"  # the role name of a command's background job in its metrics
BACKGROUND_RUNTIME_S = 24 * 3600.0  # outlasts any command: the job is ended when the command is
BACKGROUND_START_S = 120.0  # the longest wait for the job's first IO (a scratch file is laid out first)
SETTLE_S = 1.0  # the job's load settles this long after its first IO before the command starts

TAIL_WAIT_S = 0.5  # how long a command's output may give nothing, once its tree is killed, before it is let go
TAIL_MAX_WAIT_S = 10.0  # the longest wait for the rest of it


class _Tail:
    """The last ``OUTPUT_TAIL`` bytes of a pipe, read by a thread of its own: a command that prints gigabytes
    neither blocks on a full pipe nor fills a disk."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self.chunks: collections.deque[bytes] = collections.deque()
        self.size = 0
        self.seen = 0  # bytes read in all: whether the reader still gets somewhere
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, args=(pipe,), name="iosched-cmd-output", daemon=True)
        self.thread.start()

    def _read(self, pipe: IO[bytes]) -> None:
        with pipe:
            while chunk := pipe.read1(1 << 16):  # type: ignore[attr-defined]
                with self._lock:
                    self.chunks.append(chunk)
                    self.size += len(chunk)
                    self.seen += len(chunk)
                    while self.size - len(self.chunks[0]) >= OUTPUT_TAIL:
                        self.size -= len(self.chunks.popleft())

    def text(self) -> str:
        # The command's tree is dead: what is left in the pipe comes, then its end. Only a process that left both
        # the cgroup (or where there is none) and the session could still hold it open: a pipe that gives nothing for
        # TAIL_WAIT_S ends the wait with the output so far. A reader that still gets somewhere (a busy machine) is
        # waited for, up to a bound.
        deadline = time.monotonic() + TAIL_MAX_WAIT_S
        while self.thread.is_alive() and time.monotonic() < deadline:
            before = self.seen
            self.thread.join(timeout=TAIL_WAIT_S)
            if self.seen == before:
                break
        with self._lock:
            return b"".join(self.chunks)[-OUTPUT_TAIL:].decode(errors="replace")


def run_cmd(cmd: str, ctl: Control, check_drift: Callable[[], None], root: str | Path = "/",
            ) -> tuple[dict[str, float], str, str | None]:
    """Run a shell command in its own session (and cgroup, where it can), dying with iosched, timed; CPU from its
    own rusage. Its output (stdout and stderr) never reaches iosched's own (a terminal UI, or JSON on stdout); its
    last MiB is returned with the figures, for --cmd-metric to read, and why the run is invalid (the command
    failed: a non-zero exit or a signal), or None."""
    run_as = invoking_user(os.environ, os.geteuid())  # under sudo, sudo's user (cmd_tree.py: one rule)
    group = open_cmd_cgroup(root)  # None: its process group and session alone end what it starts
    argv = command_argv(cmd, group.procs if group is not None else None, run_as, gated=False)
    t0 = time.monotonic()
    try:
        # Spawned and reaped in this thread: --pdeathsig follows the spawning thread. The signal (TERM) reaches
        # only the outer shell, whose trap kills the command's whole process group (a pipeline, a `sleep; dd`).
        proc = subprocess.Popen(dies_with_us(argv, "TERM"), start_new_session=True, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=user_env(os.environ, run_as))
    except BaseException:
        close_cmd_cgroup(group, root)
        raise
    assert proc.stdout is not None
    tail = _Tail(proc.stdout)
    child = Child(proc)
    ctl.child = child
    try:
        if ctl.cancelled.is_set():  # cancelled while it was being started
            child.signal_group(signal.SIGKILL)
        while not child.exited(timeout=0.5):
            check_drift()
        wall = time.monotonic() - t0
    finally:
        stuck = _ended(child, group, root)
        ctl.child = None
    output = tail.text()
    if ctl.cancelled.is_set():
        raise Cancelled("cancelled")
    ru = child.rusage
    figures = {"wall_s": wall, "cmd_usr_s": ru.ru_utime if ru else 0.0, "cmd_sys_s": ru.ru_stime if ru else 0.0}
    return figures, output, _failed(proc.returncode, output) or stuck


def _ended(child: Child, group: CmdCgroup | None, root: str | Path) -> str | None:
    """The command's whole tree ended (core/load/cmd_tree.py ``end_tree``), then its shell reaped. Why the run is no
    sample when a process it started would not end (it could load the next run), or None."""
    why = end_tree(child, group, root)
    child.wait()
    if why is None or group is None:
        return None
    return f"a process the command started did not end ({why}): `iosched restore` ends it and removes {group.path}"


def _failed(code: int | None, output: str) -> str | None:
    """Why a command that ended with ``code`` is no sample, or None when it succeeded."""
    if code == 0:
        return None
    last = next((line.strip() for line in reversed(output.splitlines()) if line.strip()), "")
    said = f" (its last line: {last[:120]!r})" if last else ""
    if code is None:
        return "the command did not end"
    if code < 0:  # the shell around it was killed
        return f"the command was killed by {_signal_name(-code)}{said}"
    if code > 128 and _signal_name(code - 128, "") != "":  # how a shell reports a child a signal ended
        return f"the command exited with status {code}, as one killed by {_signal_name(code - 128)} does{said}"
    return f"the command exited with status {code}{said}"


def _signal_name(num: int, otherwise: str | None = None) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}" if otherwise is None else otherwise


def run_cmd_reading(cmd: str, ctl: Control, check_drift: Callable[[], None], reads: Sequence[CmdMetric],
                    root: str | Path = "/") -> tuple[dict[str, float], str | None]:
    """``run_cmd`` with the figures ``reads`` names taken from its output; and why the run is invalid (the command
    failed, or a figure is missing), or None."""
    figures, output, failed = run_cmd(cmd, ctl, check_drift, root)
    values, why = read_figures(list(reads), output, ctl.cancelled)
    figures.update(values)
    return figures, failed or why


def background_job(job: Job | JobFile) -> tuple[Job | JobFile, float]:
    """``job`` as a background: time based, long enough to outlast the command; and the runtime fio gets."""
    return (job.scaled(runtime=BACKGROUND_RUNTIME_S) if isinstance(job, Job) else job), BACKGROUND_RUNTIME_S


def background_metrics(result: FioResult) -> dict[str, float | None]:
    """The background's pooled figures as ``bg:METRIC``."""
    pooled = result.metrics()
    return {f"{BACKGROUND}:{k}": pooled[k] for k in FIGURES}


def run_cmd_under(cmd: str, job: Job | JobFile, target: Target, ctl: Control, check_drift: Callable[[], None],
                  on_progress: Callable[[FioProgress], object], root: str | Path = "/",
                  reads: Sequence[CmdMetric] = (),
                  ) -> tuple[dict[str, float | None], FioResult, str | None]:
    """Time ``cmd`` while ``job`` loads ``target``: the command's figures with the job's (``bg:…``), the job's
    result, and why the run is invalid (the job ended before the command did, or a figure ``reads`` names is
    missing from the command's output), or None."""
    (got, missing), result, ended_early = beside(
        job, target, ctl, on_progress, root, lambda: run_cmd_reading(cmd, ctl, check_drift, reads, root),
        "the command")
    figures: dict[str, float | None] = dict(got)
    figures.update(background_metrics(result))
    return figures, result, "the background job ended before the command did" if ended_early else missing


T = TypeVar("T")


def beside(job: Job | JobFile, target: Target, ctl: Control, on_progress: Callable[[FioProgress], object],
           root: str | Path, foreground: Callable[[], T], what: str) -> tuple[T, FioResult, bool]:
    """Run ``foreground()`` (``what``: "the command", "the start-up") while ``job`` loads ``target``: the job started
    first, its first IO and a settle awaited, ended once the foreground returns, its figures up to then kept. What the
    foreground returned, the job's result, and whether the job ended before the foreground did."""
    bg_job, runtime = background_job(job)
    out: dict[str, FioResult | BaseException] = {}
    first_io, ending = threading.Event(), threading.Event()

    def progress(p: FioProgress) -> None:
        if p.iops > 0:
            first_io.set()
        on_progress(p)

    def hold(h: FioHandle) -> None:
        ctl.fio = h
        if ctl.cancelled.is_set() or ending.is_set():  # ended while it was being started
            h.stop()

    def background() -> None:
        try:
            out["result"] = run_fio(bg_job, target, runtime, progress, hold, root)
        except BaseException as e:
            out["error"] = e

    worker = threading.Thread(target=background, name="iosched-background", daemon=True)
    worker.start()
    try:
        _await_io(first_io, worker, ctl)
        if ctl.cancelled.wait(SETTLE_S):
            raise Cancelled("cancelled")
        if not worker.is_alive():
            _raise_from(out, f"the background job ended before {what} started")
        got = foreground()
        ended_early = not worker.is_alive()
    finally:
        ending.set()
        handle = ctl.fio
        if handle is not None:
            handle.finish()
        while worker.is_alive():
            worker.join(0.2)
        ctl.fio = None
    result = out.get("result")
    if not isinstance(result, FioResult):
        _raise_from(out, "the background job gave no result")
    return got, result, ended_early


def _await_io(first_io: threading.Event, worker: threading.Thread, ctl: Control) -> None:
    """Until the background reports IO; Cancelled on a cancel, an error when it ends or stays idle."""
    deadline = time.monotonic() + BACKGROUND_START_S
    while not first_io.is_set() and worker.is_alive():
        if ctl.cancelled.wait(0.1):
            raise Cancelled("cancelled")
        if time.monotonic() > deadline:
            raise IoschedError(f"the background job did no IO within {BACKGROUND_START_S:.0f} s")


def _raise_from(out: dict[str, FioResult | BaseException], otherwise: str) -> NoReturn:
    error = out.get("error")
    if isinstance(error, BaseException):
        raise error
    raise IoschedError(otherwise)
