"""Running any job: one fio process (core/load/fio.py), or for a cgroup job one per role, each in its own cgroup.

The threads of one process share its cgroup, so a job whose roles run at different bfq weights runs each role as a
fio of its own: still ``--thread`` inside, still under `setpriv --pdeathsig KILL` in a session of its own. Each
must be in its cgroup before its first IO. Python's subprocess cannot clone into a cgroup (CLONE_INTO_CGROUP), and
code between fork and exec (preexec_fn) is unsafe in a threaded program; so the child joins by itself: setpriv
execs a shell that writes its own pid to the group's cgroup.procs and then execs fio, the same process throughout
(core/settings/cgroups.py ``joined``). Each fio is spawned and waited for by a thread of its own (the death signal
follows the spawning thread). Their JSON outputs merge into one (``{"jobs": a + b}``), which fio_result reads per
role as it would one fio's.
"""

from __future__ import annotations

import contextlib
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from iosched.core.load.fio import (
    FioHandle,
    FioProgress,
    FioRun,
    RoleProgress,
    command,
    expected_of,
    run_one_fio,
    timeout_of,
)
from iosched.core.load.fio_result import FioFailed, FioResult, parse_result
from iosched.core.load.jobs import Job, JobFile
from iosched.core.load.targets import Target
from iosched.core.load.workdirs import workdir_prefix
from iosched.core.settings.cgroups import CgroupsUnavailable, joined, probe_weights, weighted_cgroups


class FioGroup:
    """Several fio processes run as one workload: started together, ended together (a failure in one kills the
    others), their progress and results merged. ``run()`` blocks; the rest may be called from any thread."""

    def __init__(self, members: list[tuple[str, FioRun]],
                 on_progress: Callable[[FioProgress], object] | None = None) -> None:
        self.members = members  # (role, its fio)
        self.on_progress = on_progress
        self._latest: dict[str, FioProgress] = {}
        self._errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        for role, run in members:
            run.on_progress = self._progress_of(role)

    def _progress_of(self, role: str) -> Callable[[FioProgress], None]:
        def got(p: FioProgress) -> None:
            with self._lock:
                self._latest[role] = p
                latest = dict(self._latest)
            # One voice: the first role's reports carry everyone's latest, so the listener hears one thread.
            if role == self.members[0][0] and self.on_progress is not None:
                self.on_progress(combined(latest))
        return got

    def run(self, timeout: float | None = None) -> FioResult:
        results: dict[str, FioResult] = {}

        def one(role: str, run: FioRun) -> None:
            try:
                results[role] = run.run(timeout)
            except BaseException as e:
                with self._lock:
                    self._errors.append(e)
                for _r, other in self.members:
                    if other is not run:
                        other.kill(wait=False)  # a workload with a role missing measures nothing

        threads = [threading.Thread(target=one, args=m, name=f"iosched-fio-{m[0]}", daemon=True) for m in self.members]
        try:
            for t in threads:
                t.start()
            for t in threads:
                while t.is_alive():
                    t.join(0.2)
        finally:
            if any(t.is_alive() for t in threads):  # interrupted (Ctrl-C): none of them outlives the call
                self.kill()
                for t in threads:
                    t.join(5)
        if self._stop.is_set():
            raise FioFailed("the workload was stopped")
        if self._errors:
            raise self._errors[0]
        raw = dict(results[self.members[0][0]].raw)
        raw["jobs"] = [j for role, _run in self.members for j in results[role].raw.get("jobs") or []]
        return parse_result(raw)

    @property
    def started(self) -> float:
        """When the first of its fio processes started (monotonic; 0 before any did)."""
        return min((run.started for _r, run in self.members if run.started), default=0.0)

    def stop(self) -> None:
        self._stop.set()
        for _role, run in self.members:
            run.stop()

    def kill(self, wait: bool = True) -> None:
        for _role, run in self.members:
            run.kill(wait=wait)

    def finish(self) -> None:
        for _role, run in self.members:
            run.finish()


def combined(latest: dict[str, FioProgress]) -> FioProgress:
    """The roles' latest reports as one: totals, the IO-weighted mean latency, and each role's own."""
    ps = list(latest.values())
    timed = [(p.iops, p.clat_mean_us) for p in ps if p.clat_mean_us is not None and p.iops > 0]
    weight = sum(n for n, _ in timed)
    lat = sum(n * x for n, x in timed) / weight if weight else None
    return FioProgress(max(p.elapsed for p in ps), sum(p.iops for p in ps), sum(p.read_iops for p in ps),
                       sum(p.write_iops for p in ps), sum(p.mb_s for p in ps), lat,
                       {role: RoleProgress(p.iops, p.clat_mean_us) for role, p in latest.items()})


def role_target(target: Target, role: str) -> Target:
    """Where one role of a cgroup job does its IO: the raw device all share, or a scratch file of its own beside the
    target's (two fio processes laying out one file would race)."""
    if target.kind != "file":
        return target
    return replace(target, path=str(Path(target.path).with_name(f"iosched-{role}.dat")))


def run_fio(job: Job | JobFile, target: Target, runtime: float | None = None,
            on_progress: Callable[[FioProgress], object] | None = None,
            holder: Callable[[FioHandle], None] | None = None, root: str | Path = "/") -> FioResult:
    """Run ``job`` on ``target`` to the end; ``holder`` receives the running workload so another thread can stop
    it. A cgroup job makes its cgroups first (CgroupsUnavailable, NotPermitted: one sentence) and removes them."""
    if not (isinstance(job, Job) and job.cgroup_weights):
        return run_one_fio(job, target, runtime, on_progress, holder)
    with _refusal_of(job.name), weighted_cgroups(job.cgroup_weights, root) as groups, \
            contextlib.ExitStack() as dirs:
        members = []
        for role, _weight in job.cgroup_weights:
            work = dirs.enter_context(tempfile.TemporaryDirectory(prefix=workdir_prefix()))
            run = FioRun(joined(groups.procs(role), command(job.role_alone(role), role_target(target, role), work,
                                                               runtime)))
            run.expected_s = expected_of(job, runtime)
            members.append((role, run))
        group = FioGroup(members, on_progress)
        if holder is not None:
            holder(group)
        return group.run(timeout_of(job, runtime))


@contextlib.contextmanager
def _refusal_of(name: str, others: bool = False) -> Iterator[None]:
    """A system without cgroup weights, said in one sentence that names the job (and that the rest could run)."""
    try:
        yield
    except CgroupsUnavailable as e:
        rest = "; leave it out and the rest can run" if others else ""
        raise CgroupsUnavailable(f"{name} runs its roles in cgroups of different bfq weights, which this system "
                                 f"cannot make: {e}{rest}; nothing was changed") from None


def check_cgroup_jobs(jobs: Sequence[Job | JobFile], root: str | Path = "/") -> None:
    """Before anything runs: CgroupsUnavailable (or NotPermitted) when a job needs cgroups this system cannot make.
    A cgroup is made and removed to see bfq's weight file (it shows in no existing cgroup for sure)."""
    needs = [j.name for j in jobs if isinstance(j, Job) and j.cgroup_weights]
    if needs:
        with _refusal_of(needs[0], others=len(jobs) > len(needs)):
            probe_weights(root)
