"""Workloads as data: the canned fio job catalog, user job files (validated), and the fio argument list.

A catalog job is one fio job described by a few fields; runtime and size scale from the command line.
User job files are fio ini files checked line by line: options that run commands, load code, include
other files or choose their own target are refused, naming the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from iosched.core.errors import BadInput

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
                ("size", str(self.size)), ("time_based", "1"), ("runtime", _seconds(self.runtime)),
                ("group_reporting", "1")]
        opts += sorted(self.extra.items())
        return opts

    def to_json(self) -> dict:
        return {"name": self.name, "group": self.group, "description": self.description, "writes": self.writes,
                "options": dict(self.fio_options())}


def _seconds(s: float) -> str:
    # fio takes plain integers as seconds; keep sub-second runtimes exact in milliseconds.
    return str(int(s)) if float(s).is_integer() else f"{round(s * 1000)}ms"


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

# Options that run commands, load code, read or write arbitrary paths, or pick their own target.
_OWN_TARGET = "picks its own target (iosched sets the target; remove the line)"
_REFUSED = {
    "exec_prerun": "runs a shell command", "exec_postrun": "runs a shell command",
    "program": "runs a program (exec engine)", "arguments": "passes arguments to a program (exec engine)",
    "ioengine_lib": "loads external code",
    "read_iolog": "replays IO against files named in the log", "replay_redirect": "redirects IO to another device",
    "write_iolog": "writes a file at an arbitrary path", "iolog": "replays IO against files named in the log",
    "filename": _OWN_TARGET, "directory": _OWN_TARGET, "filename_format": _OWN_TARGET, "opendir": _OWN_TARGET,
    "allow_mounted_write": "disables fio's guard against writing to a mounted device",
    "cgroup": "moves fio between cgroups",
}
_REFUSED_ENGINES = ("exec", "external", "cpuio")
_OPTION = re.compile(r"^([A-Za-z0-9_]+)\s*(?:=\s*(.*))?$")


@dataclass(frozen=True)
class JobFile:
    """A validated fio job file: its sections in order, each a list of (option, value or None)."""

    path: str
    sections: list[tuple[str, list[tuple[str, str | None]]]]

    @property
    def name(self) -> str:
        return Path(self.path).name

    @property
    def writes(self) -> bool:
        glob = dict(next((opts for s, opts in self.sections if s == "global"), []))
        for section, opts in self.sections:
            if section == "global":
                continue
            rw = dict(opts).get("rw") or dict(opts).get("readwrite") or glob.get("rw") or glob.get("readwrite")
            if (rw or "read").split(":")[0] in WRITE_MODES:
                return True
            if "verify" in dict(opts) or "do_verify" in dict(opts):
                return True
        return False

    def render(self, runtime: float | None) -> str:
        """The job file as fio will get it: group reporting on, runtime replaced when the user scales it."""
        out: list[str] = []
        has_global = any(s == "global" for s, _ in self.sections)
        sections = self.sections if has_global else [("global", []), *self.sections]
        for section, opts in sections:
            out.append(f"[{section}]")
            for key, value in opts:
                if runtime is not None and key in ("runtime", "time_based"):
                    continue
                out.append(key if value is None else f"{key}={value}")
            if section == "global":
                out.append("group_reporting")
                if runtime is not None:
                    out += ["time_based", f"runtime={_seconds(runtime)}"]
            out.append("")
        return "\n".join(out)

    def to_json(self) -> dict:
        return {"name": self.name, "path": self.path, "writes": self.writes, "text": self.render(None)}


def parse_job_file(text: str, path: str = "<job file>") -> JobFile:
    """Parse and validate a fio ini job file; BadInput names the refused line."""
    sections: list[tuple[str, list[tuple[str, str | None]]]] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        where = f"{path} line {lineno} ({line[:60]})"
        if line.startswith("[") and line.endswith("]"):
            sections.append((line[1:-1].strip(), []))
            continue
        if line.startswith("include ") or line.startswith("$"):
            raise BadInput(f"refused {where}: includes and fio variables are not accepted in job files")
        m = _OPTION.match(line)
        if not m:
            raise BadInput(f"cannot read {where}: expected [section] or option=value")
        key, value = m.group(1).lower(), (m.group(2).strip() if m.group(2) is not None else None)
        why = _REFUSED.get(key)
        if why:
            raise BadInput(f"refused {where}: {key} {why}")
        if key == "ioengine" and value and (value.split(":")[0] in _REFUSED_ENGINES or "/" in value):
            raise BadInput(f"refused {where}: ioengine {value} runs or loads code, or does no block IO")
        if value and ("`" in value or "$(" in value):
            raise BadInput(f"refused {where}: shell substitutions are not accepted")
        if not sections:
            raise BadInput(f"cannot read {where}: an option before the first [section]")
        sections[-1][1].append((key, value))
    if not any(s != "global" for s, _ in sections):
        raise BadInput(f"{path} defines no job (only [global] or nothing)")
    return JobFile(path, sections)


def load_job(spec: str) -> Job | JobFile:
    """A catalog name, or a path to a fio job file (anything with a slash or ending in .fio/.ini)."""
    if "/" in spec or spec.endswith((".fio", ".ini")):
        p = Path(spec)
        try:
            text = p.read_text()
        except FileNotFoundError:
            raise BadInput(f"no job file {spec}") from None
        except (OSError, UnicodeDecodeError) as e:
            raise BadInput(f"cannot read job file {spec}: {e}") from None
        return parse_job_file(text, spec)
    return catalog_job(spec)
