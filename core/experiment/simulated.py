"""Runs without a device: an executor of the one slot loop (slots.py) that draws each run's figures instead of
measuring them, so the whole service (a compare, a matrix, a live alternation, a fleet, an advice) runs in a test
without fio or root, and a bench can hold a verdict rule to the loop's own order and stops.

A run's figure is its metric's value at the baseline (``base``), times its variant's true effect on that metric
(``effects``, or ``by_workload`` for one workload; 1.0 where none is named), times log-normal noise of a chosen
size. Nothing on the device changes: the variant "put in place" is the configuration a run would have read back.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from iosched.core.base.errors import IoschedError
from iosched.core.documents.document import RunDoc
from iosched.core.experiment.control import Control
from iosched.core.experiment.runner import OnThisMachine
from iosched.core.experiment.slots import Slot
from iosched.core.load.fio import FioProgress
from iosched.core.settings.scheduler import available_schedulers

# The figures each run carries at the baseline: a rate is better higher, a latency or a time lower.
BASE: dict[str, float] = {"iops": 10_000.0, "mb_s": 40.0, "clat_p99_us": 900.0, "clat_p50_us": 300.0,
                          "fg:clat_p50_us": 7000.0, "fg:clat_p99_us": 20_000.0, "bg:mb_s": 300.0, "wall_s": 10.0}

Effects = Mapping[str, Mapping[str, float]]  # variant label -> metric -> its value over the baseline's


@dataclass
class Simulation:
    """What the simulated runs draw from, shared by every executor made from it (an advice's segments draw on, and
    ``stop_after`` counts over all of them): ``noise`` the per-run spread on the log scale, ``invalid`` the runs
    (counted from 0 over the simulation) marked invalid, ``stop_after`` a Ctrl-C (KeyboardInterrupt) after that many
    runs in all."""

    effects: Effects = field(default_factory=dict)
    by_workload: Mapping[str, Effects] = field(default_factory=dict)  # workload name -> its own effects
    base: Mapping[str, float] = field(default_factory=lambda: dict(BASE))
    noise: float = 0.05
    seed: int = 40
    stop_after: int | None = None
    invalid: frozenset[int] = frozenset()
    made: int = 0  # runs drawn so far
    segments: list[tuple[list[str], int]] = field(default_factory=list)  # each executor's variants and slots left
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def __call__(self, setup: OnThisMachine, ctl: Control) -> Simulated:
        """An executor of these runs: what a plan's ``runs`` takes (local_plan.py ``Runs``)."""
        return Simulated(self, setup, ctl)

    def figures(self, workload: str, variant: str) -> dict[str, float | None]:
        effect = self.by_workload.get(workload, self.effects).get(variant, {})
        return {k: v * effect.get(k, 1.0) * math.exp(self.rng.gauss(0.0, self.noise)) for k, v in self.base.items()}


class Simulated:
    """The executor a ``Simulation`` makes: each slot a run drawn at once; its targets released at the end, the
    device never touched (its scheduler is only read, for the document's ``original``)."""

    settle = 0.0
    traced = False

    def __init__(self, sim: Simulation, setup: OnThisMachine, ctl: Control) -> None:
        self.sim, self.setup, self.ctl = sim, setup, ctl
        self.labels = [v.label for v in setup.variants]
        self.names = [w.name for w in setup.workloads]
        self.made_here = 0
        sim.segments.append((self.labels, 0))
        self._segment = len(sim.segments) - 1

    def original(self) -> dict[str, str]:
        try:
            current = available_schedulers(self.setup.device, self.setup.root)[0]
        except IoschedError:
            current = None
        return {"scheduler": current or ""}

    def switches(self) -> list[tuple[float, str]]:
        return []

    def begin(self, say: Callable[[str], None], note: Callable[[str], None]) -> None:
        return None

    def apply(self, slot: Slot) -> dict[str, str]:
        v = self.setup.variants[slot.variant]
        return {"scheduler": v.scheduler, **dict(v.settings)}

    def run(self, slot: Slot, placed: object, progress: Callable[[FioProgress], None]) -> RunDoc:
        sim = self.sim
        if sim.stop_after is not None and sim.made >= sim.stop_after:
            raise KeyboardInterrupt
        assert isinstance(placed, dict)
        label = self.labels[slot.variant]
        metrics = sim.figures(self.names[slot.workload], label)
        bad = sim.made in sim.invalid
        sim.made += 1
        self.made_here += 1
        labels, _ = sim.segments[self._segment]
        sim.segments[self._segment] = (labels, self.made_here)
        t = time.monotonic()
        return RunDoc(index=slot.index, variant=label, start=t, end=t, valid=not bad,
                      invalid_reason="simulated as invalid" if bad else None, config=placed, metrics=metrics)

    def end(self) -> IoschedError | None:
        self.setup.release()
        return None
