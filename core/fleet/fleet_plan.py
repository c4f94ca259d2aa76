"""A compare on many hosts as a plan of the experiment service (core/experiment/service.py ``run``): one catalog job
on every host, in lockstep (lockstep.py) or each host by itself (`--independent`, fleet.py). The service saves it
after every slot and at the end, goes on from a saved fleet, and judges what finished when it is stopped; the plan
says what differs: its checks, how it runs, and its document, a ``FleetDoc`` made from every host's run, each
host's compare read as one saved there, judged per host and pooled (core/statistics/fleet_verdict.py). A fleet
matrix (fleet_matrix.py) runs one per job, through ``run_job`` here.

What a fleet says while it runs is a ``Note`` with the host it comes from ("fleet" for the controller's line
about each run); its first line is the plan's own.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal, Protocol

from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.base.terminal_text import printable
from iosched.core.documents.document import CompareDoc, FleetDoc, FleetHostDoc
from iosched.core.documents.metrics import METRIC_NAMES, check_roles, is_metric
from iosched.core.documents.params import parse_variants
from iosched.core.documents.saved import read_experiment
from iosched.core.experiment.control import Control
from iosched.core.experiment.events import Event, Note
from iosched.core.experiment.slots import Course, Executor, run_slots
from iosched.core.fleet.fleet import Host, HostRun, OnItsOwn, OnItsOwnCourse, check_host_result
from iosched.core.fleet.lockstep import InLockstep, Lockstep, LockstepCourse, LockstepRuns, job_file_text
from iosched.core.load.jobs import CATALOG
from iosched.core.statistics.fleet_verdict import fleet_pooled

if TYPE_CHECKING:
    from iosched.core.experiment.service import Running, Saver


@dataclass(frozen=True)
class FleetSettings:
    """What every job of a fleet compare runs with, as the command line gave it (a resumed fleet's: as saved)."""

    schedulers: str  # the variants as given, the baseline first ("" : none given, refused by ``check``)
    repeat: int | None = None  # --repeat as given (each independent host's compare is told it)
    until_verdict: bool = False
    max_runs: int = 20  # with until_verdict: the most runs per variant
    runtime: float | None = None
    size: int | None = None
    settle: float = 1.0
    alpha: float = 0.05
    metric: str | None = None  # --metric (None: each job's own primary metric)
    independent: bool = False
    drop_caches: bool | None = None  # independent hosts only (None: each job's own)
    ssh: str = "ssh"  # this machine's ssh client
    iosched: str = "iosched"  # the iosched command on the hosts

    @property
    def runs(self) -> int:
        """Runs per variant and host (with until_verdict: the most)."""
        return self.max_runs if self.until_verdict else (self.repeat or 3)

    @property
    def mode(self) -> Literal["lockstep", "independent"]:
        return "independent" if self.independent else "lockstep"

    @property
    def how(self) -> str:
        """The fleet's mode, in words, for its first line."""
        return ("each by its own iosched over SSH" if self.independent else
                "in lockstep: each variant on every host together, fio's client driving a fio server on each")

    def check(self, jobs: Sequence[str]) -> None:
        """What a fleet compare of ``jobs`` (one, or a group's) cannot take, refused in one sentence before any host
        is reached: a refusal never comes after a host has changed."""
        if not self.schedulers:
            raise BadInput("--schedulers is required (e.g. none,bfq)")
        parse_variants(self.schedulers)  # each host checks them against its device; the words are checked here
        if not jobs or any(j not in CATALOG for j in jobs):
            raise BadInput("--hosts runs catalog jobs (`iosched jobs` lists them): a job file lies on this machine "
                           "only")
        if self.metric is not None:
            if not is_metric(self.metric):
                raise BadInput(f"unknown --metric {self.metric!r}; one of: {', '.join(METRIC_NAMES)}, or ROLE:METRIC")
            check_roles(self.metric, [(j, CATALOG[j].role_names) for j in jobs])
        if self.until_verdict and not 4 <= self.max_runs <= 200:
            raise BadInput(f"--max-runs must be at least 4 and at most 200, not {self.max_runs}")
        if self.independent:
            return
        if self.drop_caches:
            raise BadInput("--drop-caches is for hosts that go at their own pace: add --independent")
        for job in jobs:
            if CATALOG[job].cgroup_weights:
                raise BadInput(f"{job} runs one fio per role, each in its own cgroup, which fio's server cannot: "
                               "add --independent")
            job_file_text(CATALOG[job].scaled(size=self.size), self.runtime, "/dev/sdx")  # what each server runs

    def remote_argv(self, host: Host, job: str) -> list[str]:
        """The compare an independent host's iosched runs, from the checked values only."""
        argv = [self.iosched, "compare", host.device, "--schedulers", self.schedulers, "--job", job,
                "--json", *option_words(("--settle", self.settle), ("--alpha", self.alpha), ("--repeat", self.repeat),
                                        ("--runtime", self.runtime), ("--size", self.size))]
        if self.until_verdict:
            argv += ["--until-verdict", *option_words(("--max-runs", self.max_runs))]
        argv += option_words(("--metric", self.metric or None))
        if self.drop_caches is not None:
            argv.append("--drop-caches" if self.drop_caches else "--no-drop-caches")
        return argv


def option_words(*options: tuple[str, str | float | None]) -> list[str]:
    """A remote command line's words for each (flag, value) given a value (None: left out); a number as ``repr``
    writes it, which reads back as the same number."""
    words: list[str] = []
    for flag, value in options:
        if value is not None:
            words += [flag, value if isinstance(value, str) else repr(value)]
    return words


def check_remote(iosched: str, ssh: str) -> None:
    """The hosts' iosched command (one word, quoted on their command line) and this machine's ssh client."""
    if not iosched or len(iosched) > 1024 or iosched.startswith("-") or not iosched.isprintable():
        raise BadInput("--remote-iosched takes the iosched command on the hosts: a path or a name, printable, not "
                       "an option")
    if shutil.which(ssh) is None:
        raise BadInput(f"{printable(ssh[:60])}: no such command here (the fleet reaches its hosts with OpenSSH's "
                       "client: apt install openssh-client)")


def next_slot(fleet: FleetDoc) -> int | None:
    """The slot a saved fleet goes on from (None: it has ended, every slot run or every host decided). Every slot
    up to the last any host finished is done: a host that missed some (it was lost) joins after them."""
    first = max((r.index + 1 for h in fleet.hosts if h.result is not None for r in h.result.runs), default=0)
    ended = [h.result.status for h in fleet.hosts if h.result is not None]
    if first >= fleet.repeat * len(parse_variants(fleet.schedulers)) or (ended and set(ended) == {"final"}):
        return None
    return first


class HostResults:
    """Each host's run as its entry in the fleet's document. In lockstep, its compare as the controller kept it (its
    runs read back as they came, lockstep.py ``_check_run``); an independent host's, the JSON its iosched wrote,
    read as `report` reads one saved there (core/documents/saved.py), with the variants the fleet asked for. A host
    whose result does not read back fails with why."""

    def __init__(self, schedulers: str) -> None:
        self.schedulers = schedulers
        self.labels = [v.label for v in parse_variants(schedulers)]

    def entry(self, r: HostRun) -> FleetHostDoc:
        status, reason, result = r.status, r.reason, r.doc
        if r.answer is not None:
            try:
                result = self._result(r.host.name, r.answer)
            except IoschedError as e:
                if status != "failed":  # a failed host keeps the reason it failed for
                    status, reason = "failed", f"its result did not read back: {e}"
        return FleetHostDoc(host=r.host.name, device=r.host.device, status=status, reason=reason or None,
                            scheduler_before=r.before, scheduler_after=r.after, put_back=r.put_back, result=result)

    def _result(self, host: str, answer: object) -> CompareDoc:
        """``answer``, the JSON an independent host's iosched wrote for its compare, as its declared type."""
        read = read_experiment(answer, host)
        check_host_result(read)
        labels = [v.label for v in read.variants]
        if labels != self.labels:  # an iosched of another version there, say
            raise IoschedError(f"it compared {','.join(labels)[:200]}, not {self.schedulers}")
        if not isinstance(read, CompareDoc):
            raise IoschedError("it ran a live alternation, not a compare")
        return read


def run_job(settings: FleetSettings, hosts: Sequence[Host], job: str, started: float, resume: FleetDoc | None,
            emit: Callable[[Event], None], keep: Callable[[FleetDoc], None], ctl: Control | None = None,
            hosts_run: HostsRun | None = None,
            held: Callable[[Executor[list[HostRun]]], Executor[list[HostRun]]] | None = None) -> FleetDoc:
    """One catalog job's compare on every host, in lockstep or each by itself, through the one slot loop (core/
    experiment/slots.py); ``resume``: a saved fleet of this job to go on with (lockstep). ``keep`` hears the document
    after every slot; the finished one is returned, not yet pooled. Ctrl-C (any exception) ends every host's session
    and is raised, once ``keep`` has heard what finished. ``hosts_run``: who runs the slots (None: the hosts, over
    SSH; a test or a bench: a simulation, core/fleet/simulated_hosts.py); ``held``: the executor as a caller holds it
    (an advice's budget: a slot that would end past it is not begun, and the slots end there as when done)."""
    results = HostResults(settings.schedulers)

    def document(runs: Sequence[HostRun]) -> FleetDoc:
        return FleetDoc(kind="fleet", mode=settings.mode, started=started, finished=time.time(), job=job,
                        schedulers=settings.schedulers, repeat=settings.runs, until_verdict=settings.until_verdict,
                        runtime_s=settings.runtime, size=settings.size, settle_s=settings.settle,
                        hosts=[results.entry(r) for r in runs])

    def said(host: str, line: str) -> None:
        emit(Note(line, host=host))

    def kept(runs: list[HostRun], save: bool) -> None:
        if save:
            keep(document(runs))

    course: Course[list[HostRun], list[HostRun]]
    executor: LockstepRuns | OnItsOwn
    if settings.independent:
        if hosts_run is not None:
            executor, course = hosts_run.independent(settings, hosts, job, said)
        else:
            on_its_own = OnItsOwn(hosts, lambda h: settings.remote_argv(h, job), said, settings.ssh, settings.iosched)
            executor, course = on_its_own, OnItsOwnCourse()
    else:
        catalog_job = CATALOG[job].scaled(size=settings.size)
        first = (next_slot(resume) or 0) if resume is not None else 0
        saved = {h.host: h.result for h in resume.hosts if h.result is not None} if resume else {}
        plan = Lockstep(parse_variants(settings.schedulers), settings.schedulers, catalog_job, settings.runtime,
                        settings.runs, settings.settle, settings.iosched, settings.ssh, first, saved,
                        settings.until_verdict, settings.alpha, settings.metric or catalog_job.primary or "iops")
        lockstep = hosts_run.lockstep(plan, hosts, said) if hosts_run is not None else InLockstep(hosts, plan, said)
        executor, course = lockstep, LockstepCourse(lockstep)
    runs = run_slots(course, executor if held is None else held(executor), executor.runs, kept, emit, ctl)
    return document(runs)


class HostsRun(Protocol):
    """Who runs a fleet's slots when it is not the hosts themselves: a simulation (core/fleet/simulated_hosts.py)."""

    def lockstep(self, plan: Lockstep, hosts: Sequence[Host], said: Callable[[str, str], None]) -> LockstepRuns: ...

    def independent(self, settings: FleetSettings, hosts: Sequence[Host], job: str, said: Callable[[str, str], None]
                    ) -> tuple[OnItsOwn, Course[list[HostRun], list[HostRun]]]: ...


def finished_runs(fleets: Sequence[FleetDoc]) -> int:
    """Runs the hosts' compares hold, over ``fleets``."""
    return sum(len(h.result.runs) for f in fleets for h in f.hosts if h.result is not None)


@dataclass
class FleetPlan:
    """One job on every host: the service's plan (check, hold, go, judged, finished)."""

    settings: FleetSettings
    hosts: list[Host]
    job: str
    started: float = field(default_factory=time.time)
    resume: FleetDoc | None = None  # a saved fleet in lockstep to go on with, from the slot it stopped at
    hosts_run: HostsRun | None = None  # who runs the slots (None: the hosts; a test: a simulation)

    def check(self) -> None:
        self.settings.check([self.job])
        check_remote(self.settings.iosched, self.settings.ssh)

    def hold(self, saver: Saver[FleetDoc] | None) -> AbstractContextManager[FleetPlan]:
        return contextlib.nullcontext(self)  # no device here: each host holds its own

    def go(self, run: Running[FleetDoc]) -> FleetDoc:
        s = self.settings
        run.emit(Note(f"{self.job} under {s.schedulers} on {len(self.hosts)} hosts, {s.how}"))
        return run_job(s, self.hosts, self.job, self.started, self.resume, run.emit,
                       lambda doc: run.keep(self.judged(doc)), run.ctl, self.hosts_run)

    def judged(self, doc: FleetDoc) -> FleetDoc:
        return replace(doc, pooled=fleet_pooled(doc, self.settings.alpha, self.settings.metric))

    def finished(self, doc: FleetDoc) -> int:
        return finished_runs([doc])
