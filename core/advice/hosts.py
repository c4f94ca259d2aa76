"""`iosched advise --hosts`: the advice on many hosts, each host's own iosched running the whole advice at its own
pace over SSH (as `compare --hosts --independent` runs its compares: core/fleet/fleet.py ``OnItsOwn``, its bounds on
what a host says and how long), then pooled per device model (model_pool.py).

The plan of the experiment service: checked before any host is reached, one slot (every host's advice at once),
its document a ``FleetAdviceDoc``. Each host's answer is the JSON its `advise --json` wrote (exit 0: decided, 1: it
could not tell), read as `report` reads a saved advice (decision.py ``read_advice``: the whole file checked, then
each test's runs) and decided again from its runs: a host's conclusion is never taken from its words.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from iosched.core.advice.decision import decided_again, read_advice
from iosched.core.advice.model_pool import model_of, pool_models
from iosched.core.advice.request import parse_goals
from iosched.core.base.encode import encode
from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.base.terminal_text import printable
from iosched.core.documents.document import AdviceDoc, AdviceHostDoc, FleetAdviceDoc
from iosched.core.documents.params import parse_candidates
from iosched.core.experiment.events import Note
from iosched.core.experiment.slots import run_slots
from iosched.core.fleet.fleet import Host, HostRun, OnItsOwn, OnItsOwnCourse, check_host_result
from iosched.core.fleet.fleet_plan import check_remote, option_words
from iosched.core.load.jobs import CATALOG

if TYPE_CHECKING:
    from iosched.core.experiment.service import Running, Saver

MAX_CMD = 4096  # a --cmd sent to every host: one line, printable


@dataclass(frozen=True)
class HostsAdvice:
    """What every host's advice runs with, as the command line gave it (each value checked before any host)."""

    goals: str = "all"
    candidates: str | None = None
    budget_s: float | None = None
    runtime: float | None = None
    size: int | None = None
    settle: float | None = None  # None: each host's advise chooses, as for its device
    alpha: float = 0.05
    job: str | None = None  # a catalog job (a job file lies on this machine only)
    cmd: str | None = None  # a command each host times under each candidate (its own iosched runs it)
    ssh: str = "ssh"
    iosched: str = "iosched"

    def check(self) -> None:
        parse_goals(self.goals)
        if self.candidates is not None:
            parse_candidates(self.candidates)
        if self.job is not None and self.job not in CATALOG:
            raise BadInput("--hosts runs catalog jobs (`iosched jobs` lists them): a job file lies on this machine "
                           "only")
        if self.cmd is not None and (not self.cmd.strip() or len(self.cmd) > MAX_CMD or not self.cmd.isprintable()):
            raise BadInput(f"--cmd with --hosts: one printable line of at most {MAX_CMD} characters")
        check_remote(self.iosched, self.ssh)

    def remote_argv(self, host: Host) -> list[str]:
        """The advice a host's iosched runs, from the checked values only (each word quoted by ssh_argv)."""
        return [self.iosched, "advise", host.device, "--yes", "--json", "--goal", self.goals,
                *option_words(("--alpha", self.alpha), ("--candidates", self.candidates), ("--job", self.job),
                              ("--cmd", self.cmd), ("--budget", self.budget_s), ("--runtime", self.runtime),
                              ("--settle", self.settle), ("--size", self.size))]


def host_entry(r: HostRun) -> AdviceHostDoc:
    """A host's run as its entry: its advice read back whole and decided again from its runs, or why not."""
    status, reason, result = r.status, r.reason or None, None
    if r.answer is not None:
        try:
            result = host_advice(r.host.name, r.answer)
        except (BadInput, IoschedError) as e:
            if status != "failed":
                status, reason = "failed", f"its advice did not read back: {e}"
    if result is not None and result.status != "final" and status == "done":
        status, reason = "failed", "its advice did not finish its tests"
    model, firmware = model_of(result) if result is not None else (None, None)
    return AdviceHostDoc(host=r.host.name, device=r.host.device, status=status, reason=reason,
                         scheduler_before=r.before, scheduler_after=r.after, put_back=r.put_back, model=model,
                         firmware=firmware, result=result)


def host_advice(host: str, answer: object) -> AdviceDoc:
    """``answer``, the JSON a host's `advise --json` wrote, as its declared type, judged again from its runs."""
    doc = read_advice(answer, host)
    for t in doc.tests:
        for part in (t.pilot, t.result):
            if part is not None:
                check_host_result(part)
    return decided_again(doc)


def pooled(doc: FleetAdviceDoc) -> FleetAdviceDoc:
    """The fleet advice with its hosts pooled per model (again: `report` does the same)."""
    return replace(doc, models=pool_models(doc.hosts))


def decided_hosts(doc: FleetAdviceDoc) -> FleetAdviceDoc:
    """A saved fleet advice with every host's advice read again as a saved one (its tests checked), decided again
    from its runs, then pooled again. IoschedError (BadInput) naming the host whose advice does not read back."""
    hosts = []
    for h in doc.hosts:
        if h.result is not None:
            try:
                h = replace(h, result=host_advice(h.host, encode(h.result)))
            except (BadInput, IoschedError) as e:
                raise IoschedError(f"host {printable(h.host[:80])}: {e}") from None
        hosts.append(h)
    return pooled(replace(doc, hosts=hosts))


@dataclass
class HostsAdvicePlan:
    """Every host's advice at once: the service's plan (check, hold, go, judged, finished)."""

    settings: HostsAdvice
    hosts: list[Host]
    started: float = field(default_factory=time.time)
    executor: Callable[[HostsAdvice, Sequence[Host], Callable[[str, str], None]], OnItsOwn] | None = None

    def check(self) -> None:
        self.settings.check()

    def hold(self, saver: Saver[FleetAdviceDoc] | None) -> AbstractContextManager[HostsAdvicePlan]:
        return contextlib.nullcontext(self)  # no device here: each host holds its own

    def go(self, run: Running[FleetAdviceDoc]) -> FleetAdviceDoc:
        s = self.settings
        run.emit(Note(f"advise on {len(self.hosts)} hosts, each by its own iosched over SSH, pooled per device model"))

        def said(host: str, line: str) -> None:
            run.emit(Note(printable(line), host=host))

        def document(runs: Sequence[HostRun]) -> FleetAdviceDoc:
            return FleetAdviceDoc(kind="advice_fleet", started=self.started, finished=time.time(), goals=s.goals,
                                  alpha=s.alpha, hosts=[host_entry(r) for r in runs], models=[])

        def kept(runs: list[HostRun], save: bool) -> None:
            if save:
                run.keep(self.judged(document(runs)))

        executor = (self.executor(s, self.hosts, said) if self.executor is not None else
                    OnItsOwn(self.hosts, s.remote_argv, said, s.ssh, s.iosched, answered=(0, 1)))
        runs = run_slots(OnItsOwnCourse(), executor, executor.runs, kept, run.emit, run.ctl)
        return document(runs)

    def judged(self, doc: FleetAdviceDoc) -> FleetAdviceDoc:
        return pooled(doc)

    def finished(self, doc: FleetAdviceDoc) -> int:
        return sum(1 for h in doc.hosts if h.result is not None)


