"""`iosched capture`: a device's requests recorded through the project's own block tracer, into a capture
(core/load/iolog.py: fio's iolog version 3 and its metadata).

The CO-RE loader's capture mode (bpf/blktrace.c ``--capture``) writes one line per request as it is issued; this
module reads them, orders them by when each request began and writes the iolog, then the metadata. It ends at
its duration, at its size bound, on ``stop()`` or on Ctrl-C; in every case what was captured is written whole
(the loader drains its ring buffer first), so a capture cut short is still a capture. The loader runs in its
own session under `setpriv --pdeathsig KILL`, spawned by the thread that reads it, so it dies with iosched.

Cost: the tracer's programs per request (about a microsecond) plus this reader's line (a few microseconds of
Python); both are measured (``cpu_us_per_io``) and said. Records the ring buffer had no room for while the reader
lagged are counted (``lost``), never silently missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import IO, Any

from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.base.outfile import WriteRefused, check_target, create_new, discard, same_file
from iosched.core.kernel.device_doc import DeviceDoc
from iosched.core.kernel.devices import read_device
from iosched.core.kernel.sysfs import check_device_name
from iosched.core.load.children import Child
from iosched.core.load.fio import dies_with_us
from iosched.core.load.iolog import CaptureDoc, CaptureWriter, Ended, meta_path, write_meta
from iosched.core.trace.parse import kernel_dev
from iosched.core.trace.program import ProgramUnavailable, check_program
from iosched.core.trace.tracer import TracingUnavailable, check_privileges

STATUS_MS = 250  # the loader's status interval: how soon a duration or a stop is seen
ENDING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class CaptureFailed(IoschedError):
    """The tracer could not capture (the sentence says why); what was captured before is kept."""


@dataclass(frozen=True)
class CaptureProgress:
    elapsed_s: float
    requests: int
    bytes: int
    lost: int


@dataclass(frozen=True)
class CaptureResult:
    meta: CaptureDoc
    iolog: Path
    meta_file: Path
    cpu_us_per_io: float | None  # the tracer's and the reader's CPU, per request captured
    late: int  # requests that began more than the reorder window before one already written


def check_output(path: Path) -> None:
    """Refuse to overwrite: a capture never replaces a file the user has. The early look: the iolog is made new
    and its metadata written as a new file, each looked at again then (core/base/outfile.py)."""
    for p in (path, meta_path(path)):
        if p.exists() or p.is_symlink():
            raise BadInput(f"{p} exists: capture writes a new file (choose another name or remove it)")
    if not path.parent.is_dir():
        raise BadInput(f"{path.parent} is not a directory")
    try:
        check_target(path, replace=False)
    except OSError as e:
        raise BadInput(f"cannot write in {path.parent}: {e.strerror or e}") from None


class CaptureRun:
    """One capture. ``run()`` blocks in the calling thread (which owns the tracer); ``stop()`` from any thread.

    A kind of capture (core/trace/cmd_capture.py) changes the loader's arguments (``run``), what starts when the
    loader is ready (``_ready``), what each status looks at (``_look``) and what is written at the end
    (``_finish``)."""

    status_ms = STATUS_MS

    def __init__(self, device: str, out: Path, duration: float | None, max_bytes: int, root: str | Path = "/",
                 on_progress: Callable[[CaptureProgress], object] | None = None) -> None:
        self.device = device
        self.out = Path(out)
        self.duration = duration
        self.max_bytes = max_bytes
        self.root = root
        self.on_progress = on_progress
        self._stop = threading.Event()
        self._why: Ended = "stopped"
        self._child: Child | None = None
        self._iolog: os.stat_result | None = None  # the iolog this capture made (its identity)
        self._device: DeviceDoc | None = None
        self._cpu0 = resource.getrusage(resource.RUSAGE_SELF)  # iosched's CPU when the capture's cost began
        self._meta_written = False
        # A Ctrl-C or signal that ended the capture: the files are written whole first, then the caller may
        # raise it again (a SIGTERM still ends iosched with its status).
        self.interrupted: BaseException | None = None

    def stop(self, why: Ended = "stopped") -> None:
        if not self._stop.is_set():
            self._why = why
            self._stop.set()
        if self._child is not None:
            self._child.signal_group(signal.SIGTERM)  # the loader drains its ring buffer and ends

    def check(self) -> tuple[Path, DeviceDoc, int]:
        """Everything refused before anything starts: the device, root and the tracer, the output file."""
        check_device_name(self.device, self.root)
        dev = read_device(self.device, self.root)
        if dev is None:
            raise BadInput(f"{self.device} is not a whole-disk block device")
        loader = ready_tracer(self.root)
        check_output(self.out)
        major, minor = (int(x) for x in dev.maj_min.split(":"))
        return loader, dev, kernel_dev(major, minor)

    def run(self) -> CaptureResult:
        loader, device, devt = self.check()
        self._device = device
        return self._run([str(loader), "--capture", str(devt)])

    def _run(self, loader_argv: list[str]) -> CaptureResult:
        argv = dies_with_us([*loader_argv, "--interval-ms", str(self.status_ms)])
        started = datetime.now(UTC).isoformat(timespec="seconds")
        self._cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        try:
            fd = create_new(self.out)  # never a name that exists: a link planted there since the check is refused
        except OSError as e:
            raise CaptureFailed(f"cannot create {self.out}: {e.strerror or e}") from None
        self._iolog = os.fstat(fd)
        try:
            return self._capture(fd, argv, started)
        except BaseException:
            # A failed capture, or a second Ctrl-C: no iolog without its metadata is left behind (and only ours
            # is removed: whatever another put at the name stays).
            if not self._meta_written:
                discard(self.out, self._iolog)
            raise

    def _capture(self, fd: int, argv: list[str], started: str) -> CaptureResult:
        with os.fdopen(fd, "w", buffering=1 << 20) as out:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True)
            self._child = Child(proc)
            if self._stop.is_set():
                self.stop(self._why)
            errors: list[bytes] = []
            err = threading.Thread(target=lambda: errors.extend(proc.stderr or []), daemon=True)
            err.start()
            try:
                state = self._read(proc, out)
            finally:
                self._child.signal_group(signal.SIGTERM)
                if self._child.wait(5) is None:
                    self._child.signal_group(signal.SIGKILL)
                    self._child.wait()
                err.join(timeout=2)
            writer, t_end, lost, full, io_start = state
            if writer is None:
                if self.interrupted is not None:
                    raise self.interrupted
                tail = b"".join(errors[-3:]).decode(errors="replace").strip()
                raise CaptureFailed(f"the CO-RE tracer did not start its capture{': ' + tail if tail else ''}")
            meta = self._finish(writer, out, started, t_end, lost, full, io_start)
        if self._iolog is None or not same_file(self.out, self._iolog):
            raise WriteRefused(f"{self.out} was moved or replaced while the capture ran: its metadata was not "
                               "written beside another file")
        meta_file = write_meta(meta, self.out)
        self._meta_written = True
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
        child_cpu = self._child.rusage if self._child is not None else None
        cpu0 = self._cpu0
        used = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
        if child_cpu is not None:
            used += child_cpu.ru_utime + child_cpu.ru_stime
        per_io = used / meta.requests * 1e6 if meta.requests else None
        return CaptureResult(meta, self.out, meta_file, per_io, writer.late)

    def _ready(self, out: IO[str], t: int) -> CaptureWriter:
        """The loader is ready (at ``t``, its clock): the writer its records go to."""
        return CaptureWriter(out, f"/dev/{self.device}", t, limit=self.max_bytes)

    def _finish(self, writer: CaptureWriter, out: IO[str], started: str, t_end: int, lost: int, full: int,
                io_start: bool) -> CaptureDoc:
        """The loader has ended: the rest of the iolog written, and its metadata."""
        end_us = writer.finish(t_end)
        return writer.meta(iolog=self.out.name, device=self._device, kernel=os.uname().release, started=started,
                           duration_s=end_us / 1e6, ended=self._why, timestamps="begin" if io_start else "issue",
                           lost=lost, untracked=full)

    def _read(self, proc: subprocess.Popen[bytes], out: IO[str]) -> tuple[CaptureWriter | None, int, int, int, bool]:
        assert proc.stdout is not None
        stdout = proc.stdout
        writer: CaptureWriter | None = None
        t_end = lost = full = 0
        io_start = False
        began = 0.0
        interrupted: BaseException | None = None
        rest = b""

        def ended(e: BaseException) -> None:
            nonlocal interrupted
            if interrupted is not None:
                raise e  # a second one: out at once
            interrupted = e
            # The loader drains its buffer and ends; what it wrote is read to the end.
            self.stop("interrupted" if isinstance(e, KeyboardInterrupt) else "stopped")

        with _signals_end_reading(ended, lambda: writer is not None):  # once ready (a command's capture: started)
            while True:
                try:
                    while chunk := stdout.read1(1 << 16):  # type: ignore[attr-defined]
                        *lines, rest = (rest + chunk).split(b"\n")
                        records: list[bytes] = []
                        for line in lines:
                            if line[:1] != b"{":
                                records.append(line)
                                continue
                            if writer is not None:
                                writer.add_lines(records)
                                records = []
                            status = json.loads(line)
                            t_end = int(status.get("t", t_end))
                            if status.get("ready"):
                                io_start, began = bool(status.get("io_start")), time.monotonic()
                                writer = self._ready(out, t_end)
                                continue
                            lost, full = int(status.get("lost", lost)), int(status.get("full", full))
                            if writer is not None:
                                writer.flush(now_ns=t_end)
                                self._look(writer, time.monotonic() - began, lost)
                        if writer is not None:
                            writer.add_lines(records)
                    self.interrupted = interrupted
                    return writer, t_end, lost, full, io_start
                except (KeyboardInterrupt, SystemExit) as e:  # Ctrl-C, or SIGTERM/SIGHUP (raised as SystemExit)
                    ended(e)
                except (ValueError, TypeError, AttributeError) as e:
                    with contextlib.suppress(Exception):
                        proc.kill()
                    raise CaptureFailed(f"the CO-RE tracer wrote a line iosched cannot read ({e})") from None

    def _look(self, writer: CaptureWriter, elapsed: float, lost: int) -> None:
        """At each status: progress, and the duration or size bound reached."""
        if self.on_progress is not None:
            self.on_progress(CaptureProgress(elapsed, writer.requests + len(writer.pending),
                                             writer.op_bytes[0] + writer.op_bytes[1], lost))
        if self.duration is not None and elapsed >= self.duration:
            self.stop("duration")
        elif writer.full or writer.size() >= self.max_bytes:
            self.stop("max-size")


def ready_tracer(root: str | Path) -> Path:
    """The CO-RE tracer's loader, its privileges checked: a capture's and a command's capture's first step;
    CaptureFailed, one sentence, where it cannot run."""
    try:
        check_privileges(root)
        return check_program(root)
    except (TracingUnavailable, ProgramUnavailable) as e:
        raise CaptureFailed(f"cannot capture: {e} (capture needs the CO-RE tracer; bpftrace cannot)") from None


@contextlib.contextmanager
def _signals_end_reading(ended: Callable[[BaseException], None], reading: Callable[[], bool]) -> Iterator[None]:
    """While records are read (``reading()``), Ctrl-C, SIGTERM or SIGHUP ends the capture through ``ended``, given
    the exception its handler raises, instead of raising it wherever the reader is: midway through a batch of records
    a raise would drop the batch, and a capture that lags its loader would come out short. Before that the handler
    raises as it would. Signal handlers are the main thread's alone: elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kept: dict[int, Callable[[int, FrameType | None], Any]] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        if not reading():
            kept[signum](signum, frame)
            return
        try:
            kept[signum](signum, frame)
        except (KeyboardInterrupt, SystemExit) as e:
            ended(e)

    try:
        for sig in ENDING_SIGNALS:
            old = signal.getsignal(sig)
            if callable(old):
                kept[sig] = old
                signal.signal(sig, handler)
        yield
    finally:
        for signum, was in kept.items():
            signal.signal(signum, was)
