"""One study, one command: `compare DEV --study FILE` runs fio jobs and commands under the same variants as one matrix.

The published comparisons that time hdparm, gzip and a compile under each scheduler are three experiments with
three reports; a study file lists them once and iosched runs them as the workloads of one matrix (balanced order,
Holm over every cell, one report, `--save`/`--resume`/`--until-verdict` as for any matrix). The file is TOML:

    schedulers = "mq-deadline,bfq"       # optional: --schedulers wins
    repeat = 3                           # optional: --repeat wins

    [[workload]]
    job = "seq-read"                     # anything --jobs takes: a catalog job, a group, job files

    [[workload]]
    name = "gzip"                        # a command: a name of its own, what runs, its figures
    cmd = "gzip -c /mnt/sdb/big > /dev/null"
    cmd_metric = ["rate=([0-9.]+) MB/s:higher"]   # as --cmd-metric; the first is its primary metric

A command is judged on its first figure, else its wall time. Nothing in the file reaches a shell but the `cmd`
lines the user wrote; a saved study is resumed only with the file given again (its commands come from the user,
never from a result file).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from iosched.core.base.errors import BadInput
from iosched.core.base.infile import read_bounded
from iosched.core.base.nesting import toml_nesting
from iosched.core.documents.document import CmdJobSpec
from iosched.core.documents.params import BadValue, brief, parse_repeat
from iosched.core.experiment.cmd_metrics import CmdMetric, parse_cmd_metrics
from iosched.core.load.jobs import Job, JobFile, resolve_jobs

MAX_FILE = 64 << 10
MAX_WORKLOADS = 50
MAX_CMD = 4096
MAX_NESTING = 8  # arrays and inline tables inside each other: a study needs 3 at most
_TOP = {"schedulers", "repeat", "workload"}
_WORKLOAD = {"job", "name", "cmd", "cmd_metric"}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")


@dataclass(frozen=True)
class CmdJob:
    """A command as a matrix workload: timed each run, its figures read from its output."""

    name: str
    cmd: str
    cmd_metrics: tuple[CmdMetric, ...] = ()
    runtime: None = None  # unknown before it runs: the matrix's estimate says so

    @property
    def writes(self) -> bool:  # it writes where its own command says; iosched lays out no scratch file for it
        return False

    @property
    def role_names(self) -> list[str]:
        return []

    @property
    def primary(self) -> str:
        return self.cmd_metrics[0].name if self.cmd_metrics else "wall_s"

    def spec(self) -> CmdJobSpec:
        """What a saved matrix keeps of it (to compare with the study file given again, never to run)."""
        return CmdJobSpec(name=self.name, cmd=self.cmd, cmd_metrics=[m.doc() for m in self.cmd_metrics])


@dataclass(frozen=True)
class Study:
    workloads: list[Job | JobFile | CmdJob]
    schedulers: str | None = None
    repeat: int | None = None
    path: str = field(default="the study file")


def read_study(path: str | Path) -> Study:
    """The study in ``path``, every value checked as its flag would be; BadInput with one sentence otherwise."""
    data = read_bounded(path, MAX_FILE, "study file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{path} is not a study file: it is not UTF-8 text") from None
    return parse_study(text, str(path))


def parse_study(text: str, where: str = "the study file") -> Study:
    deep = f"{where} is not a study file: its arrays or tables nest more than {MAX_NESTING} deep"
    if toml_nesting(text) > MAX_NESTING:  # before tomllib, which recurses into each level
        raise BadInput(deep)
    try:
        top = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise BadInput(f"{where} is not a study file: {e}") from None
    except RecursionError:  # the count above missed a level: refused all the same
        raise BadInput(deep) from None
    _only(top, _TOP, where)
    schedulers = top.get("schedulers")
    if schedulers is not None and (not isinstance(schedulers, str) or not schedulers.strip()):
        raise BadInput(f"{where}: schedulers must be text like \"none,bfq\"")
    repeat = top.get("repeat")
    if repeat is not None:
        if isinstance(repeat, bool) or not isinstance(repeat, int):
            raise BadInput(f"{where}: repeat must be a whole number")
        try:
            parse_repeat(repeat)
        except BadValue as e:
            raise BadInput(f"{where}: repeat {e}") from None
    items = top.get("workload")
    if not isinstance(items, list) or not items:
        raise BadInput(f"{where} lists no workload: add [[workload]] tables with job = … or cmd = …")
    if len(items) > MAX_WORKLOADS:
        raise BadInput(f"{where} lists {len(items)} workloads; at most {MAX_WORKLOADS}")
    workloads: list[Job | JobFile | CmdJob] = []
    for i, item in enumerate(items, 1):
        workloads += _workload(item, f"{where}, workload {i}")
    names = [w.name for w in workloads]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise BadInput(f"{where} names the workload {brief(dup)!r} twice")
    return Study(workloads, schedulers.strip() if schedulers else None, repeat, where)


def _only(table: object, allowed: set[str], where: str) -> None:
    if not isinstance(table, dict):
        raise BadInput(f"{where} is not a table of keys")
    extra = sorted(set(table) - allowed)
    if extra:
        raise BadInput(f"{where} has a key a study does not take: {brief(extra[0])!r} "
                       f"(it takes {', '.join(sorted(allowed))})")


def _workload(item: object, where: str) -> list[Job | JobFile | CmdJob]:
    _only(item, _WORKLOAD, where)
    assert isinstance(item, dict)
    if ("job" in item) == ("cmd" in item):
        raise BadInput(f"{where} needs exactly one of job = … (fio) or cmd = … (a command)")
    if "job" in item:
        if set(item) != {"job"}:
            raise BadInput(f"{where}: a job takes no name or cmd_metric (a fio job has its own name and metrics)")
        if not isinstance(item["job"], str):
            raise BadInput(f"{where}: job must be text, as --jobs takes it")
        jobs, _group = resolve_jobs(item["job"])
        return list(jobs)
    return [command_workload(item.get("name"), item["cmd"], item.get("cmd_metric", []), where)]


def command_workload(name: object, cmd: object, metrics: object, where: str) -> CmdJob:
    """A command as a study workload, every value checked (a study file's table, or a saved matrix's command
    read back); BadInput naming ``where`` otherwise."""
    if not isinstance(cmd, str) or not cmd.strip() or len(cmd) > MAX_CMD or "\0" in cmd:
        raise BadInput(f"{where}: cmd must be a command line of at most {MAX_CMD} characters")
    if not isinstance(name, str) or not name:
        raise BadInput(f"{where}: a command needs a name (name = \"gzip\"), used in the table and the verdict")
    if not _NAME.fullmatch(name):
        raise BadInput(f"{where}: the name {brief(name)!r} is not a name: a letter or digit, then up to 39 letters, "
                       "digits, '.', '_' or '-'")
    if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
        raise BadInput(f"{where}: cmd_metric must be a list of NAME=REGEX[:higher|lower] texts")
    return CmdJob(name, cmd, tuple(parse_cmd_metrics(metrics)))
