"""What each of `advise`'s tests runs, from its planned workload and pace (core/advice/plan.py): a catalog job as it
is, a plain job as the foreground (fg) beside the catalog's write flood (bg), a capture replayed fast, at its
timing, or at its timing beside the flood, a command timed alone or under the flood (`compare --cmd --background`).

The flood is the catalog's interactive-under-writes' bg role (2 x 1 MiB sequential writes, depth 16): the same
flood whatever the foreground, so the foreground's figures say what a scheduler does for it under writes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from iosched.core.advice.plan import PlannedTest
from iosched.core.load.fiopath import fio_filename
from iosched.core.load.jobfile import fio_seconds
from iosched.core.load.jobs import CATALOG, Job, JobFile
from iosched.core.load.replay import ReplayJob, prepare_replay
from iosched.core.load.replay_lag import ReplayLag
from iosched.core.load.replay_latency import JUDGED

FLOOD: tuple[tuple[str, str], ...] = dict(CATALOG["interactive-under-writes"].roles)["bg"]
FG_METRIC = "fg:clat_p99_us"
# A replay's foreground is judged on its requests' p99 in the block layer, not fio's (core/load/replay_latency.py).
REPLAY_FG_METRIC = f"fg:{JUDGED}"


def flood_job(runtime: float) -> Job:
    """The write flood as a job of its own (a command's background)."""
    opts = dict(FLOOD)
    return Job("write-flood", "advise", "2 x 1M sequential writes, depth 16", opts["rw"], opts["bs"],
               numjobs=int(opts["numjobs"]), iodepth=int(opts["iodepth"]), runtime=runtime)


def under_flood(job: Job) -> Job:
    """A plain job as the foreground (fg) beside the write flood (bg), judged on the foreground's p99 latency."""
    fg = (("rw", job.rw), ("bs", job.bs), ("numjobs", str(job.numjobs)), ("iodepth", str(job.iodepth)),
          *sorted(job.extra.items()))
    return replace(job, name=f"{job.name}+flood", description=f"fg: {job.description}; bg: 2 x 1M sequential writes, "
                   "depth 16", roles=(("fg", fg), ("bg", FLOOD)), primary=FG_METRIC, tradeoff="bg:mb_s", extra={})


@dataclass(frozen=True)
class ReplayUnderFlood(ReplayJob):
    """A capture replayed at its timing as the foreground (fg, its role's figures as fg:…) beside the write flood
    (bg), on the raw device. Its timing is not held to the capture's: under a flood a request issued late is what
    the flood does to it, so neither the lag bound nor the request count makes a run invalid here. Its latency is
    its own requests' in the block layer (``fg:total_p99_us``: its reads, the flood writing only)."""

    flood_s: float = 10.0

    @property
    def name(self) -> str:
        return f"replay of {Path(self.path).name} beside a write flood"

    @property
    def writes(self) -> bool:
        return True

    @property
    def role_names(self) -> list[str]:
        return ["fg", "bg"]

    @property
    def primary(self) -> str:
        return REPLAY_FG_METRIC

    @property
    def role(self) -> str | None:
        return "fg"

    def lag(self, ran_s: float, issued: int) -> ReplayLag | None:
        return None

    def short_of(self, total_ios: int) -> str | None:
        return None

    def render(self, runtime: float | None, filename: str | None = None) -> str:
        flood = runtime if runtime is not None else self.flood_s
        out = ["[global]", "group_reporting=1", "", "[fg]", "new_group=1",
               *(f"{k}={v}" for k, v in self.sections[0][1])]
        if runtime is not None:
            out.append(f"runtime={fio_seconds(runtime)}")
        if self.iolog:
            out += [f"read_iolog={self.iolog}", "read_iolog_chunked=1"]
            if filename is not None:
                out.append(f"replay_redirect={fio_filename(filename)}")
        out += ["", "[bg]", "new_group=1", *(f"{k}={v}" for k, v in FLOOD), "ioengine=libaio", "direct=1",
                "time_based=1", f"runtime={fio_seconds(flood)}"]
        if filename is not None:
            out.append(f"filename={fio_filename(filename)}")
        return "\n".join(out) + "\n"

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "name": self.name}


@dataclass(frozen=True)
class Load:
    """What one test runs: a job (a replay's prepared in ``prepare``), or a command with its background."""

    job: Job | JobFile | None = None
    cmd: str | None = None
    background: Job | None = None
    replay: tuple[str, str, bool] | None = None  # (capture, fast|timed, beside the flood), prepared before it runs

    @property
    def writes(self) -> bool:
        if self.replay is not None:
            return self.replay[2] or (isinstance(self.job, ReplayJob) and self.job.writes)
        if self.cmd is not None:
            return self.background is not None
        return self.job is not None and self.job.writes

    @property
    def raw_only(self) -> bool:
        """A replay runs on the raw device: its offsets are the device's."""
        return self.replay is not None


def load_of(test: PlannedTest) -> Load:
    """What ``test`` runs, before any capture is copied (``prepare``)."""
    src = test.source
    if src.kind == "cmd":
        return Load(cmd=src.ref, background=flood_job(3600.0) if test.pace == "foreground" else None)
    if src.kind in ("capture", "replay"):
        mode = "fast" if test.pace == "full" else "timed"
        return Load(replay=(src.ref, mode, test.pace == "foreground"))
    assert src.job is not None
    job = src.job
    if test.pace == "foreground" and not job.roles:
        job = under_flood(job)
    return Load(job=job)


def prepare(load: Load, device: str, size_bytes: int, run_s: float) -> Load:
    """The load with its capture checked and copied for fio (BadInput before anything runs); ``release`` it."""
    if load.replay is None or isinstance(load.job, ReplayJob):
        return load
    path, mode, flood = load.replay
    job = prepare_replay(path, mode, device, size_bytes)
    if flood:
        job = ReplayUnderFlood(job.path, job.sections, job.capture, job.mode, job.iolog, job.workdir, job.fitted,
                               job.start_us, flood_s=run_s)
    return replace(load, job=job)


def release(load: Load) -> None:
    if isinstance(load.job, ReplayJob):
        load.job.release()
