"""Live alternation: one continuous fio run while the variants take turns every few seconds; each turn is one
sample, the first second of it discarded, and the verdict pairs adjacent turns (core/statistics/verdict.py)."""


import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from iosched.core.base.errors import BadInput, IoschedError
from iosched.core.documents.document import AlternationDoc, RunDoc, SequentialDoc
from iosched.core.documents.params import Variant
from iosched.core.experiment.control import Cancelled, Control
from iosched.core.experiment.events import Done, Event, Progress, RunEnded
from iosched.core.experiment.runner import (
    Keep,
    Kept,
    Workload,
    _released_on_error,
    hold_to_range,
    mark_cancelled,
    put_back,
    raise_undone,
    shielded,
    sysinfo,
    window_metrics,
)
from iosched.core.experiment.variants import Configurator, alternation_order, check_variants
from iosched.core.live.monitor import Monitor
from iosched.core.load.fio import FioHandle, FioProgress
from iosched.core.load.fio_group import run_fio
from iosched.core.settings.scheduler import (
    available_schedulers,
)

# --- live alternation ---------------------------------------------------------------------------------------


def run_alternation(device: str, variants: list[Variant], workload: Workload, every: float, duration: float,
                    discard: float = 1.0, root: str | Path = "/", on_event: Callable[[Event], None] | None = None,
                    ctl: Control | None = None, stop: Callable[[RunDoc], bool] | None = None,
                    sequential: SequentialDoc | None = None,
                    keep: Keep[AlternationDoc] | None = None) -> AlternationDoc:
    """One continuous fio run while the variants take turns every ``every`` seconds.

    The job's runtime must exceed ``duration`` (fio is stopped when the last turn ends).

    Turns go in balanced order (`alternation_order`: A B B A B A A B ...) and only whole blocks of two
    passes are run. Each turn is one sample (its mean over the turn, after discarding the first
    ``discard`` seconds); the verdict pairs the turns within each pass (core/statistics/verdict.py), so drift the
    variants share cancels. ``stop`` and ``sequential`` as in `run_experiment`.
    """
    with _released_on_error(workload, root):
        job, target = workload.job, workload.target
        if job is None or target is None:
            raise BadInput("live alternation needs a fio job")
        if every <= discard + 0.5:
            raise BadInput(f"--alternate must be longer than {discard + 0.5:g} s (the first {discard:g} s of a "
                           "turn is discarded)")
        passes = int(duration // every) // len(variants)
        passes -= passes % 2  # whole blocks of two passes
        if passes < 4:
            raise BadInput(f"--duration must allow at least four turns per variant ({4 * len(variants) * every:g} s)")
        check_variants(device, variants, root)
        cfg = Configurator(device, variants, root)
    ctl = ctl or Control()
    emit = on_event or (lambda e: None)
    monitor = Monitor(root=root, capacity=1)  # the run windows' edges
    info = sysinfo(device, root)
    kept = Kept(AlternationDoc(kind="alternate", started=time.time(), kernel=info.kernel, machine=info.machine,
                               host=info.host, device=info.device, variants=[v.doc() for v in variants],
                               every_s=every, duration_s=duration, discard_s=discard, workload=workload.doc(),
                               original=cfg.snapshot(), runs=[], notes=[], order=[], sequential=sequential), keep)
    configs = {v.label: cfg.apply(v) for v in variants}  # captures each scheduler's defaults before the load
    result: dict[str, Any] = {}  # what the fio thread ended with: its result or its error

    def hold(run: FioHandle) -> None:
        ctl.fio = run
        if ctl.cancelled.is_set():
            run.stop()

    seen: list[tuple[float, FioProgress]] = []  # fio's status reports, for each role's figures per turn

    def progress(p: FioProgress) -> None:
        seen.append((time.monotonic(), p))
        emit(Progress(len(kept.doc.runs), 0, cur[0], p))

    def fio_thread() -> None:
        try:
            result["fio"] = run_fio(job, target, workload.runtime, progress, hold, root)
        except IoschedError as e:
            result["error"] = e

    cur = [variants[0].label]
    t_origin = time.monotonic()
    worker = threading.Thread(target=fio_thread, name="iosched-fio", daemon=True)
    early = False
    try:
        cfg.apply(variants[0])
        worker.start()
        order = alternation_order(len(variants), passes)
        turns = len(order)
        t_next = time.monotonic() + 1.0  # give fio a moment to lay out and start
        _sleep_until(t_next, ctl, worker)
        for k in range(turns):
            if ctl.cancelled.is_set():
                raise Cancelled("cancelled")
            if not worker.is_alive():
                break
            v = variants[order[k]]
            cur[0] = v.label
            t_turn = time.monotonic()
            config = cfg.apply(v)
            configs[v.label] = config
            _sleep_until(t_turn + discard, ctl, worker)
            s0 = monitor.snapshot()
            _sleep_until(t_turn + every, ctl, worker)
            s1 = monitor.snapshot()
            if not worker.is_alive() and s1.time - s0.time < every - discard - 0.2:
                break  # fio ended inside the turn: a short turn would skew its variant
            now = available_schedulers(device, root)[0]
            m: dict[str, float | None] = {**window_metrics(device, s0, s1, None)}
            m["iops"] = m.pop("dev_iops", 0.0)
            m.update(role_turn_metrics([p for t, p in seen if s0.time < t <= s1.time + 0.5]))
            run = hold_to_range(RunDoc(
                index=k, variant=v.label, start=s0.time - t_origin, end=s1.time - t_origin,
                valid=now == config["scheduler"], config=config, metrics=m, fio=None,
                invalid_reason=None if now == config["scheduler"] else f"scheduler changed to {now}"))
            kept.update(runs=[*kept.doc.runs, run], order=[*kept.doc.order, v.label])
            done = stop is not None and stop(run)
            emit(RunEnded(k, turns, v.label, run))
            if done:
                kept.note(f"stopped after turn {k + 1} of at most {turns}: the boundary was crossed")
                break
        kept.update(status="final")
    except BaseException as e:  # as in run_experiment: the turns that finished can still be saved
        early = True
        mark_cancelled(kept, e, "results cover the turns that finished")
        raise
    finally:
        with shielded():
            if worker.is_alive():
                ctl.cancel()
            worker.join(timeout=10)
            undone = put_back(cfg, kept)
            target.release(root)
        kept.update(switches=[(t - t_origin, s) for t, s in cfg.switches], finished=time.time())
        raise_undone(undone, early, kept, lambda: "results cover the turns that finished")
    if "error" in result and not kept.doc.runs:
        raise result["error"]
    if "fio" in result:
        kept.update(fio=result["fio"].raw)
    emit(Done())
    return kept.doc


ROLE_TURN_METRICS = ("iops", "clat_mean_us")  # what fio's status reports give per role and interval


def role_turn_metrics(reports: list[FioProgress]) -> dict[str, float | None]:
    """Each role's IOPS and IO-weighted mean latency over the status reports that fall in a turn."""
    out: dict[str, float | None] = {}
    roles = dict.fromkeys(r for p in reports for r in p.roles)
    for role in roles:
        points = [p.roles[role] for p in reports if role in p.roles]
        out[f"{role}:iops"] = sum(x.iops for x in points) / len(points)
        timed = [(x.iops, x.clat_mean_us) for x in points if x.clat_mean_us is not None and x.iops > 0]
        weight = sum(n for n, _ in timed)
        out[f"{role}:clat_mean_us"] = sum(n * lat for n, lat in timed) / weight if weight else None
    return out


def _sleep_until(t: float, ctl: Control, worker: threading.Thread) -> None:
    """Wait until ``t``; a cancel wakes it at once, fio ending within a tenth of a second."""
    while worker.is_alive():
        left = t - time.monotonic()
        if left <= 0 or ctl.cancelled.wait(min(left, 0.1)):
            return
