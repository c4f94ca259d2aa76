"""Block-layer tracing: a child on the block tracepoints, read as typed samples each interval.

The child is the project's CO-RE program (core/trace/bpf, see program.py and program_parse.py) where it can
run, else bpftrace with the script below; the rest of this docstring is about the bpftrace fallback.

Only tracepoints are used (kprobes may be compiled out). Per request, keyed by (dev, sector) since the
tracepoints do not expose the request pointer: block_io_start (6.5+; the moment diskstats starts timing a
request, in the submitter's context, so pid and comm are the submitter's), block_rq_insert (into the IO
scheduler), block_rq_issue (to the driver) and block_rq_complete. Time in the scheduler is insert -> issue,
and a request issued without an insert (straight to the driver, as `none` often does) counts 0; device time
is issue -> complete; total is io_start -> complete, which is what await averages.

bpftrace runs as a child in its own session through ``setpriv --pdeathsig KILL``, spawned and waited on by
one reader thread (the death signal follows the spawning thread), so it dies with iosched even on SIGKILL.
The tracepoints need tracefs: when it is not mounted at /sys/kernel/tracing the tracer mounts it there (as
systemd does on most machines).

A request whose completion is never seen (the kernel skips a tracepoint program that fires in an interrupt while
another BPF program runs on that CPU) would stay in the per-request maps for good, and once they hold
MAP_KEYS_MAX entries new requests silently go untimed. So the maps come in two sets that take turns: every
REQUEST_MAPS_RESET_SECONDS the idle set is cleared and the sets switch (see build_script). A request whose
completion arrives more than one period late loses its timing; each sample counts the requests a clear dropped
(``dropped_requests``).

One module because the bpftrace script it writes and the child it runs and reads change together (~420
lines).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import queue
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from iosched.core.base.errors import IoschedError
from iosched.core.load.children import Child
from iosched.core.load.fio import dies_with_us
from iosched.core.trace.parse import (
    TICK,
    FrameBuilder,
    TraceFrame,
    TraceOutputError,
    TraceSample,
    interval_sample,
    kernel_dev,
)
from iosched.core.trace.program import BT_MAX_FILTER, ProgramUnavailable, check_program, loader_argv
from iosched.core.trace.program_parse import PROGRAM, ProgramFrame, Ready, program_sample, programs_cost
from iosched.core.trace.program_parse import parse_line as parse_program_line

INSTALL_HINT = "apt-get install -y bpftrace"
MIN_VERSION = (0, 16)
TRACEPOINTS = ("block_rq_insert", "block_rq_issue", "block_rq_complete")
TRACEFS = "sys/kernel/tracing"
# Requests in flight are held in maps keyed by (dev, sector); room for many devices' queues.
MAP_KEYS_MAX = 65536
# How often the per-request map sets switch and the idle one is cleared (see build_script).
REQUEST_MAPS_RESET_SECONDS = 60.0
# Time between asking userland to clear the idle set and writing into it again (the clear is asynchronous).
CLEAR_GUARD_SECONDS = 2.0
MOUNT_TIMEOUT = 10.0


class TracingUnavailable(IoschedError):
    """Tracing cannot start on this machine (the sentence says why and how to enable it)."""


class TracingFailed(IoschedError):
    """bpftrace started but failed or died."""


def _bpftrace_version(binary: str) -> tuple[int, ...] | None:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"v?(\d+)\.(\d+)(?:\.(\d+))?", out)
    return tuple(int(x) for x in m.groups() if x is not None) if m else None


def tracefs_dir(root: str | Path = "/") -> Path:
    return Path(root, TRACEFS)


def ensure_tracefs(root: str | Path = "/") -> None:
    """Mount tracefs where bpftrace looks for tracepoint formats, when it is missing (root only)."""
    d = tracefs_dir(root)
    if (d / "events").is_dir() or str(root) != "/":
        return
    mount_tracefs(d)


def mount_tracefs(d: Path, timeout: float = MOUNT_TIMEOUT) -> None:
    """``mount -t tracefs`` at ``d``, bounded by ``timeout``; TracingUnavailable (one sentence) when it fails."""
    try:
        r = subprocess.run(["mount", "-t", "tracefs", "tracefs", str(d)], capture_output=True, text=True,
                           timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise TracingUnavailable(f"tracefs is not mounted at {d} and mounting it did not finish within "
                                 f"{timeout:g} s") from None
    except OSError as e:
        raise TracingUnavailable(f"tracefs is not mounted at {d} and mount could not run "
                                 f"({e.strerror or e})") from None
    if r.returncode != 0 and not (d / "events").is_dir():
        raise TracingUnavailable(f"tracefs is not mounted at {d} and mounting it failed "
                                 f"({r.stderr.strip() or 'exit ' + str(r.returncode)})")


def check_privileges(root: str | Path = "/") -> None:
    """What any tracer needs: root, setpriv (to tie it to iosched) and a kernel that allows BPF tracing."""
    if os.geteuid() != 0:
        raise TracingUnavailable("block-layer tracing needs root (run iosched with sudo)")
    if shutil.which("setpriv") is None:
        raise TracingUnavailable("block-layer tracing needs setpriv (util-linux) to tie the tracer to iosched")
    lockdown = Path(root, "sys/kernel/security/lockdown")
    with contextlib.suppress(OSError):
        if "[confidentiality]" in lockdown.read_text():
            raise TracingUnavailable("kernel lockdown (confidentiality) forbids BPF tracing on this machine")


def check_available(root: str | Path = "/") -> str:
    """The bpftrace binary to use, or TracingUnavailable saying why tracing cannot run and how to enable it."""
    binary = shutil.which("bpftrace")
    if binary is None:
        raise TracingUnavailable(f"block-layer tracing needs bpftrace (on Debian: {INSTALL_HINT})")
    check_privileges(root)
    version = _bpftrace_version(binary)
    if version is None or version < MIN_VERSION:
        have = ".".join(map(str, version)) if version else "unknown"
        raise TracingUnavailable(f"bpftrace {have} is too old for block-layer tracing (need "
                                 f"{'.'.join(map(str, MIN_VERSION))} or later)")
    ensure_tracefs(root)
    events = tracefs_dir(root) / "events/block"
    missing = [tp for tp in TRACEPOINTS if not (events / tp).is_dir()]
    if missing:
        raise TracingUnavailable(f"this kernel lacks the block tracepoints {', '.join(missing)}")
    return binary


def why_untraceable(root: str | Path = "/") -> str | None:
    """Why the block layer cannot be traced here, as ``Tracer.start`` would say it, or None when it can: the checks
    alone, nothing started (for a plan that needs the tracer and is refused before anything runs)."""
    try:
        check_privileges(root)
        try:
            check_program(root)
        except ProgramUnavailable as e:
            try:
                check_available(root)
            except TracingUnavailable as fallback:
                return f"{fallback} ({e})"
    except TracingUnavailable as e:
        return str(e)
    return None


def has_io_start(root: str | Path = "/") -> bool:
    return (tracefs_dir(root) / "events/block/block_io_start").is_dir()


def device_numbers(root: str | Path = "/") -> dict[int, str]:
    """Kernel dev_t (as tracepoints print it) -> whole-disk name, for every device in /sys/block."""
    out: dict[int, str] = {}
    base = Path(root, "sys/block")
    with contextlib.suppress(OSError):
        for entry in base.iterdir():
            with contextlib.suppress(OSError, ValueError):
                major, minor = (entry / "dev").read_text().strip().split(":")
                out[kernel_dev(int(major), int(minor))] = entry.name
    return out


def reset_every(interval: float, period: float = REQUEST_MAPS_RESET_SECONDS) -> int:
    """How many intervals pass between two switches of the per-request map sets (two at least: the clear and
    the switch never share a tick)."""
    return max(2, round(period / max(interval, 0.01)))


def _either(cur: str, prev: str) -> Callable[[Callable[[str, str], str]], str]:
    """``body(c, p)`` written once per map set: for set 0 current (set 1 previous) and the other way round."""
    return lambda body: f"if (@epoch) {{ {body(cur, prev)} }} else {{ {body(prev, cur)} }}"


def build_script(interval: float, devs: Sequence[int] | None = None, io_start: bool = True,
                 reset_period: float = REQUEST_MAPS_RESET_SECONDS) -> str:
    """The bpftrace program. ``devs``: kernel dev_t numbers to trace (None: every device).

    The per-request maps come in two sets (suffix 0 and 1): new requests go into the current set (``@epoch``),
    a completion deletes from the current set or, for a request started before the last switch, only reads the
    previous one. So the previous set sees no writes and userland may clear it (bpftrace 0.17 aborts when
    clear() races with a probe's delete): every ``reset_every`` intervals the previous set is cleared, and
    CLEAR_GUARD_SECONDS later, the clear long done, the sets switch. Nothing in flight is lost; what the clear
    removes is stale (completions missed) and counted as @sadd - @sdel - @shit of that set.
    """
    ms = max(round(interval * 1000), 10)
    every = reset_every(interval, reset_period)
    guard = min(every - 1, max(1, round(CLEAR_GUARD_SECONDS / max(interval, 0.01))))
    pred = ""
    if devs is not None:
        pred = " /" + " || ".join(f"args->dev == {int(d)}" for d in sorted(set(devs))) + "/" if devs else " /0/"
    k = "args->dev, args->sector"
    both = _either("1", "0")

    def add(c: str, p: str) -> str:
        return (f"if (!@start{c}[{k}]) {{ @sadd{c}[cpu] = count(); }} @start{c}[{k}] = nsecs; "
                f"@pid{c}[{k}] = pid;")

    # Without block_io_start (kernels before 6.5) a request's life is timed from its insert or issue.
    start = (f"tracepoint:block:block_io_start{pred} {{ {both(add)} @comm[pid, cpu, comm] = count(); }}\n"
             if io_start else "")
    ins_start = "" if io_start else f" {both(add)} @comm[pid, cpu, comm] = count();"
    iss_start = "" if io_start else " " + both(
        lambda c, p: f"if (!@start{c}[{k}] && !@start{p}[{k}]) {{ {add(c, p)} }}")

    def take(name: str, var: str, counted: bool = False) -> str:
        """``var`` = the request's entry in @name (current set: deleted; previous set: read only)."""
        def body(c: str, p: str) -> str:
            gone = f" @sdel{c}[cpu] = count();" if counted else ""
            hit = f" if ({var}) {{ @shit{p}[cpu] = count(); }}" if counted else ""
            return (f"{var} = @{name}{c}[{k}]; if ({var}) {{ delete(@{name}{c}[{k}]);{gone} }} "
                    f"else {{ {var} = @{name}{p}[{k}];{hit} }}")
        return both(body)

    reset = (
        f"  @resetn = @resetn + 1;\n"
        # The previous set's counters say how many of its entries the clear drops (stale requests).
        f"  if (@resetn == {every - guard}) {{ "
        + both(lambda c, p: f"print(@sadd{p}); print(@sdel{p}); print(@shit{p}); clear(@sadd{p}); "
               f"clear(@sdel{p}); clear(@shit{p}); clear(@start{p}); clear(@pid{p}); clear(@ins{p}); "
               f"clear(@iss{p});")
        + " }\n"
        f"  if (@resetn >= {every}) {{ @epoch = @epoch ? 0 : 1; @resetn = 0; }}\n"
    )
    maps = [f"@{m}{i}" for m in ("start", "pid", "ins", "iss", "sadd", "sdel", "shit") for i in (0, 1)]
    return (
        f"BEGIN {{ @epoch = 0; @resetn = 0; printf(\"{TICK} %lld\\n\", nsecs); }}\n"
        + start
        + f"tracepoint:block:block_rq_insert{pred} {{ "
        + both(lambda c, p: f"@ins{c}[{k}] = nsecs;") + f"{ins_start} }}\n"
        # IOs are counted at issue, in process context: the kernel skips a tracepoint program that fires in an
        # interrupt while another BPF program runs on that CPU, which loses some completions under load (they
        # then lack a device time), never an issue.
        f"tracepoint:block:block_rq_issue{pred} {{\n"
        "  @ios[args->dev, cpu, args->rwbs] = count(); @bytes[args->dev, cpu, args->rwbs] = sum(args->bytes);\n"
        f"  $i = (uint64)0; {take('ins', '$i')}\n"
        "  @sched[args->dev, cpu, args->rwbs] = hist($i ? (nsecs - $i) / 1000 : 0);\n"
        f"  {both(lambda c, p: f'@iss{c}[{k}] = nsecs;')}{iss_start}\n"
        "}\n"
        f"tracepoint:block:block_rq_complete{pred} {{\n"
        f"  $s = (uint64)0; {take('iss', '$s')}\n"
        "  if ($s) { @device[args->dev, cpu, args->rwbs] = hist((nsecs - $s) / 1000); }\n"
        f"  $p = (uint64)0; {take('pid', '$p')}\n"
        f"  $t = (uint64)0; {take('start', '$t', counted=True)}\n"
        "  if ($t) {\n"
        "    @total[args->dev, cpu, args->rwbs] = hist((nsecs - $t) / 1000);\n"
        "    @total_ns[args->dev, cpu, args->rwbs] = sum(nsecs - $t);\n"
        "    @pios[args->dev, cpu, $p] = count();\n"
        # A discard's sectors are a range to forget, not data: kept out of the process's bytes.
        "    if (strncmp(args->rwbs, \"D\", 1) != 0) { @pbytes[args->dev, cpu, $p] = sum(args->nr_sector * 512); }\n"
        "    @plat[args->dev, cpu, $p] = hist((nsecs - $t) / 1000);\n"
        "  }\n"
        "}\n"
        f"interval:ms:{ms} {{\n"
        "  print(@ios); print(@bytes); print(@total_ns); print(@sched); print(@device); print(@total);\n"
        "  print(@pios); print(@pbytes); print(@plat); print(@comm);\n"
        "  clear(@pios); clear(@pbytes); clear(@plat); clear(@comm);\n"
        + reset
        + f"  printf(\"{TICK} %lld\\n\", nsecs);\n"
        "}\n"
        # Nothing to print on exit: the last interval was printed already.
        "END { clear(@ios); clear(@bytes); clear(@total_ns); clear(@sched); clear(@device); clear(@total);\n"
        "  clear(@pios); clear(@pbytes); clear(@plat); clear(@comm); clear(@epoch); clear(@resetn);\n"
        f"  {' '.join(f'clear({m});' for m in maps)} }}\n"
    )


@dataclass(frozen=True)
class TracerStopped:
    """The tracer ended: ``reason`` is None when it was asked to stop, else one sentence."""

    reason: str | None


TraceEvent = TraceSample | TracerStopped


def _cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class _BpftraceReader:
    """bpftrace's lines -> samples: the BEGIN tick says it is ready, then each tick closes a frame."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.builder = FrameBuilder()
        self.prev: TraceFrame | None = None

    def feed(self, line: str, cpu_s: float | None) -> tuple[bool, TraceSample | None]:
        frame = self.builder.feed(line)
        self.tracer.bad_lines = self.builder.bad_lines
        if frame is None:
            return False, None
        prev, self.prev = self.prev, frame
        return True, None if prev is None else self.tracer._sample(prev, frame)


class _ProgramReader:
    """The CO-RE loader's lines -> samples: its ready record, then one frame an interval."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.prev: ProgramFrame | None = None
        self.prev_cpu: float | None = None
        self.programs_us: float | None = None  # the programs' µs per IO when the kernel last timed them

    def feed(self, line: str, cpu_s: float | None) -> tuple[bool, TraceSample | None]:
        try:
            rec = parse_program_line(line)
        except TraceOutputError:
            self.tracer.bad_lines += 1
            return False, None
        if isinstance(rec, Ready):
            # Everything counted from here on: the totals start from nothing at the moment of attaching.
            self.tracer.io_start = rec.io_start
            zero = 0 if rec.stats else None
            self.prev = ProgramFrame(rec.ns, {}, (), 0, 0, 0, 0, zero, zero, zero)
            self.prev_cpu = cpu_s
            return True, None
        prev, self.prev = self.prev, rec
        spent = None if cpu_s is None or self.prev_cpu is None else cpu_s - self.prev_cpu
        self.prev_cpu = cpu_s
        if prev is None:
            return True, None
        self.tracer._refresh_names(dev for dev, _ in rec.ops)
        self.programs_us = programs_cost(prev, rec) or self.programs_us
        sample = program_sample(prev, rec, self.tracer._names, spent, self.programs_us)
        only = self.tracer.devices
        if sample is not None and only is not None and len(only) > BT_MAX_FILTER:
            # More devices than the program filters on: it traced all of them.
            sample = dataclasses.replace(sample, devices={n: d for n, d in sample.devices.items() if n in only},
                                         processes=tuple(p for p in sample.processes if p.device in only))
        return True, sample


@dataclass(frozen=True)
class _Plan:
    kind: str  # "libbpf" or "bpftrace"
    argv: Callable[[], list[str]]  # may raise TracingUnavailable (bpftrace's checks run only if it is needed)


class Tracer:
    """An optional data source: ``start()``, then one TraceSample per interval, then one TracerStopped.

    The CO-RE program runs where it can; bpftrace where it cannot (``kind`` says which runs, ``fallback`` why
    the program did not). ``use``: "libbpf" or "bpftrace" to allow only that one.

    Events go to ``on_event`` (called from the reader thread) or, without it, to the ``events`` queue.
    ``devices``: names of whole disks to trace (None: all). Samples carry the tracer's own CPU share.
    """

    def __init__(self, interval: float = 1.0, devices: Sequence[str] | None = None, root: str | Path = "/",
                 on_event: Callable[[TraceEvent], None] | None = None,
                 reset_period: float = REQUEST_MAPS_RESET_SECONDS, use: str | None = None,
                 loader: Path | None = None) -> None:
        if use not in (None, PROGRAM, "bpftrace"):
            raise ValueError(f"unknown tracer {use!r}")
        self.interval = interval
        self.reset_period = reset_period
        self.devices = list(devices) if devices is not None else None
        self.root = root
        self.on_event = on_event
        self.use = use
        self.loader = loader
        self.kind: str | None = None  # the tracer that runs, once it does
        self.fallback: str | None = None  # why the CO-RE program does not run, when bpftrace does
        self.io_start: bool | None = None
        self.events: queue.Queue[TraceEvent] = queue.Queue(maxsize=1000)
        self.proc: subprocess.Popen[str] | None = None
        self._child: Child | None = None
        self.error: str | None = None
        self.bad_lines = 0
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._stderr: list[str] = []
        self._names: dict[int, str] = {}

    # -- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> None:
        """Check the machine (TracingUnavailable), then start the tracer in a reader thread."""
        check_privileges(self.root)
        self._names = device_numbers(self.root)
        devs = None
        if self.devices is not None:
            by_name = {v: k for k, v in self._names.items()}
            unknown = [d for d in self.devices if d not in by_name]
            if unknown:
                raise TracingUnavailable(f"cannot trace {', '.join(unknown)}: no such block device")
            devs = [by_name[d] for d in self.devices]
        plans: list[_Plan] = []
        if self.use in (None, PROGRAM):
            try:
                loader = check_program(self.root, self.loader)
                plans.append(_Plan(PROGRAM, lambda: dies_with_us(loader_argv(loader, self.interval, devs))))
            except ProgramUnavailable as e:
                if self.use == PROGRAM:
                    raise TracingUnavailable(str(e)) from None
                self.fallback = str(e)
        if self.use in (None, "bpftrace"):
            if not plans:  # nothing else can run: say now why this cannot either
                try:
                    check_available(self.root)
                except TracingUnavailable as e:
                    raise TracingUnavailable(f"{e} ({self.fallback})" if self.fallback else str(e)) from None

            def bpftrace_argv() -> list[str]:
                binary = check_available(self.root)
                script = build_script(self.interval, devs, has_io_start(self.root), self.reset_period)
                return dies_with_us([binary, "-B", "line", "-f", "json", "-e", script])
            plans.append(_Plan("bpftrace", bpftrace_argv))
        self._thread = threading.Thread(target=self._run, args=(plans,), name="iosched-tracer", daemon=True)
        self._thread.start()

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Block until the probes are attached; TracingFailed with the tracer's own reason if it ended first."""
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.05):
            if self._thread is None or not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise TracingFailed(self.error or f"the tracer did not start within {timeout:g} s"
                                    f"{self._stderr_tail()}")

    def stop(self) -> None:
        """Kill the tracer (its BPF programs go with its file descriptors) and let the reader thread end."""
        self._stop.set()
        self._kill()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout=5)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stop.is_set()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def description(self) -> str:
        """Which tracer runs, in a few words: "libbpf (CO-RE)" or "bpftrace (REASON)"."""
        if self.kind == PROGRAM:
            return "CO-RE (libbpf)"
        if self.kind == "bpftrace" and self.fallback:
            return f"bpftrace, since {self.fallback}"
        return self.kind or "none"

    def get(self, timeout: float | None = None) -> TraceEvent | None:
        """The next event from the queue (when no ``on_event`` was given); None on timeout."""
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            return None

    # -- the reader thread ------------------------------------------------------------------------------
    def _emit(self, ev: TraceEvent) -> None:
        if self.on_event is not None:
            self.on_event(ev)
            return
        with contextlib.suppress(queue.Full):
            self.events.put_nowait(ev)

    def _kill(self) -> None:
        child = self._child
        if child is not None:
            child.signal_group(signal.SIGKILL)  # only while unreaped: the pgid may be recycled after

    def _stderr_tail(self) -> str:
        lines = [ln for ln in self._stderr if "RLIMIT_MEMLOCK" not in ln and ln.strip()]
        errors = [ln for ln in lines if "ERROR" in ln or "cannot" in ln] or lines
        return (": " + errors[0].strip()[:200]) if errors else ""

    def _read_stderr(self, stream: Iterable[str]) -> None:
        # The first lines and the last: a refused program's verifier log can run to thousands of lines before
        # the loader's own sentence.
        for line in stream:
            if len(self._stderr) >= 50:
                del self._stderr[40]
            self._stderr.append(line)

    def _run(self, plans: list[_Plan]) -> None:
        for i, plan in enumerate(plans):
            last = i == len(plans) - 1
            try:
                argv = plan.argv()
            except TracingUnavailable as e:
                self.error = str(e) if self.fallback is None else f"{self.fallback}; and {e}"
                self._emit(TracerStopped(self.error))
                return
            self.kind = plan.kind
            self._stderr = []
            started = self._follow(plan.kind, argv)
            if started or last or self._stop.is_set():
                self._finish(plan.kind)
                return
            self.fallback = f"the CO-RE tracer did not load{self._stderr_tail() or ' (it ended at once)'}"

    def _follow(self, kind: str, argv: list[str]) -> bool:
        """Run one tracer and turn its lines into samples until it ends; whether it got as far as ready."""
        env = {**os.environ, "BPFTRACE_MAP_KEYS_MAX": str(MAP_KEYS_MAX)}
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True, start_new_session=True, env=env)
            self._child = Child(self.proc)
        except OSError as e:
            self._stderr = [f"cannot: {e.strerror or e}"]
            return False
        err = threading.Thread(target=self._read_stderr, args=(self.proc.stderr,), daemon=True)
        err.start()
        if self._stop.is_set():
            self._kill()
        reader: _BpftraceReader | _ProgramReader = _ProgramReader(self) if kind == PROGRAM else _BpftraceReader(self)
        cpu_prev: tuple[float, float] | None = None
        assert self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                cpu = _cpu_seconds(self.proc.pid)
                ready, sample = reader.feed(line, cpu)
                if not ready:
                    continue
                self._ready.set()  # bpftrace's BEGIN tick, the loader's ready record: every probe is attached
                now = time.monotonic()
                if sample is not None:
                    if cpu is not None and cpu_prev is not None and now > cpu_prev[1]:
                        share = (cpu - cpu_prev[0]) / (now - cpu_prev[1]) * 100
                        sample = dataclasses.replace(sample, tracer_cpu=round(share, 2))
                    self._emit(sample)
                cpu_prev = (cpu, now) if cpu is not None else None
        finally:
            self._kill()
            self._child.wait()
            err.join(timeout=2)
        return self._ready.is_set()

    def _finish(self, kind: str) -> None:
        if self._stop.is_set():
            self._emit(TracerStopped(None))
            return
        name = "the CO-RE tracer" if kind == PROGRAM else "bpftrace"
        rc = self.proc.returncode if self.proc is not None else None
        if rc is None:
            self.error = f"{name} could not start{self._stderr_tail()}; tracing stopped"
        else:
            how = f"was killed by signal {-rc}" if rc < 0 else f"exited with status {rc}"
            self.error = f"{name} {how}{self._stderr_tail()}; tracing stopped"
        self._emit(TracerStopped(self.error))

    def _refresh_names(self, devs: Iterable[int]) -> None:
        if any(d not in self._names for d in devs):
            self._names = device_numbers(self.root)  # a device came (or went) since the last look

    def _sample(self, prev: TraceFrame, frame: TraceFrame) -> TraceSample | None:
        devs = {k for m in frame.maps.values() for k in m} | {k for h in frame.hists.values() for k in h}
        self._refresh_names(int(k.partition(",")[0]) for k in devs if k.partition(",")[0].isdigit())
        return interval_sample(prev, frame, self._names)
