"""The one slot loop (core/experiment/slots.py) with executors that only record what they are asked: the order, the
settle, the stop rule, a slot left out, cancellation, and the put-back, whatever ends the slots; and that no other
loop in core switches a variant and runs a load."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import pytest

import iosched.core
from iosched.core.base.errors import DeviceGone, IoschedError
from iosched.core.experiment.control import Cancelled, Control
from iosched.core.experiment.events import Done, Event, Note, RunEnded
from iosched.core.experiment.slots import Course, Slot, Stop, run_slots


class Recorder:
    """An executor that records each call, runs ``fails_at`` by raising, and puts back with ``undone``."""

    settle = 0.0

    def __init__(self, fails_at: int | None = None, undone: IoschedError | None = None,
                 ends_at: int | None = None, interrupt: BaseException | None = None) -> None:
        self.calls: list[str] = []
        self.fails_at, self.undone, self.ends_at, self.interrupt = fails_at, undone, ends_at, interrupt

    def begin(self, say, note) -> None:
        self.calls.append("begin")
        say("measured first")

    def apply(self, slot: Slot) -> object | None:
        if self.ends_at is not None and slot.index >= self.ends_at:
            return None
        self.calls.append(f"apply {slot.variant}")
        return slot.variant

    def run(self, slot: Slot, placed: object, progress) -> int:
        if slot.index == self.fails_at:
            raise self.interrupt or IoschedError("fio exited 1")
        self.calls.append(f"run {slot.index}")
        return slot.index * 10

    def end(self) -> IoschedError | None:
        self.calls.append("end")
        return self.undone


class Listing(Course[list, int]):
    """A course whose document is a list of what happened: runs, notes, the end."""

    saves = True

    def __init__(self, slots, stop_at: int | None = None, skip: set[int] | None = None) -> None:
        super().__init__(slots, len(slots))
        self.stop_at, self.skip = stop_at, skip or set()

    def skips(self, doc, slot):
        return slot.index in self.skip

    def record(self, doc, slot, run, took):
        return [*doc, run]

    def stop(self, doc, slot, run):
        return Stop(f"stopped at {slot.index}") if slot.index == self.stop_at else None

    def ended(self, doc, slot, run):
        return [RunEnded(slot.index, self.total, str(slot.variant), None)]  # type: ignore[arg-type]

    def note(self, doc, text):
        return [*doc, text]

    def finished(self, doc):
        return [*doc, "final"]

    def cancelled(self, doc, why):
        return [*doc, f"ended early ({why})"]

    def put_back_failed(self, doc, error):
        return [*doc, f"not back: {error}"]

    def closed(self, doc, origin):
        return [*doc, "closed"]


SLOTS = [Slot(0, 0), Slot(1, 1), Slot(2, 1), Slot(3, 0)]


def run(course, executor, ctl=None):
    events: list[Event] = []
    saves: list[list] = []
    doc = run_slots(course, executor, [], lambda d, save: save and saves.append(d), events.append, ctl)
    return doc, events, saves


def test_every_slot_runs_in_its_order_and_everything_is_put_back_once():
    ex = Recorder()
    doc, events, saves = run(Listing(SLOTS), ex)
    assert ex.calls == ["begin", "apply 0", "run 0", "apply 1", "run 1", "apply 1", "run 2", "apply 0", "run 3",
                        "end"]
    assert doc == ["measured first", 0, 10, 20, 30, "final", "closed"]
    assert [type(e) for e in events] == [Note, RunEnded, RunEnded, RunEnded, RunEnded, Done]
    assert len(saves) == 5 and saves[-1] == doc  # after every run, and at the end


def test_a_stop_rule_ends_the_slots_with_its_note_and_a_skipped_slot_never_runs():
    ex = Recorder()
    doc, _, _ = run(Listing(SLOTS, stop_at=2, skip={1}), ex)
    assert ex.calls == ["begin", "apply 0", "run 0", "apply 1", "run 2", "end"]
    assert doc == ["measured first", 0, 20, "stopped at 2", "final", "closed"]


def test_an_executor_with_nothing_left_to_run_on_ends_the_slots_as_finished():
    ex = Recorder(ends_at=2)
    doc, events, _ = run(Listing(SLOTS), ex)
    assert ex.calls[-1] == "end" and doc[-2:] == ["final", "closed"] and isinstance(events[-1], Done)


@pytest.mark.parametrize("error", [IoschedError("fio exited 1"), KeyboardInterrupt(), Cancelled("cancelled")])
def test_whatever_ends_the_slots_early_the_runs_are_kept_and_everything_is_put_back(error):
    ex = Recorder(fails_at=2, interrupt=error)
    held: list[list] = []
    with pytest.raises(type(error)):
        run_slots(Listing(SLOTS), ex, [], lambda d, save: held.append(d))
    assert ex.calls[-1] == "end" and ex.calls.count("end") == 1
    why = {KeyboardInterrupt: "Ctrl-C", Cancelled: "cancelled"}.get(type(error), "IoschedError: fio exited 1")
    assert held[-1] == ["measured first", 0, 10, f"ended early ({why})", "closed"]


def test_a_cancel_ends_the_settle_at_once_and_nothing_more_runs():
    ex = Recorder()
    ex.settle = 60.0
    ctl = Control()
    threading.Timer(0.2, ctl.cancelled.set).start()
    with pytest.raises(Cancelled):
        run(Listing(SLOTS), ex, ctl)
    assert ex.calls == ["begin", "apply 0", "end"]


def test_a_put_back_that_fails_after_every_run_fails_the_experiment_with_its_runs_kept():
    ex = Recorder(undone=DeviceGone("sdx is gone"))
    held: list[list] = []
    with pytest.raises(DeviceGone):
        run_slots(Listing(SLOTS), ex, [], lambda d, save: held.append(d))
    assert held[-1][-4:] == ["final", "not back: sdx is gone", "closed", "ended early (DeviceGone: sdx is gone)"]
    # Ended early anyway: the put-back's failure is noted, the error that ended the runs is the one raised.
    ex = Recorder(fails_at=1, undone=DeviceGone("sdx is gone"))
    with pytest.raises(IoschedError, match="fio exited 1"):
        run_slots(Listing(SLOTS), ex, [], lambda d, save: held.append(d))
    assert held[-1][-3:] == ["ended early (IoschedError: fio exited 1)", "not back: sdx is gone", "closed"]


# --- one loop ----------------------------------------------------------------------------------------------------

SWITCHES = {"apply", "switch_scheduler"}  # what puts a variant in place
RUNS = {"run", "run_fio", "_one_run", "_one_slot", "run_startup", "run_cmd_under", "run_cmd_reading", "measure_alone"}


def _called(node: ast.AST) -> set[str]:
    names = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            names.add(f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "")
    return names


def test_one_loop_switches_a_variant_and_runs_a_load():
    """Every loop in core whose body both puts a variant in place and runs a load: run_slots's alone."""
    found = []
    for path in Path(iosched.core.__path__[0]).rglob("*.py"):
        tree = ast.parse(path.read_text())
        for fn in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            for loop in (n for n in ast.walk(fn) if isinstance(n, (ast.For, ast.While))):
                called = _called(loop)
                if called & SWITCHES and called & RUNS:
                    found.append(f"{path.parent.name}/{path.name}:{fn.name}")
    assert sorted(set(found)) == ["experiment/slots.py:run_slots"], found
