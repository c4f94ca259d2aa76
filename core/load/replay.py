"""A capture replayed as a workload (`compare DEV --replay FILE`): the job fio runs, and the checked copy of the
capture's iolog it reads.

fio replays iologs itself (``read_iolog``); user job files may not name one (core/load/jobfile.py refuses
``read_iolog`` and ``replay_redirect``), since a log names the paths fio opens. Here iosched checks the whole
capture (core/load/iolog.py) and writes its own copy, every request aimed at the target device, into a working
directory of its own; only that copy reaches fio. Two modes:

- ``fast``: the requests in order, as fast as the device takes them (``replay_no_stall``), at the depth the
  capture mostly had (its 95th percentile): judged on throughput (MB/s).
- ``timed``: each request at its captured time (``replay_time_scale`` 100), at up to the deepest the capture
  went: the same load, so the scheduler shows in the latency (p99). A run that falls behind the capture's timing
  says by how much (``ReplayJob.lag``, core/load/replay_lag.py), and past a bound it is invalid. Its latency is the
  block layer's, traced over every run, not fio's: fio reaps a completion only when its queue fills, so the latency
  it reports is mostly its own waiting (``ReplayJob.below_fio``, core/load/replay_latency.py).
"""

from __future__ import annotations

import math
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from iosched.core.base.errors import BadInput
from iosched.core.base.units import human_size
from iosched.core.load.fiopath import fio_filename
from iosched.core.load.iolog import Capture, copy_for_replay, read_capture
from iosched.core.load.jobfile import JobFile, fio_seconds
from iosched.core.load.replay_lag import METRIC as LAG_METRIC
from iosched.core.load.replay_lag import ReplayLag, requests_lag, span_lag
from iosched.core.load.replay_latency import JUDGED, RunTrace, checked
from iosched.core.load.workdirs import workdir_prefix

Mode = Literal["fast", "timed"]
MODES: tuple[Mode, ...] = ("fast", "timed")
PRIMARY: dict[str, str] = {"fast": "mb_s", "timed": JUDGED}
MAX_DEPTH = 1024
REPLAY_LOG = "replay.iolog"


@dataclass(frozen=True)
class ReplayRequest:
    """A replay asked for (`--replay FILE --replay-mode M`): the experiment service checks and copies the capture
    in its own thread, where a long capture takes its time (core/experiment/service.py)."""

    path: str
    mode: str = "fast"
    fit: bool = False  # fold the offsets into a smaller target (else a capture larger than it is refused)


@dataclass(frozen=True)
class ReplayJob(JobFile):
    """A capture's replay: a job file iosched writes (``render``), reading the checked copy ``iolog``."""

    capture: Capture | None = None
    mode: Mode = "fast"
    iolog: str = ""  # the checked copy, in ``workdir``
    workdir: str = ""
    fitted: bool = False  # its offsets folded into a smaller target (--replay-fit)
    start_us: int = 0  # the copy's first time after 0: where fio's replay clock starts (replay_lag.py)

    @property
    def name(self) -> str:
        return f"replay ({self.mode}) of {Path(self.path).name}"

    def short_of(self, total_ios: int) -> str | None:
        """Why a whole replay that issued ``total_ios`` reads, writes and discards is no sample, or None."""
        assert self.capture is not None
        m = self.capture.meta
        want = m.reads + m.writes + m.discards
        if total_ios < want:
            return f"the replay issued {total_ios} of the capture's {want} requests"
        return None

    def lag(self, ran_s: float, issued: int) -> ReplayLag | None:
        """How far a timed run that issued ``issued`` requests in fio's ``ran_s`` seconds fell behind the capture's
        timing (None for a fast replay, which keeps no timing): by its span when it issued every request, else (cut
        at --runtime) by the capture's time of its last one."""
        if self.mode != "timed" or self.capture is None:
            return None
        m = self.capture.meta
        counted = m.reads + m.writes + m.discards  # what fio counts; the capture's load over time has flushes too
        if issued >= counted:
            return span_lag(ran_s, self.start_us, math.ceil(m.duration_s * 1e6))
        return requests_lag(ran_s, round(issued * m.requests / max(counted, 1)), self.start_us, m.series)

    @property
    def primary(self) -> str:
        return PRIMARY[self.mode]

    @property
    def role(self) -> str | None:
        """The role whose requests are the capture's (None: the whole workload)."""
        return None

    @property
    def traced(self) -> bool:
        """Whether its runs need the block layer traced: a timed replay is judged on its latency there."""
        return self.mode == "timed"

    def below_fio(self, metrics: dict[str, float | None], trace: RunTrace | None) -> dict[str, Any]:
        """What a run of it becomes with its latency the block layer's: its ``metrics`` (fio's latency left out past
        the share rule) and its ``latency`` record (core/load/replay_latency.py); nothing for a fast replay run
        untraced (judged on throughput)."""
        if trace is None and not self.traced:
            return {}
        figures, latency = checked(metrics, trace, self.role)
        return {"metrics": figures, "latency": latency}

    @property
    def writes(self) -> bool:
        return self.capture is not None and self.capture.meta.has_writes

    @property
    def runtime(self) -> float | None:
        return None  # as long as the capture takes to replay, unless --runtime caps it

    def expected_s(self, runtime: float | None) -> float | None:
        return None  # a --runtime caps a replay; one that ends sooner is whole (short_of checks its requests)

    def max_extent(self) -> int | None:
        return self.capture.meta.max_extent if self.capture is not None else None

    def render(self, runtime: float | None, filename: str | None = None) -> str:
        out = ["[global]", "group_reporting=1"]
        if runtime is not None:
            out.append(f"runtime={fio_seconds(runtime)}")  # a cap: the replay ends there or at its end
        for section, opts in self.sections:
            out += ["", f"[{section}]", *(f"{k}={v}" for k, v in opts)]
        if self.iolog:
            out += [f"read_iolog={self.iolog}", "read_iolog_chunked=1"]
            if filename is not None:
                out.append(f"replay_redirect={fio_filename(filename)}")
        return "\n".join(out) + "\n"

    def to_json(self) -> dict[str, Any]:
        text = self.render(None).replace(self.iolog, str(self.capture.iolog) if self.capture else "")
        return {"name": self.name, "path": self.path, "writes": self.writes, "text": text}

    def describe(self) -> dict[str, Any]:
        """What the saved result keeps of it (a ReplayDoc)."""
        assert self.capture is not None
        m = self.capture.meta
        return {"capture": str(self.capture.iolog), "mode": self.mode, "device": m.device.name,
                "scheduler": m.scheduler, "duration_s": m.duration_s, "requests": m.requests,
                "bytes": m.read_bytes + m.write_bytes, "writes": m.has_writes,
                "iodepth": int(dict(self.sections[0][1]).get("iodepth", "1")), "fitted": self.fitted}

    def release(self) -> None:
        """Remove the checked copy (idempotent)."""
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)


def replay_options(capture: Capture, mode: Mode) -> tuple[tuple[str, str], ...]:
    m = capture.meta
    depth = m.depth_max if mode == "timed" else m.depth_p95
    opts = [("ioengine", "libaio"), ("direct", "1"), ("iodepth", str(min(max(depth, 1), MAX_DEPTH)))]
    if mode == "fast":
        opts.append(("replay_no_stall", "1"))
    return tuple(opts)


def check_fits(capture: Capture, device: str, size_bytes: int) -> None:
    """A capture reaching past the target's end is refused, the sizes named (offsets are replayed as captured)."""
    need = capture.meta.max_extent
    if need > size_bytes:
        raise BadInput(f"the capture reaches byte {need} ({need / 2**30:.2f} GiB) but {device} holds "
                       f"{size_bytes} bytes ({size_bytes / 2**30:.2f} GiB): replay it onto a device at least "
                       "as large (offsets are replayed as captured), or pass --replay-fit to fold them into it")


def check_one_disk(capture: Capture) -> None:
    """A replay is of one disk's requests: a capture of several (`capture --cmd … --every-disk`, or one made before a
    command's capture kept to one disk) is refused, with the command that captures one."""
    files = capture.meta.files
    if len(files) < 2:
        return
    disks = ", ".join(f"{f.device.name} {human_size(f.read_bytes + f.write_bytes)}" for f in files)
    c = capture.meta.command
    again = (f"iosched capture {files[0].device.name} --cmd {shlex.quote(c.cmd)}{' --cold' if c.cold else ''} -o FILE"
             if c is not None else f"iosched capture {files[0].device.name} --cmd CMD -o FILE")
    raise BadInput(f"{capture.name} holds the IO of {len(files)} disks ({disks}): a replay is of one "
                   f"disk's requests; capture it on the one its files are on: {again}")


def prepare_replay(path: str | Path, mode: str, device: str, size_bytes: int, fit: bool = False,
                   section: tuple[str, tuple[tuple[str, str], ...]] | None = None) -> ReplayJob:
    """The replay of the capture at ``path`` on ``device``: the capture checked whole and copied for fio; with
    ``fit``, its offsets scaled into a smaller device. ``section``: the job section fio replays it in (its name and
    options), else the mode's (a start-up's foreground is one of its own: core/load/startup_replay.py).

    BadInput (nothing left behind) for a bad capture, a mode that is not fast or timed, or a capture larger than
    the device (unless ``fit``): by its metadata, and by each of its lines, which a metadata file cannot vouch for."""
    if mode not in MODES:
        raise BadInput(f"--replay-mode {mode[:20]!r}: fast or timed")
    capture = read_capture(path)
    check_one_disk(capture)
    if not fit:
        check_fits(capture, device, size_bytes)
    workdir = tempfile.mkdtemp(prefix=workdir_prefix())
    try:
        copy_for_replay(capture, Path(workdir, REPLAY_LOG), f"/dev/{device}", size_bytes if fit else None,
                        size_bytes)
        start_us = first_timed_us(Path(workdir, REPLAY_LOG))
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    return ReplayJob(str(capture.iolog), (section or ("replay", replay_options(capture, mode)),), capture, mode,
                     str(Path(workdir, REPLAY_LOG)), workdir, fit and capture.meta.max_extent > size_bytes, start_us)


def first_timed_us(iolog: Path) -> int:
    """The first time after 0 in a checked iolog (its close line's, if every request is at 0): fio waits no gap from
    time 0, so its replay clock starts there."""
    with open(iolog, "rb") as f:
        f.readline()  # the header
        for line in f:
            t = int(line.split(maxsplit=1)[0])
            if t > 0:
                return t
    return 0


@dataclass(frozen=True)
class Replayed:
    """What a run of a replay adds to fio's own figures: its lag (a timed replay's, also its metric), and why the run
    is no sample (faults, the first said first), empty when it is one."""

    metrics: dict[str, float | None]
    lag: ReplayLag | None
    faults: list[str]


def replay_run(job: ReplayJob, ran_s: float, total_ios: int, runtime: float | None) -> Replayed:
    """A finished run of ``job`` that issued ``total_ios`` requests in fio's ``ran_s`` seconds (``runtime``: the
    --runtime it was cut at, None for a whole replay), judged as a sample of the captured load."""
    faults: list[str] = []
    metrics: dict[str, float | None] = {}
    lag = job.lag(ran_s, total_ios)  # a timed replay's: None for fast
    if lag is not None:
        metrics[LAG_METRIC] = lag.lag_s
        if lag.behind:  # its requests queued in fio, not in the scheduler: another load
            faults.append(lag.reason())
    short = job.short_of(total_ios) if runtime is None else None
    if short is not None:  # a replay cut short measures another load
        faults.insert(0, short)
    return Replayed(metrics, lag, faults)
