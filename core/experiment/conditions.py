"""What an experiment's runs are measured under (core/load/conditions.py), settled before its first run: `--fill` and
`--steady` checked before anything is locked, the fill made once the target is chosen (its plan said first, as a
note), and the experiment's document carrying them from its start. A plan on this machine (local_plan.py
``LocalPlan``) calls these in its check and its go; what a kind refuses of its own (a live alternation's wait, a
command's fill, a resumed matrix's) its plan says.

A resumed matrix keeps the conditions it was started under (its fill is not made again; its runs wait as its first
ones did, core/experiment/matrix.py reads the wait back).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.experiment.control import Cancelled, Control
from iosched.core.experiment.events import Event, Note
from iosched.core.kernel.devices import read_device
from iosched.core.load.conditions import ConditionsDoc, read_conditions
from iosched.core.load.fill import found_fill, plan_fill, run_fill
from iosched.core.load.fio import FioHandle
from iosched.core.load.jobs import Job, JobFile, space_needed
from iosched.core.load.steady import SteadyWait, why_no_wait
from iosched.core.load.targets import Target


def check_steady(steady: SteadyWait, jobs: Sequence[object]) -> None:
    """--steady refused in one sentence where fio cannot judge one stream of ``jobs`` (each a job, a job file or a
    study's command), before anything is locked or changed."""
    steady.check()
    for job in jobs:
        if (why := why_no_wait(job)) is not None:
            raise BadInput(f"--steady: {getattr(job, 'name', 'a command')} cannot wait for steady state: {why}")


def check_fill(device: str, scratch_dir: str | None, root: str | Path = "/") -> None:
    """--fill refused in one sentence where it would not write the raw device (``scratch_dir``: --dir), or would
    write over a mounted one, before anything is locked or changed."""
    if scratch_dir is not None:
        raise BadInput("--fill writes the whole raw device: --dir runs on a scratch file instead")
    dev = read_device(device, root)
    if dev is not None and dev.mountpoints:
        raise BadInput(f"--fill writes the whole of raw {device}, which is mounted or in use "
                       f"({', '.join(dev.mountpoints[:3])}): fill an unmounted spare of the same model instead")


def runs_range(jobs: list[Job | JobFile], size: int | None, default_size: int) -> int:
    """The bytes from the target's start ``jobs`` address: the largest job's (capped at ``default_size``), or the
    ``size`` asked; the target is chosen for it (local_plan.py ``choose_for``) and a fill is said of it."""
    return size if size is not None else space_needed(jobs, default_size)


def holding(ctl: Control) -> Callable[[FioHandle], None]:
    """What a fio started outside a run hands its handle to, so that a cancel stops it."""
    def hold(run: FioHandle) -> None:
        ctl.fio = run
        if ctl.cancelled.is_set():
            run.stop()
    return hold


def prepare_conditions(device: str, fill: float | None, steady: SteadyWait | None, target: Target | None,
                       emit: Callable[[Event], None], ctl: Control, root: str | Path = "/",
                       range_bytes: int = 0) -> ConditionsDoc:
    """The conditions of the runs on ``device``, the fill (``fill`` percent of the raw device) made first and said
    of the runs' range too (``range_bytes``, ``runs_range``; 0: not known). A fill that fails or is cancelled
    releases the target, saying what it left: the experiment ends before its first run."""
    made = found_fill(target) if target is not None else None
    if fill is not None and target is not None:
        dev = read_device(device, root)
        if dev is None:
            raise BadInput(f"{device} is not a whole-disk block device")
        planned = plan_fill(dev, fill, root)
        emit(Note(planned.words()))
        try:
            made = run_fill(planned, target, holder=holding(ctl))
        except BaseException as e:
            target.release(root)
            if isinstance(e, IoschedError) and ctl.cancelled.is_set():
                left = "trimmed and partly written" if planned.discards else "partly written"
                raise Cancelled(f"cancelled while filling {device} to {planned.percent:g}%: it is left {left}, "
                                "and no run was made") from None
            raise
        finally:
            ctl.fio = None
        made = made.over(min(dev.size_bytes, range_bytes))  # what share of the runs' range it wrote
        emit(Note(made.words()))
    return read_conditions(device, made, steady, root)
