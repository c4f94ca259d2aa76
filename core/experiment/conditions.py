"""What an experiment's runs are measured under (core/load/conditions.py), settled before its first run: `--fill` and
`--steady` checked before anything is locked, the fill made once the target is chosen (its plan said first, as a
note), and every document the experiment keeps carrying them.

A resumed matrix keeps the conditions it was started under (its fill is not made again; its runs wait as its first
ones did, core/experiment/matrix.py reads the wait back).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.documents.document import AlternationDoc, CompareDoc, MatrixDoc
from iosched.core.experiment.control import Cancelled, Control
from iosched.core.experiment.events import Event, Note
from iosched.core.kernel.devices import read_device
from iosched.core.load.conditions import ConditionsDoc, read_conditions
from iosched.core.load.fill import found_fill, plan_fill, run_fill
from iosched.core.load.fio import FioHandle
from iosched.core.load.jobs import space_needed
from iosched.core.load.steady import SteadyWait, why_no_wait
from iosched.core.load.targets import Target

if TYPE_CHECKING:
    from iosched.core.experiment.service import ExperimentPlan

Doc = CompareDoc | AlternationDoc | MatrixDoc


def steady_of(plan: ExperimentPlan) -> SteadyWait | None:
    """The wait the plan's runs make: a compare's, or its matrix's (saved with it)."""
    return plan.matrix.steady if plan.matrix is not None else plan.steady


def runs_range(plan: ExperimentPlan) -> int:
    """The bytes from the target's start the plan's jobs address: the largest job's (the target's size, chosen)."""
    t = plan.target
    return t.size if t.size is not None else space_needed(plan.jobs, t.default_size)


def check_conditions(plan: ExperimentPlan) -> None:
    """--fill and --steady refused in one sentence where they cannot apply, before anything is locked or changed."""
    steady = steady_of(plan)
    if steady is not None and plan.resume is None:
        steady.check()
        if plan.kind == "alternate":
            raise BadInput("--steady waits before each run; a live alternation is one run whose variants take turns")
        if plan.cmd is not None or plan.replay is not None:
            raise BadInput("--steady waits for a fio job's own rate to settle: a command or a replayed capture keeps "
                           "its own pace")
        jobs = plan.matrix.jobs if plan.matrix is not None else [plan.job] if plan.job is not None else []
        for job in jobs:
            if (why := why_no_wait(job)) is not None:
                raise BadInput(f"--steady: {job.name} cannot wait for steady state: {why}")
    if plan.fill is None:
        return
    if plan.resume is not None:
        raise BadInput("--fill prepares the device before a matrix's first run: a resumed matrix goes on with the "
                       "device as it is (its file says how it was filled)")
    if plan.cmd is not None and plan.background is None:
        raise BadInput("--fill prepares the device a fio job runs on: a command alone writes where it writes")
    if plan.target.dir is not None:
        raise BadInput("--fill writes the whole raw device: --dir runs on a scratch file instead")
    dev = read_device(plan.device, plan.root)
    if dev is not None and dev.mountpoints:
        raise BadInput(f"--fill writes the whole of raw {plan.device}, which is mounted or in use "
                       f"({', '.join(dev.mountpoints[:3])}): fill an unmounted spare of the same model instead")


def holding(ctl: Control) -> Callable[[FioHandle], None]:
    """What a fio started outside a run hands its handle to, so that a cancel stops it."""
    def hold(run: FioHandle) -> None:
        ctl.fio = run
        if ctl.cancelled.is_set():
            run.stop()
    return hold


def prepare_conditions(plan: ExperimentPlan, target: Target | None, emit: Callable[[Event], None],
                       ctl: Control) -> ConditionsDoc | None:
    """The conditions of the plan's runs, the fill made first (None for a resumed matrix: its file keeps its own).
    A fill that fails or is cancelled releases the target: the experiment ends before its first run."""
    if plan.resume is not None:
        return None
    fill = found_fill(target) if target is not None else None
    if plan.fill is not None and target is not None:
        dev = read_device(plan.device, plan.root)
        if dev is None:
            raise BadInput(f"{plan.device} is not a whole-disk block device")
        planned = plan_fill(dev, plan.fill, plan.root)
        emit(Note(planned.words()))
        try:
            fill = run_fill(planned, target, holder=holding(ctl))
        except BaseException as e:
            target.release(plan.root)
            if isinstance(e, IoschedError) and ctl.cancelled.is_set():
                left = "trimmed and partly written" if planned.discards else "partly written"
                raise Cancelled(f"cancelled while filling {plan.device} to {planned.percent:g}%: it is left {left}, "
                                "and no run was made") from None
            raise
        finally:
            ctl.fio = None
        fill = fill.over(min(dev.size_bytes, runs_range(plan)))
        emit(Note(fill.words()))
    return read_conditions(plan.device, fill, steady_of(plan), plan.root)


class Conditioned:
    """The service's ``keep`` with the conditions in every document it keeps (``doc()``: one document so)."""

    def __init__(self, keep: Callable[[Doc, bool], None], conditions: ConditionsDoc | None) -> None:
        self._keep, self.conditions = keep, conditions

    def doc(self, d: Doc) -> Doc:
        return d if self.conditions is None else replace(d, conditions=self.conditions)

    def __call__(self, d: Doc, save: bool = True) -> None:
        self._keep(self.doc(d), save)


def conditioned(keep: Callable[[Doc, bool], None], conditions: ConditionsDoc | None) -> Conditioned:
    return Conditioned(keep, conditions)
