"""`advise` without a device: a simulated runner (each run's figures drawn around each variant's true value, log-normal
at a chosen noise) that the advice plan runs through the experiment service as it runs the fio runner, and a fixture
disk to observe (tests/unit/advice/test_advice_plan.py, the TUI's advise screen tests)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from fleet_support import compare_doc

from iosched.core.advice.loads import Load
from iosched.core.documents.document import CompareDoc, RunDoc
from iosched.core.documents.params import Variant
from iosched.core.experiment.control import Cancelled, Control
from iosched.core.experiment.events import Event, RunEnded, RunStarted
from iosched.core.experiment.variants import plan_order

# The figures each run carries, at the current setting (a latency lower is better, a rate higher).
BASE = {"iops": 10_000.0, "mb_s": 40.0, "clat_p99_us": 900.0, "clat_p50_us": 300.0, "fg:clat_p50_us": 7000.0,
        "fg:clat_p99_us": 20_000.0, "bg:mb_s": 300.0, "wall_s": 10.0}


@dataclass
class SimulatedRunner:
    """Runs a segment as the fio runner would, without a device: ``effects[variant][metric]`` is the variant's true
    value over the current setting's (1.0 when not named); ``stop_after`` raises KeyboardInterrupt after that many
    runs in all (Ctrl-C)."""

    effects: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    noise: float = 0.05
    seed: int = 40
    stop_after: int | None = None
    runs: int = 0
    segments: list[tuple[list[str], int]] = field(default_factory=list)
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def __call__(self, device: str, variants: list[Variant], load: Load, repeat: int, runtime: float | None,
                 emit: Callable[[Event], None], ctl: Control,
                 keep: Callable[[CompareDoc, bool], None]) -> CompareDoc:
        labels = [v.label for v in variants]
        self.segments.append((labels, repeat))
        order = [labels[i] for i in plan_order(len(labels), repeat)]
        doc = compare_doc(labels, [])
        doc = replace(doc, order=order, repeat=repeat, status="running")
        keep(doc, False)
        for n, label in enumerate(order):
            if ctl.cancelled.is_set():
                raise Cancelled("cancelled")
            if self.stop_after is not None and self.runs >= self.stop_after:
                raise KeyboardInterrupt
            emit(RunStarted(n, len(order), label))
            effect = self.effects.get(label, {})
            metrics: dict[str, float | None] = {
                k: v * effect.get(k, 1.0) * math.exp(self.rng.gauss(0.0, self.noise)) for k, v in BASE.items()}
            run = RunDoc(index=n, variant=label, start=float(n), end=n + 0.5, valid=True, invalid_reason=None,
                         config={"scheduler": label.split(":")[0]}, metrics=metrics)
            doc = replace(doc, runs=[*doc.runs, run])
            self.runs += 1
            keep(doc, False)
            emit(RunEnded(n, len(order), label, run))
        return replace(doc, status="final")


def nvme_disk(tree, scheduler: str = "[none] mq-deadline kyber bfq") -> None:
    """A fixture NVMe drive, nvme0n1, offering every scheduler."""
    tree.add_disk("nvme0n1", "259:0", scheduler=scheduler)
    for i in range(4):
        tree.write(f"sys/block/nvme0n1/mq/{i}/nr_tags", "1023\n")
