"""A matrix on a fleet (`compare --hosts … --jobs GROUP`) as a plan of the experiment service: each job of the group
is a fleet compare of its own (fleet_plan.py ``run_job``: every host in lockstep, or each by itself), one job after
another; each job's variants are pooled over its hosts, and the verdicts Holm-corrected over every cell (job x
variant), as one machine's matrix is (core/statistics/fleet_verdict.py ``matrix_pooled``). The service saves the
whole matrix after every slot and goes on from a saved one in the job and slot it stopped at.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from iosched.core.documents.document import FleetDoc, FleetMatrixDoc
from iosched.core.experiment.events import Note
from iosched.core.fleet.fleet import Host
from iosched.core.fleet.fleet_plan import FleetSettings, HostsRun, check_remote, finished_runs, next_slot, run_job
from iosched.core.statistics.fleet_verdict import fleet_pooled, matrix_pooled

if TYPE_CHECKING:
    from iosched.core.experiment.service import Running, Saver


def going_on(matrix: FleetMatrixDoc) -> tuple[list[FleetDoc], FleetDoc | None]:
    """A saved fleet matrix's jobs kept as they are, and the job's fleet it goes on with (None: it goes on with the
    next job). The last job goes on if it has slots left and a host that did not finish (stopped, lost, or all
    failed)."""
    fleets = list(matrix.fleets)
    last = fleets[-1] if fleets else None
    if last is not None and next_slot(last) is not None and any(h.status != "done" for h in last.hosts):
        return fleets[:-1], last
    return fleets, None


@dataclass
class FleetMatrixPlan:
    """A group of jobs on every host, one after another: the service's plan (check, hold, go, judged, finished)."""

    settings: FleetSettings
    hosts: list[Host]
    jobs: list[str]
    spec: str  # --jobs as given
    started: float = field(default_factory=time.time)
    resume: FleetMatrixDoc | None = None  # a saved matrix to go on with, in the job and slot it stopped at
    hosts_run: HostsRun | None = None  # who runs the slots (None: the hosts; a test: a simulation)

    def check(self) -> None:
        self.settings.check(self.jobs)
        check_remote(self.settings.iosched, self.settings.ssh)

    def hold(self, saver: Saver[FleetMatrixDoc] | None) -> AbstractContextManager[FleetMatrixPlan]:
        return contextlib.nullcontext(self)  # no device here: each host holds its own

    def document(self, fleets: Sequence[FleetDoc]) -> FleetMatrixDoc:
        """The matrix so far, its cells not yet pooled together (each slot's save leaves that to the end and to
        `report`: it would judge every host of every job again between two slots)."""
        s = self.settings
        return FleetMatrixDoc(kind="fleet_matrix", mode=s.mode, started=self.started, finished=time.time(),
                              jobs_spec=self.spec, jobs=list(self.jobs), schedulers=s.schedulers, repeat=s.runs,
                              until_verdict=s.until_verdict, metric=s.metric, runtime_s=s.runtime, size=s.size,
                              settle_s=s.settle, fleets=list(fleets))

    def go(self, run: Running[FleetMatrixDoc]) -> FleetMatrixDoc:
        s, jobs = self.settings, self.jobs
        run.emit(Note(f"{len(jobs)} jobs ({self.spec[:200]}) under {s.schedulers} on {len(self.hosts)} hosts, one "
                      f"job after another, {s.how}"))
        fleets, resume = going_on(self.resume) if self.resume is not None else ([], None)

        def fleet_judged(doc: FleetDoc) -> FleetDoc:  # its own pooled, as the saves between its slots show it
            return replace(doc, pooled=fleet_pooled(doc, s.alpha, s.metric))

        for n in range(len(fleets), len(jobs)):
            run.emit(Note(f"job {n + 1}/{len(jobs)}: {jobs[n]}"))
            started = resume.started if resume is not None else time.time()
            doc = run_job(s, self.hosts, jobs[n], started, resume, run.emit,
                          lambda current: run.keep(self.document([*fleets, fleet_judged(current)])), run.ctl,
                          self.hosts_run)
            resume = None
            fleets.append(fleet_judged(doc))
            run.keep(self.document(fleets))
            if not any(h.status == "done" for h in doc.hosts) and n + 1 < len(jobs):
                break  # no host finished it: the jobs after it would fare no better
        return self.document(fleets)

    def judged(self, doc: FleetMatrixDoc) -> FleetMatrixDoc:
        fleets, pooled = matrix_pooled(doc.fleets, self.settings.alpha, self.settings.metric)
        return replace(doc, fleets=fleets, pooled=pooled)

    def finished(self, doc: FleetMatrixDoc) -> int:
        return finished_runs(doc.fleets)
