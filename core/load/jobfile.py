"""User fio job files: parsed into sections and options, checked against an allow-list, written back by us.

fio accepts far more than a workload: options that run commands (exec_prerun), include other files (in two
spellings), switch the device's scheduler (ioscheduler), write logs anywhere (write_*_log) and expand
environment variables (${X}). So only options that describe the workload are accepted, each value checked
for its type and rewritten in a canonical form; fio reads the file iosched writes, never the user's text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iosched.core.base.errors import BadInput
from iosched.core.load.fiopath import fio_filename

WRITE_MODES = frozenset({"write", "randwrite", "rw", "readwrite", "randrw"})
READ_MODES = frozenset({"read", "randread"})
ENGINES = frozenset({"libaio", "io_uring", "psync", "sync", "pvsync", "pvsync2", "posixaio", "vsync"})
MAX_BYTES = 1 << 20  # a job file is a few lines; anything larger is not one
MAX_JOBS = 64
MAX_THREADS = 256
_TiB = 1 << 40


class JobFileError(BadInput):
    """A job file iosched will not hand to fio; the message names the file, the line and the option."""


def fio_seconds(s: float) -> str:
    # fio takes plain integers as seconds; keep sub-second runtimes exact in milliseconds.
    return str(int(s)) if float(s).is_integer() else f"{round(s * 1000)}ms"


# --- typed values: each returns the canonical text written to fio, or raises ValueError(why) ------------------

_SIZE = re.compile(r"(\d{1,15})([kmgtp]?)(?:i?b)?", re.I)
_SIZE_MULT = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def _bytes(text: str, lo: int, hi: int) -> int:
    m = _SIZE.fullmatch(text)
    if not m:
        raise ValueError("expected a size such as 4k, 512M or 1G")
    n = int(m.group(1)) * _SIZE_MULT[m.group(2).lower()]
    if not lo <= n <= hi:
        raise ValueError(f"expected a size between {lo} and {hi} bytes")
    return n


def _size_or_percent(text: str) -> str:
    if text.endswith("%"):
        return f"{_int_in(0, 100)(text[:-1])}%"
    return str(_bytes(text, 0, 64 * _TiB))


def _block_sizes(text: str) -> str:
    # bs=R or bs=R,W or bs=R,W,T (per direction); ranges (4k-64k) and splits (4k/50:...) are refused.
    parts = text.split(",")
    if len(parts) > 3 or not all(parts):
        raise ValueError("expected one block size, or up to three separated by commas (read,write,trim)")
    return ",".join(str(_bytes(p, 1, 256 << 20)) for p in parts)


def _int_in(lo: int, hi: int) -> Callable[[str], str]:
    def check(text: str) -> str:
        if not re.fullmatch(r"\d{1,12}", text) or not lo <= int(text) <= hi:
            raise ValueError(f"expected a whole number from {lo} to {hi}")
        return str(int(text))
    return check


_TIME = re.compile(r"(\d{1,9})(ms|s|m|h)?", re.I)
_TIME_MULT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def _seconds_of(text: str) -> float:
    m = _TIME.fullmatch(text)
    if not m:
        raise ValueError("expected a duration such as 30, 30s, 1500ms or 2m")
    s = int(m.group(1)) * _TIME_MULT[(m.group(2) or "s").lower()]
    if s > 7 * 86400:
        raise ValueError("expected a duration of at most 7 days")
    return s


def _duration(text: str) -> str:
    return fio_seconds(_seconds_of(text))


def _bool(text: str) -> str:
    t = text.lower()
    if t in ("1", "true", "yes", "on"):
        return "1"
    if t in ("0", "false", "no", "off"):
        return "0"
    raise ValueError("expected 0 or 1")


def _rw(text: str) -> str:
    mode, _, step = text.lower().partition(":")
    if mode not in WRITE_MODES | READ_MODES:
        raise ValueError(f"expected one of {', '.join(sorted(WRITE_MODES | READ_MODES))}")
    return mode if not step else f"{mode}:{_int_in(1, 1 << 20)(step)}"


def _engine(text: str) -> str:
    if text not in ENGINES:
        raise ValueError(f"expected one of {', '.join(sorted(ENGINES))}")
    return text


def _distribution(text: str) -> str:
    kind, _, arg = text.lower().partition(":")
    if kind == "random" and not arg:
        return kind
    if kind in ("zipf", "pareto", "normal", "gauss") and re.fullmatch(r"\d{1,6}(\.\d{1,6})?", arg):
        return f"{kind}:{arg}"
    raise ValueError("expected random, or zipf/pareto/normal/gauss with a number, e.g. zipf:1.2")


def _rate(text: str) -> str:
    return str(_bytes(text, 1, 1 << 40))


# Option -> (name written for fio, value check); a flag given bare means 1 for the boolean ones.
ALLOWED: dict[str, tuple[str, Callable[[str], str]]] = {
    "rw": ("rw", _rw), "readwrite": ("rw", _rw),
    "bs": ("bs", _block_sizes), "blocksize": ("bs", _block_sizes),
    "ioengine": ("ioengine", _engine),
    "iodepth": ("iodepth", _int_in(1, 4096)),
    "numjobs": ("numjobs", _int_in(1, MAX_JOBS)),
    "size": ("size", _size_or_percent),
    "io_size": ("io_size", _size_or_percent),
    "offset": ("offset", _size_or_percent),
    # Each numjobs clone starts this much further on: readers each from their own part of the target.
    "offset_increment": ("offset_increment", _size_or_percent),
    "runtime": ("runtime", _duration),
    "ramp_time": ("ramp_time", _duration),
    "startdelay": ("startdelay", _duration),
    "time_based": ("time_based", _bool),
    "direct": ("direct", _bool),
    "buffered": ("buffered", _bool),
    "rwmixread": ("rwmixread", _int_in(0, 100)),
    "rwmixwrite": ("rwmixwrite", _int_in(0, 100)),
    "percentage_random": ("percentage_random", _int_in(0, 100)),
    "norandommap": ("norandommap", _bool),
    "randrepeat": ("randrepeat", _bool),
    "random_distribution": ("random_distribution", _distribution),
    "fsync": ("fsync", _int_in(0, 1_000_000)),
    "fdatasync": ("fdatasync", _int_in(0, 1_000_000)),
    "end_fsync": ("end_fsync", _bool),
    "group_reporting": ("group_reporting", _bool),
    "thread": ("thread", _bool),
    "loops": ("loops", _int_in(1, 1_000_000)),
    "stonewall": ("stonewall", _bool),
    "wait_for_previous": ("stonewall", _bool),
    "new_group": ("new_group", _bool),
    "rate": ("rate", _rate),
    "rate_iops": ("rate_iops", _int_in(1, 100_000_000)),
    # Pauses between bursts (µs after every thinktime_blocks IOs): an interactive program's rhythm.
    "thinktime": ("thinktime", _int_in(0, 3_600_000_000)),
    "thinktime_blocks": ("thinktime_blocks", _int_in(1, 1_000_000)),
    # IO priority (ionice): 1 real-time, 2 best-effort, 3 idle; level 0 (highest) to 7 within a class.
    "prioclass": ("prioclass", _int_in(1, 3)),
    "prio": ("prio", _int_in(0, 7)),
    "zero_buffers": ("zero_buffers", _bool),
    "refill_buffers": ("refill_buffers", _bool),
    "invalidate": ("invalidate", _bool),
}
_BOOLS = frozenset(k for k, (_, check) in ALLOWED.items() if check is _bool)

# Why the best-known dangerous options are refused; anything else not allowed gets the generic reason.
_WHY = {
    "include": "includes another file",
    "exec_prerun": "runs a shell command", "exec_postrun": "runs a shell command",
    "ioscheduler": "switches the device's scheduler behind iosched's back (use iosched's variants)",
    "filename": "picks its own target (iosched sets the target)", "directory": "picks its own target",
    "filename_format": "picks its own target", "opendir": "picks its own target", "nrfiles": "picks its own target",
    "unlink": "deletes the target", "ioengine_lib": "loads external code",
    "cgroup": "moves fio between cgroups", "allow_mounted_write": "disables fio's guard against writing to "
    "a mounted device",
}
for _log in ("write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log", "write_iolog", "per_job_logs",
             "log_avg_msec"):
    _WHY[_log] = "writes a file at a path of its own"
for _log in ("read_iolog", "iolog", "replay_redirect"):
    _WHY[_log] = "replays IO against paths named in a log"

_SECTION = re.compile(r"\[([A-Za-z0-9_.+-]{1,64})\]")
_OPTION = re.compile(r"([A-Za-z0-9_]{1,64})\s*(?:=\s*(.*))?")

Options = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class JobFile:
    """A checked job file: its sections in order, each with canonical (option, value) pairs."""

    path: str
    sections: tuple[tuple[str, Options], ...]

    @property
    def name(self) -> str:
        return Path(self.path).name

    def _jobs(self) -> list[dict[str, str]]:
        """Each job section's options with the [global] options before it applied (fio's own rule)."""
        glob: dict[str, str] = {}
        jobs = []
        for section, opts in self.sections:
            if section == "global":
                glob.update(opts)
            else:
                jobs.append({**glob, **dict(opts)})
        return jobs

    @property
    def writes(self) -> bool:
        return any(j.get("rw", "read").split(":")[0] in WRITE_MODES for j in self._jobs())

    @property
    def role_names(self) -> list[str]:
        """The roles of a workload of two or more job sections (their names, each once); none for one."""
        names = list(dict.fromkeys(s for s, _ in self.sections if s != "global"))
        return names if len(names) > 1 else []

    @property
    def runtime(self) -> float | None:
        """Seconds each job runs when every job is time based with a runtime (fio must run that long)."""
        times = []
        for j in self._jobs():
            if j.get("time_based") != "1" or "runtime" not in j:
                return None
            times.append(_seconds_of(j["runtime"]))
        return max(times) if times else None

    def expected_s(self, runtime: float | None) -> float | None:
        """Seconds fio must run for the run to count as finished: the runtime asked, else the file's own."""
        return runtime if runtime is not None else self.runtime

    def max_extent(self) -> int | None:
        """Bytes the target file must hold: the largest offset + size over the jobs (io_size when no size).

        iosched names one file for every job (``filename`` in [global]), so numjobs clones and jobs share it
        and it grows to the largest extent, not to their sum. Percentages are of the file itself and add
        nothing; None when no job gives an absolute size.
        """
        best: int | None = None
        for j in self._jobs():
            size = j.get("size") or j.get("io_size")
            if size is None or size.endswith("%"):
                continue
            off, inc = j.get("offset", "0"), j.get("offset_increment", "0")
            clones = int(j.get("numjobs", "1")) - 1  # the last clone starts furthest on
            best = max(best or 0, int(size) + (0 if off.endswith("%") else int(off))
                       + (0 if inc.endswith("%") else clones * int(inc)))
        return best

    def render(self, runtime: float | None, filename: str | None = None) -> str:
        """The job file fio reads: our target, group reporting, and the runtime replaced when scaled.

        With roles, each job section starts a reporting group of its own: fio then reports each role apart
        (core/load/fio_result.py), its numjobs clones together."""
        out = ["[global]"]
        if filename is not None:
            out.append(f"filename={fio_filename(filename)}")
        out.append("group_reporting=1")
        roles = bool(self.role_names)
        if runtime is not None:
            out += ["time_based=1", f"runtime={fio_seconds(runtime)}"]
        for section, opts in self.sections:
            if section != "global":
                out += ["", f"[{section}]"]
                if roles and not any(k == "new_group" for k, _ in opts):
                    out.append("new_group=1")
            for key, value in opts:
                if runtime is not None and key in ("runtime", "time_based"):
                    continue
                out.append(f"{key}={value}")
        return "\n".join(out) + "\n"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.path, "writes": self.writes, "text": self.render(None)}


def _refuse(path: str, lineno: int, what: str) -> JobFileError:
    return JobFileError(f"refused {path} line {lineno}: {what}")


def parse_job_file(text: str, path: str = "<job file>") -> JobFile:
    """Parse and check a fio ini job file; JobFileError names the refused line and option."""
    if len(text) > MAX_BYTES:
        raise JobFileError(f"refused {path}: larger than {MAX_BYTES // 1024} KiB, not a job file")
    sections: list[tuple[str, list[tuple[str, str]]]] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        head = re.split(r"[\s=]", line, maxsplit=1)[0].lower()
        if head == "include":
            raise _refuse(path, lineno, "include (in either spelling) is not accepted: put the options in this file")
        if "$" in line or "`" in line:
            raise _refuse(path, lineno, "${VAR}, $(...) and backticks are not accepted: write the value itself")
        if not line.isprintable() or not line.isascii():
            raise _refuse(path, lineno, "control or non-ASCII characters")
        if line.startswith("["):
            m = _SECTION.fullmatch(line)
            if not m:
                raise _refuse(path, lineno, "a section name is letters, digits and _.+- in brackets, e.g. [randread]")
            sections.append((m.group(1), []))
            if sum(1 for s, _ in sections if s != "global") > MAX_JOBS:
                raise _refuse(path, lineno, f"more than {MAX_JOBS} jobs")
            continue
        m = _OPTION.fullmatch(line)
        if not m:
            raise _refuse(path, lineno, "expected [section] or option=value")
        key, value = m.group(1).lower(), (m.group(2) or "").strip()
        if key not in ALLOWED:
            why = _WHY.get(key, "is not an option iosched accepts in job files (see docs/job-files.md)")
            raise _refuse(path, lineno, f"option {key} {why}")
        if not sections:
            raise _refuse(path, lineno, "an option before the first [section]")
        if m.group(2) is None:
            if key not in _BOOLS:
                raise _refuse(path, lineno, f"option {key} needs a value")
            value = "1"
        name, check = ALLOWED[key]
        try:
            canonical = check(value)
        except ValueError as e:
            raise _refuse(path, lineno, f"option {key}={value[:40]!s}: {e}") from None
        sections[-1][1].append((name, canonical))
    if not any(s != "global" for s, _ in sections):
        raise JobFileError(f"{path} defines no job (only [global] or nothing)")
    jf = JobFile(path, tuple((s, tuple(opts)) for s, opts in sections))
    threads = sum(int(j.get("numjobs", "1")) for j in jf._jobs())
    if threads > MAX_THREADS:
        raise JobFileError(f"refused {path}: {threads} fio threads in all (numjobs over the jobs); "
                           f"at most {MAX_THREADS}")
    return jf


def read_job_file(spec: str) -> JobFile:
    """Read a job file with a size bound (a regular file only) and parse it."""
    p = Path(spec)
    try:
        if not p.exists():
            raise BadInput(f"no job file {spec}")
        if not p.is_file():
            raise BadInput(f"job file {spec} is not a regular file")
        with open(p, "rb") as f:
            data = f.read(MAX_BYTES + 1)
        text = data.decode()
    except BadInput:
        raise
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"cannot read job file {spec}: {e.__class__.__name__}") from None
    return parse_job_file(text, spec)
