"""Workloads as data: the canned fio job catalog, and user job files (checked in core/load/jobfile.py).

A catalog job is one fio job described by a few fields; runtime and size scale from the command line. A
contention job has roles: two or more job sections that run at once (an interactive reader beside a write flood),
each judged on its own figures (``fg:clat_p99_us``); fio reads it as a job file written from the same checked
options as a user's (core/load/jobfile.py), never from flags.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from iosched.core.base.errors import BadInput
from iosched.core.load.jobfile import JobFile, fio_seconds, parse_job_file, read_job_file

__all__ = ["CATALOG", "Job", "JobFile", "catalog_job", "load_job", "parse_job_file"]

KiB, MiB, GiB = 1024, 1024**2, 1024**3

Section = tuple[str, tuple[tuple[str, str], ...]]  # a role: its name and its fio options

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
    roles: tuple[Section, ...] = ()  # a contention job's sections; then rw, bs, numjobs and iodepth say nothing
    # The metric its verdict is about when none is named, its natural figure (None: IOPS): MB/s for a sequential
    # bandwidth job (as hdparm and CrystalDiskMark's SEQ1M say it), a contention job's own.
    primary: str | None = None
    tradeoff: str | None = None  # the secondary metric that pays for the primary (the writer's MB/s)
    shows: str = ""  # one line: what it shows, and which scheduler it is about
    # Each role in a cgroup of its own at this bfq weight (iosched makes them): then each role is a fio process
    # of its own (core/load/fio_group.py), since the threads of one process share its cgroup.
    cgroup_weights: tuple[tuple[str, int], ...] = ()

    @property
    def writes(self) -> bool:
        if self.roles:
            return any(dict(opts).get("rw", "read") in WRITE_MODES for _name, opts in self.roles)
        return self.rw in WRITE_MODES

    @property
    def role_names(self) -> list[str]:
        return [name for name, _opts in self.roles]

    @property
    def space(self) -> int:
        """Bytes a scratch file target needs: a cgroup job's roles each read a file of their own."""
        return self.size * max(len(self.cgroup_weights), 1)

    def role_alone(self, role: str) -> Job:
        """One role of a contention job as a job of its own (a cgroup job runs one fio per role)."""
        return replace(self, roles=tuple(r for r in self.roles if r[0] == role), cgroup_weights=())

    def as_job_file(self) -> JobFile:
        """A contention job as the job file fio reads, checked by the job-file allow-list like a user's."""
        lines = ["[global]", f"size={self.size}", "time_based=1", f"runtime={fio_seconds(self.runtime)}",
                 f"direct={1 if self.direct else 0}", f"ioengine={self.ioengine}"]
        for name, opts in self.roles:
            lines += [f"[{name}]", *(f"{k}={v}" for k, v in opts)]
            delay = dict(opts).get("startdelay")
            if delay is not None:  # a late role ends with the others: alone at the end it would measure nothing
                lines.append(f"runtime={fio_seconds(max(self.runtime - float(delay), 0.5))}")
        return parse_job_file("\n".join(lines) + "\n", self.name)

    def scaled(self, runtime: float | None = None, size: int | None = None) -> Job:
        return replace(self, runtime=runtime if runtime is not None else self.runtime,
                       size=size if size is not None else self.size)

    def fio_options(self) -> list[tuple[str, str]]:
        """Job options in fio's own names (the target and output options are added by the runner); a contention
        job's are those of its [global] section."""
        if self.roles:
            return [("ioengine", self.ioengine), ("direct", "1" if self.direct else "0"), ("size", str(self.size)),
                    ("time_based", "1"), ("runtime", fio_seconds(self.runtime)), ("group_reporting", "1")]
        opts = [("rw", self.rw), ("bs", self.bs), ("numjobs", str(self.numjobs)),
                ("iodepth", str(self.iodepth)), ("ioengine", self.ioengine), ("direct", "1" if self.direct else "0"),
                ("size", str(self.size)), ("time_based", "1"), ("runtime", fio_seconds(self.runtime)),
                ("group_reporting", "1")]
        opts += sorted(self.extra.items())
        return opts

    def to_json(self) -> dict[str, Any]:
        out = {"name": self.name, "group": self.group, "description": self.description, "writes": self.writes,
               "options": dict(self.fio_options())}
        if self.roles:
            out["roles"] = {name: dict(opts) for name, opts in self.roles}
            out["primary"] = self.primary
            out["tradeoff"] = self.tradeoff
        if self.cgroup_weights:
            out["cgroup_weights"] = dict(self.cgroup_weights)
        return out


BANDWIDTH = "mb_s"  # a sequential bandwidth job's natural figure


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
                            rw, "1M", numjobs=nj, iodepth=qd, size=size, runtime=30.0, primary=BANDWIDTH))
    for rw in ("randread", "read", "randwrite", "write"):
        for bs in ("1k", "4k", "16k", "64k", "128k", "256k"):
            jobs.append(Job(f"sweep-{rw}-{bs}", "request-size sweep", f"{bs} {mode_words[rw]}, iodepth 16",
                            rw, bs, iodepth=16, size=1 * GiB))
    jobs.append(Job("seqread-buffered", "sequential-read check", "1 MiB sequential read through the page cache "
                    "(what hdparm -t measures)", "read", "1M", direct=False, ioengine="psync", primary=BANDWIDTH))
    jobs.append(Job("seqread-direct", "sequential-read check", "1 MiB sequential read, O_DIRECT (hdparm --direct)",
                    "read", "1M", ioengine="psync", primary=BANDWIDTH))
    presets = [("seq1m-q8t1", "1M", 8, ("read", "write")), ("seq1m-q1t1", "1M", 1, ("read", "write")),
               ("rnd4k-q32t1", "4k", 32, ("randread", "randwrite")), ("rnd4k-q1t1", "4k", 1, ("randread", "randwrite"))]
    for stem, bs, qd, modes in presets:
        for rw in modes:
            kind = "read" if "read" in rw else "write"
            jobs.append(Job(f"{stem}-{kind}", "desktop presets",
                            f"{stem.upper().replace('-', ' ')} {kind}: {bs} {mode_words[rw]}, "
                            f"queue depth {qd}, 1 thread",
                            rw, bs, iodepth=qd, size=1 * GiB, runtime=5.0,
                            primary=BANDWIDTH if stem.startswith("seq") else None))
    jobs.append(Job("randread-q16t2", "scheduler overhead", "4 KiB random read, 2 jobs x iodepth 16: "
                    "CPU-bound on fast devices, so scheduler cost shows", "randread", "4k", numjobs=2, iodepth=16,
                    size=1 * GiB, runtime=5.0))
    jobs += _contention()
    jobs += _startup_backgrounds()
    return {j.name: j for j in jobs}


def _role(name: str, **options: object) -> Section:
    return name, tuple((k, str(v)) for k, v in options.items())


def _contention() -> list[Job]:
    """Jobs where IO competes: what schedulers exist for (a single stream shows only what they cost)."""
    group = "contention"
    reader = {"rw": "randread", "bs": "4k", "iodepth": 1}
    return [
        Job("interactive-under-writes", group, "fg: bursts of 50 4k random reads, 2.5 s apart; bg: 2 x 1M sequential "
            "writes, depth 16", "randread", "4k", runtime=10.0,
            # The reader is an interactive program: it reads a few files, then the user thinks. It arrives after
            # the flood has started and ends with it. bfq raises the weight of a queue that wakes after two
            # seconds idle, so every burst is served as a newcomer's: its median fell from 7.7 ms to 0.04 ms here
            # while the writers kept their throughput (a reader that never idles keeps the raise a few seconds
            # only). It reads the first quarter, which the writers have covered by then: a read of a hole in a
            # sparse backing file never reaches a disk, and would show no scheduler at all.
            roles=(_role("fg", **reader, thinktime=2_500_000, thinktime_blocks=50, startdelay=1, size="25%"),
                   _role("bg", rw="write", bs="1M", numjobs=2, iodepth=16)),
            primary="fg:clat_p50_us", tradeoff="bg:mb_s",
            shows="an interactive reader's latency under a write flood (bfq's heuristics)"),
        Job("reads-vs-writeback", group, "fg: 4k random reads, depth 1; bg: 1M buffered sequential writes "
            "(writeback)", "randread", "4k", runtime=10.0,
            roles=(_role("fg", **reader),
                   _role("bg", rw="write", bs="1M", direct=0, ioengine="psync", end_fsync=1)),
            primary="fg:clat_p99_us", tradeoff="bg:mb_s",
            shows="reads starved by writeback (mq-deadline's read_expire bounds the wait)"),
        Job("latency-target", group, "fg: 4k random reads, depth 1; bg: 2 x 4k random writes, depth 16",
            "randread", "4k", runtime=10.0,
            roles=(_role("fg", **reader), _role("bg", rw="randwrite", bs="4k", numjobs=2, iodepth=16)),
            primary="fg:clat_p99_us", tradeoff="bg:iops",
            shows="reads against a latency target (kyber's read_lat_nsec) under writes"),
        Job("fair-share", group, "r1-r4: four identical 4k random readers, depth 8", "randread", "4k",
            runtime=10.0, roles=tuple(_role(f"r{i}", rw="randread", bs="4k", iodepth=8) for i in range(1, 5)),
            primary="fairness_jain", tradeoff="iops",
            shows="how evenly equal processes share the device (Jain's index: 1 is equal)"),
        Job("io-priority", group, "be0: 4k random reads, best-effort level 0; idle: the same, idle class",
            "randread", "4k", runtime=10.0,
            roles=(_role("be0", rw="randread", bs="4k", iodepth=8, prioclass=2, prio=0),
                   _role("idle", rw="randread", bs="4k", iodepth=8, prioclass=3)),
            primary="be0:share", tradeoff="iops",
            shows="IO priorities (ionice): bfq and mq-deadline serve the idle class last"),
        Job("cgroup-weights", group, "w100, w500: 4k random readers, depth 16, in cgroups of bfq weight 100 and 500",
            "randread", "4k", runtime=10.0,
            roles=tuple(_role(name, rw="randread", bs="4k", iodepth=16) for name in ("w100", "w500")),
            cgroup_weights=(("w100", 100), ("w500", 500)), primary="w500:share", tradeoff="iops",
            shows="cgroup weights: bfq serves the weight-500 cgroup more than the weight-100 one (5/6 of the IOs at "
                  "best); the others share evenly"),
    ]


STARTUP_GROUP = "start-up backgrounds"


def _apart(n: int) -> dict[str, str]:
    """fio's clones of one job each from their own share of the target (a percentage: any device's size)."""
    return {"offset_increment": f"{100 // n}%"} if n > 1 else {}


def _startup_backgrounds() -> list[Job]:
    """The loads of Paolo Valente's S suite (comm_startup_lat.sh), each the background of a start-up replayed beside
    it (`compare --startup`): N processes reading at once, one request at a time as a program reading a file does,
    each from its own part of the device; writers that flood it; random readers and writers. Direct IO, so that every
    request reaches the device whatever the page cache holds (the S suite's are buffered, on files)."""
    out = []
    for n in (1, 5, 10):
        out.append(Job(f"seq-readers-{n}", STARTUP_GROUP, f"{n} sequential reader(s), 128 KiB a request, one at a "
                       "time each, each from its own part", "read", "128k", numjobs=n, iodepth=1, ioengine="psync",
                       extra=_apart(n), primary=BANDWIDTH, shows="a start-up's reads queued behind readers that never "
                       "pause"))
    for n in (1, 5):
        out.append(Job(f"seq-writers-{n}", STARTUP_GROUP, f"{n} sequential writer(s), 1 MiB requests, 8 in flight "
                       "each: a write flood", "write", "1M", numjobs=n, iodepth=8,
                       extra=_apart(n), primary=BANDWIDTH, shows="a start-up's reads queued behind a write flood"))
    out.append(Job("rand-readers-5", STARTUP_GROUP, "5 random readers, 4 KiB, one at a time each", "randread", "4k",
                   numjobs=5, iodepth=1, ioengine="psync", shows="a start-up's reads among random readers"))
    out.append(Job("rand-writers-5", STARTUP_GROUP, "5 random writers, 4 KiB, 4 in flight each", "randwrite", "4k",
                   numjobs=5, iodepth=4, shows="a start-up's reads among random writers"))
    return out


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
    # The backgrounds of a start-up (`compare --startup FILE --jobs GROUP`): each job runs beside the start-up's
    # replay, and the start-up alone comes first; without --startup the group is refused.
    startup: bool = False


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
        JobGroup("contention", "competing IO: what schedulers are for (each job judged on its own metric)",
                 tuple(by_group["contention"])),
        JobGroup("startup-under-load", "the S suite's start-up table: a start-up (--startup) alone, then beside "
                 "1, 5, 10 sequential readers, 1 and 5 writers, 5 random readers, 5 random writers; judged on its "
                 "start-up time", tuple(by_group[STARTUP_GROUP]), drop_caches=True, startup=True),
    ]
    for rw in ("randread", "read", "randwrite", "write"):
        groups.append(JobGroup(f"size-sweep-{rw}", f"1K to 256K requests, {rw}",
                               tuple(n for n in by_group["request-size sweep"] if n.startswith(f"sweep-{rw}-")),
                               sweep=True))
    return {g.name: g for g in groups}


GROUPS: dict[str, JobGroup] = _groups()


def resolve_jobs(spec: str, startup: bool = False) -> tuple[list[Job | JobFile], JobGroup | None]:
    """"4k-matrix" / "4k-read,seqread-direct,my.fio" -> the jobs in order (each once), and the group if one.

    A group lends its run conditions (repeats, dropped caches) when it is the whole list. A start-up's group
    (``startup-under-load``) is its backgrounds: refused unless they are for a start-up (``startup``).
    """
    parts = [p.strip() for p in spec.split(",")]
    if not any(parts):
        raise BadInput("--jobs names no job: give a group (`iosched jobs` lists them), job names or job files")
    if not all(parts):
        raise BadInput(f"--jobs has an empty item in {spec!r}")
    jobs: list[Job | JobFile] = []
    for part in parts:
        if part in GROUPS:
            if GROUPS[part].startup and not startup:
                raise BadInput(f"{part} is the loads a start-up is replayed beside: give --startup FILE (a capture, "
                               "or bundled) too")
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

    A catalog job covers its size (a cgroup job's roles each their own); a job file its largest offset + size
    (up to 64 TiB), or ``default`` when it gives no absolute size.
    """
    return max((j.space if isinstance(j, Job) else j.max_extent() or default for j in jobs), default=default)
