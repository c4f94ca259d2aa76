"""A fleet without hosts: executors of the one slot loop (core/experiment/slots.py) whose hosts' runs are drawn by a
simulation (core/experiment/simulated.py) instead of run over SSH, so a fleet compare or a fleet matrix runs whole
through the experiment service in a test (and a bench of the pooled verdict can use the fleet's own loop). Each
host's figures are its own when the simulation names the host among its workloads (``by_workload``).

In lockstep every host's compare is kept as the real executor keeps it (its documents, its boundary, its end);
each by itself, each host's whole compare is drawn at once and answered as its iosched's JSON, read back as one.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from iosched.core.base.encode import encode
from iosched.core.base.errors import IoschedError
from iosched.core.documents.document import CompareDoc, RunDoc, TargetDoc, WorkloadDoc
from iosched.core.documents.params import parse_variants
from iosched.core.experiment.runner import Workload
from iosched.core.experiment.simulated import Simulation
from iosched.core.experiment.slots import Course, Slot
from iosched.core.experiment.variants import plan_order
from iosched.core.fleet.fleet import Host, HostRun, OnItsOwn, OnItsOwnCourse
from iosched.core.fleet.fleet_plan import FleetSettings
from iosched.core.fleet.host_answers import Ready
from iosched.core.fleet.lockstep import Lockstep, LockstepRuns
from iosched.core.kernel.device_doc import DeviceNameDoc
from iosched.core.load.fio import FioProgress
from iosched.core.load.jobs import CATALOG
from iosched.core.load.targets import Target


@dataclass
class SimulatedHosts:
    """A fleet plan's ``hosts_run``: its slots drawn by ``sim``; ``fail`` names hosts lost before their first run."""

    sim: Simulation
    fail: frozenset[str] = frozenset()

    def lockstep(self, plan: Lockstep, hosts: Sequence[Host], said: Callable[[str, str], None]) -> LockstepRuns:
        return SimulatedLockstep(self, hosts, plan, said)

    def independent(self, settings: FleetSettings, hosts: Sequence[Host], job: str,
                    said: Callable[[str, str], None]) -> tuple[OnItsOwn, Course[list[HostRun], list[HostRun]]]:
        return SimulatedOnItsOwn(self, settings, hosts, job, said), OnItsOwnCourse()

    def run(self, host: Host, n: int, label: str, scheduler: str) -> RunDoc:
        t = time.monotonic()
        return RunDoc(index=n, variant=label, start=max(t - 1.0, 0.0), end=t, valid=True, invalid_reason=None,
                      config={"scheduler": scheduler}, metrics=self.sim.figures(host.name, label))


def ready(host: Host) -> Ready:
    """What a host's first answer would say."""
    u = platform.uname()
    return Ready(ok=True, kernel=u.release, machine=u.machine, host=host.name, device=DeviceNameDoc(name=host.device),
                 original={"scheduler": "none"},
                 target=TargetDoc(device=host.device, path=f"/dev/{host.device}", kind="device", note=""),
                 started=time.time())


class SimulatedLockstep(LockstepRuns):
    """Each slot on every simulated host: a run drawn per live host, said as the real fleet says its slots."""

    def __init__(self, hosts_run: SimulatedHosts, hosts: Sequence[Host], plan: Lockstep,
                 on_line: Callable[[str, str], None]) -> None:
        super().__init__(hosts, plan, on_line)
        self.hosts_run = hosts_run

    def begin(self, say: Callable[[str], None], note: Callable[[str], None]) -> None:
        for r in self.runs:
            if r.host.name in self.hosts_run.fail:
                r.status, r.reason = "failed", "the SSH session was lost (simulated)"
        self.documents({id(r): ready(r.host) for r in self.runs if r.live})

    def apply(self, slot: Slot) -> object | None:
        return slot if any(r.live for r in self.runs) else None

    def run(self, slot: Slot, placed: object, progress: Callable[[FioProgress], None]) -> list[HostRun]:
        v = self.plan.variants[slot.variant]
        said = []
        for r in self.runs:
            if r.live and r.doc is not None:
                run = self.hosts_run.run(r.host, slot.index, v.label, v.scheduler)
                r.change(run=run)
                said.append(f"{r.host.name} {run.metrics.get('iops') or 0:,.0f} IOPS")
        self.on_line("fleet", f"run {slot.index + 1}/{len(self.order)} ({v.label}): " + "; ".join(said or ["no host"]))
        return self.runs

    def end(self) -> IoschedError | None:
        return None


class SimulatedOnItsOwn(OnItsOwn):
    """Every simulated host's own compare at once, answered as its iosched's `compare --json` would be."""

    def __init__(self, hosts_run: SimulatedHosts, settings: FleetSettings, hosts: Sequence[Host], job: str,
                 said: Callable[[str, str], None]) -> None:
        super().__init__(hosts, lambda h: [], said)
        self.hosts_run, self.settings, self.job = hosts_run, settings, job

    def run(self, slot: Slot, placed: object, progress: Callable[[FioProgress], None]) -> list[HostRun]:
        variants = parse_variants(self.settings.schedulers)
        order = plan_order(len(variants), self.settings.runs)
        for r in self.runs:
            if r.host.name in self.hosts_run.fail:
                r.status, r.reason = "failed", "the SSH session was lost (simulated)"
                continue
            first = ready(r.host)
            runs = [self.hosts_run.run(r.host, n, variants[v].label, variants[v].scheduler)
                    for n, v in enumerate(order)]
            t0 = runs[0].start if runs else 0.0
            runs = [replace(x, start=x.start - t0, end=x.end - t0) for x in runs]
            doc = CompareDoc(started=first.started, kernel=first.kernel, machine=first.machine, host=first.host,
                             device=first.device, variants=[v.doc() for v in variants],
                             order=[variants[v].label for v in order], repeat=self.settings.runs,
                             drop_caches=False, settle_s=self.settings.settle,
                             workload=_workload(self.job, first), original=first.original, runs=runs, notes=[],
                             status="final", finished=time.time())
            r.before = r.after = "none"
            r.status, r.answer = "done", encode(doc)
        return self.runs


def _workload(job: str, first: Ready) -> WorkloadDoc:
    target = Target(first.target.device, first.target.path, "device")
    return Workload(CATALOG[job], target).doc()
