"""Workloads as data: the canned fio job catalog, and user job files (checked in core/load/jobfile.py).

A catalog job is one fio job described by a few fields; runtime and size scale from the command line.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from iosched.core.base.errors import BadInput
from iosched.core.load.jobfile import JobFile, fio_seconds, parse_job_file, read_job_file

__all__ = ["CATALOG", "Job", "JobFile", "catalog_job", "load_job", "parse_job_file"]

KiB, MiB, GiB = 1024, 1024**2, 1024**3

WRITE_MODES = frozenset({"write", "randwrite", "rw", "readwrite", "randrw", "trim", "randtrim", "trimwrite"})


@dataclass(frozen=True)
class Job:
    name: str
    group: str
    description: str
    rw: str
    bs: str
    numjobs: int = 1
    iodepth: int = 1
    size: int = 1 * GiB  # bytes each job covers (the scratch file size; capped by a raw device's size)
    runtime: float = 10.0  # seconds, time based
    direct: bool = True
    ioengine: str = "libaio"
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def writes(self) -> bool:
        return self.rw in WRITE_MODES

    def scaled(self, runtime: float | None = None, size: int | None = None) -> Job:
        return replace(self, runtime=runtime if runtime is not None else self.runtime,
                       size=size if size is not None else self.size)

    def fio_options(self) -> list[tuple[str, str]]:
        """Job options in fio's own names (the target and output options are added by the runner)."""
        opts = [("rw", self.rw), ("bs", self.bs), ("numjobs", str(self.numjobs)),
                ("iodepth", str(self.iodepth)), ("ioengine", self.ioengine), ("direct", "1" if self.direct else "0"),
                ("size", str(self.size)), ("time_based", "1"), ("runtime", fio_seconds(self.runtime)),
                ("group_reporting", "1")]
        opts += sorted(self.extra.items())
        return opts

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "group": self.group, "description": self.description, "writes": self.writes,
                "options": dict(self.fio_options())}


def _catalog() -> dict[str, Job]:
    jobs: list[Job] = []
    mode_words = {"read": "sequential read", "write": "sequential write", "randread": "random read",
                  "randwrite": "random write", "rw": "mixed sequential read/write"}
    for rw, words in mode_words.items():
        jobs.append(Job(f"4k-{rw}", "4k matrix", f"4 KiB {words}, 8 jobs x iodepth 4 (libaio)",
                        rw, "4k", numjobs=8, iodepth=4, size=512 * MiB))
    # The 1M write patterns: (size, numjobs, iodepth), sequential and random.
    patterns = [(32 * GiB, 1, 1), (8 * GiB, 4, 1), (8 * GiB, 1, 4), (8 * GiB, 4, 4)]
    for i, (size, nj, qd) in enumerate(patterns, 1):
        for rw, words in (("write", "sequential"), ("randwrite", "random")):
            short = "seq" if rw == "write" else "rand"
            jobs.append(Job(f"1m-{short}-{i}", "1M write patterns",
                            f"1 MiB {words} writes, pattern {i}: {nj} job(s) x iodepth {qd}, {size // GiB} GiB",
                            rw, "1M", numjobs=nj, iodepth=qd, size=size, runtime=30.0))
    for rw in ("randread", "read", "randwrite", "write"):
        for bs in ("1k", "4k", "16k", "64k", "128k", "256k"):
            jobs.append(Job(f"sweep-{rw}-{bs}", "request-size sweep", f"{bs} {mode_words[rw]}, iodepth 16",
                            rw, bs, iodepth=16, size=1 * GiB))
    jobs.append(Job("seqread-buffered", "sequential-read check", "1 MiB sequential read through the page cache "
                    "(what hdparm -t measures)", "read", "1M", direct=False, ioengine="psync"))
    jobs.append(Job("seqread-direct", "sequential-read check", "1 MiB sequential read, O_DIRECT (hdparm --direct)",
                    "read", "1M", ioengine="psync"))
    presets = [("seq1m-q8t1", "1M", 8, ("read", "write")), ("seq1m-q1t1", "1M", 1, ("read", "write")),
               ("rnd4k-q32t1", "4k", 32, ("randread", "randwrite")), ("rnd4k-q1t1", "4k", 1, ("randread", "randwrite"))]
    for stem, bs, qd, modes in presets:
        for rw in modes:
            kind = "read" if "read" in rw else "write"
            jobs.append(Job(f"{stem}-{kind}", "desktop presets",
                            f"{stem.upper().replace('-', ' ')} {kind}: {bs} {mode_words[rw]}, "
                            f"queue depth {qd}, 1 thread",
                            rw, bs, iodepth=qd, size=1 * GiB, runtime=5.0))
    jobs.append(Job("randread-q16t2", "scheduler overhead", "4 KiB random read, 2 jobs x iodepth 16: "
                    "CPU-bound on fast devices, so scheduler cost shows", "randread", "4k", numjobs=2, iodepth=16,
                    size=1 * GiB, runtime=5.0))
    return {j.name: j for j in jobs}


CATALOG: dict[str, Job] = _catalog()


def catalog_job(name: str) -> Job:
    try:
        return CATALOG[name]
    except KeyError:
        near = [n for n in CATALOG if name.lower() in n][:5]
        hint = f"; did you mean {', '.join(near)}?" if near else "; `iosched jobs` lists them"
        raise BadInput(f"no job named {name!r}{hint}") from None


# --- groups: the published studies, each a section of the catalog -------------------------------------------


@dataclass(frozen=True)
class JobGroup:
    """A named set of jobs run as one matrix, with the run conditions of the study it comes from."""

    name: str
    description: str
    jobs: tuple[str, ...]
    repeat: int = 3
    drop_caches: bool = False
    sweep: bool = False  # the jobs differ only in request size: drawn against it


def _groups() -> dict[str, JobGroup]:
    by_group: dict[str, list[str]] = {}
    for j in CATALOG.values():
        by_group.setdefault(j.group, []).append(j.name)
    groups = [
        JobGroup("4k-matrix", "4 KiB read, write, randread, randwrite and rw, 8 jobs x iodepth 4",
                 tuple(by_group["4k matrix"])),
        JobGroup("1m-patterns", "1 MiB write patterns 1-4, sequential and random, caches dropped before each run",
                 tuple(by_group["1M write patterns"]), drop_caches=True),
        JobGroup("size-sweep", "1K to 256K requests x random/sequential read/write",
                 tuple(by_group["request-size sweep"]), sweep=True),
        JobGroup("seq-read", "sequential read, buffered and direct (what hdparm -t and --direct measure)",
                 tuple(by_group["sequential-read check"]), drop_caches=True),
        JobGroup("desktop", "SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1, RND4K Q1T1, read and write",
                 tuple(by_group["desktop presets"])),
    ]
    for rw in ("randread", "read", "randwrite", "write"):
        groups.append(JobGroup(f"size-sweep-{rw}", f"1K to 256K requests, {rw}",
                               tuple(n for n in by_group["request-size sweep"] if n.startswith(f"sweep-{rw}-")),
                               sweep=True))
    return {g.name: g for g in groups}


GROUPS: dict[str, JobGroup] = _groups()


def resolve_jobs(spec: str) -> tuple[list[Job | JobFile], JobGroup | None]:
    """"4k-matrix" / "4k-read,seqread-direct,my.fio" -> the jobs in order (each once), and the group if one.

    A group lends its run conditions (repeats, dropped caches) when it is the whole list.
    """
    parts = [p.strip() for p in spec.split(",")]
    if not any(parts):
        raise BadInput("--jobs names no job: give a group (`iosched jobs` lists them), job names or job files")
    if not all(parts):
        raise BadInput(f"--jobs has an empty item in {spec!r}")
    jobs: list[Job | JobFile] = []
    for part in parts:
        if part in GROUPS:
            jobs += [CATALOG[n] for n in GROUPS[part].jobs]
        elif part in CATALOG or "/" in part or part.endswith((".fio", ".ini")):
            jobs.append(load_job(part))
        else:
            near = [n for n in [*GROUPS, *CATALOG] if part.lower() in n][:5]
            hint = f"; did you mean {', '.join(near)}?" if near else "; `iosched jobs` lists groups and jobs"
            raise BadInput(f"no job or group named {part!r}{hint}")
    names = [j.name for j in jobs]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise BadInput(f"--jobs names {dup} twice")
    group = GROUPS[parts[0]] if len(parts) == 1 and parts[0] in GROUPS else None
    return jobs, group


# --- user job files ---------------------------------------------------------------------------------------


def load_job(spec: str) -> Job | JobFile:
    """A catalog name, or a path to a fio job file (anything with a slash or ending in .fio/.ini)."""
    if "/" in spec or spec.endswith((".fio", ".ini")):
        return read_job_file(spec)
    return catalog_job(spec)


def space_needed(jobs: list[Job | JobFile], default: int = GiB) -> int:
    """Bytes a scratch file must be able to grow to for every job in ``jobs`` (the free-space check's size).

    A catalog job covers its size; a job file its largest offset + size (up to 64 TiB), or ``default`` when
    it gives no absolute size.
    """
    return max((j.size if isinstance(j, Job) else j.max_extent() or default for j in jobs), default=default)
