"""Variants and putting them in place: a scheduler plus optional settings ("mq-deadline:read_expire=100"), the
drift-balanced orders they run in, and the Configurator that applies each from its scheduler's defaults and puts
back the configuration found at the start (a switch resets the scheduler's tunables and nr_requests, so every run
first puts its variant's whole configuration in place)."""


from pathlib import Path

from iosched.core.base.errors import DeviceGone, IoschedError
from iosched.core.documents.params import Variant
from iosched.core.settings.putback import note, put_back, starting_point
from iosched.core.settings.scheduler import (
    available_schedulers,
    not_listed,
    read_knobs,
    read_tunables,
    setting_attr,
    switch_scheduler,
)
from iosched.core.settings.tunables import validate
from iosched.core.settings.writes import QUEUE_KNOBS, write_attr

# --- variants ---------------------------------------------------------------------------------------------


def check_variants(device: str, variants: list[Variant], root: str | Path = "/") -> None:
    """Every scheduler exists on the device and every setting exists for its scheduler, in range."""
    _, available = available_schedulers(device, root)
    for v in variants:
        if v.scheduler not in available:
            raise not_listed(device, v.scheduler, available, root)
        if v.settings:
            validate(device, list(v.settings), root, scheduler=v.scheduler)


def plan_order(n_variants: int, repeat: int) -> list[int]:
    """Interleaved order: A B, then B A, then A B ... so drift and warm caches favour no side."""
    order: list[int] = []
    for r in range(repeat):
        seq = list(range(n_variants))
        order += seq if r % 2 == 0 else seq[::-1]
    return order


def alternation_order(n_variants: int, passes: int) -> list[int]:
    """Live alternation: passes over the variants forward (F) and reversed (R) as F R R F, F R R F ...

    Every two passes form a block (F R or R F) in which each variant's mean position is the same, so a
    linear drift cancels within the block, and so does anything that flips with every turn; alternating the
    blocks' orientation (A B B A, then B A A B) makes slow drift push neighbouring blocks in opposite
    directions, so their estimates do not share an error of the same sign.
    """
    order: list[int] = []
    for p in range(passes):
        seq = list(range(n_variants))
        order += seq if p % 4 in (0, 3) else seq[::-1]
    return order


# --- putting a configuration in place ----------------------------------------------------------------------


class Configurator:
    """Applies variants with fresh defaults, and puts back the configuration found at the start: the scheduler, its
    tunables and every queue knob (core/settings/putback.py, the one path every ending of a run takes)."""

    def __init__(self, device: str, variants: list[Variant], root: str | Path = "/") -> None:
        self.device, self.root = device, root
        # Queue knobs a variant sets; the others are left to the kernel (bfq turns wbt off, for one) until the end.
        self.managed_knobs = {k for v in variants for k, _ in v.settings if k in QUEUE_KNOBS}
        self.start = starting_point(device, root)
        self.noted = False  # the start is written down before the first change, and put back only then
        self.original_scheduler, self.available = available_schedulers(device, root)
        self.original_tunables = dict(self.start.tunables)
        self.original_knobs = dict(self.start.knobs)
        self.defaults: dict[str, dict[str, str]] = {}  # scheduler -> tunables+knobs right after a fresh switch
        self.switches: list[tuple[float, str]] = []  # (monotonic time, scheduler) of every switch made

    def _switch(self, name: str) -> None:
        r = switch_scheduler(self.device, name, self.root)
        if r.old != r.new:
            self.switches.append((r.time, name))

    def _current(self) -> str | None:
        return available_schedulers(self.device, self.root)[0]

    def apply(self, v: Variant) -> dict[str, str]:
        """Put ``v`` in place from its scheduler's defaults; returns every setting as now read back."""
        if not self.noted:
            self.start = note(self.start, self.root)
            self.noted = True
        if v.scheduler not in self.defaults:
            if self._current() == v.scheduler:
                # The device may carry hand-tuned values: switch away and back for the kernel's defaults.
                other = next((s for s in self.available if s != v.scheduler), None)
                if other is not None:
                    self._switch(other)
            self._switch(v.scheduler)
            # The switch reset the tunables and nr_requests; other managed knobs go back to their start values.
            now = read_knobs(self.device, self.root)
            knobs = {k: now.get(k) if k == "nr_requests" else self.original_knobs.get(k) for k in self.managed_knobs}
            self.defaults[v.scheduler] = {**read_tunables(self.device, self.root),
                                          **{f"knob:{k}": x for k, x in knobs.items() if x is not None}}
        elif self._current() != v.scheduler:
            self._switch(v.scheduler)
        wanted = dict(self.defaults[v.scheduler])
        for key, value in v.settings:
            wanted[f"knob:{key}" if key in QUEUE_KNOBS else key] = value
        for key, value in wanted.items():
            name = key.removeprefix("knob:")
            write_attr(self.device, setting_attr(name), value, self.root)
        return self.snapshot()

    def snapshot(self) -> dict[str, str]:
        cur = self._current() or ""
        return {"scheduler": cur, **read_tunables(self.device, self.root),
                **{f"knob:{k}": x for k, x in read_knobs(self.device, self.root).items()}}

    def put_back(self) -> None:
        """The configuration found at the start, every value of it, and the run's own journal entries dropped; raises
        (DeviceGone, IoschedError) naming what could not be put back, whose journal entries stay for restore."""
        if not self.noted:
            return  # nothing was changed
        self.noted = False
        done = put_back(self.start, self.root)
        if done.switched_at is not None and self.start.scheduler is not None:
            self.switches.append((done.switched_at, self.start.scheduler))
        if done.status in ("gone", "replaced"):
            raise DeviceGone(f"{self.device} is gone: {done.detail}")
        if done.status == "failed":
            raise IoschedError(f"{self.device} {'; '.join(done.failed)}; `iosched restore` tries again")


def drifted(device: str, config: dict[str, str], root: str | Path = "/") -> str | None:
    """Why a run under ``config`` (the variant as read back when it was put in place) is no sample, when its
    scheduler or settings changed under it (a udev rule, tuned, a hand): None when nothing moved."""
    cur = available_schedulers(device, root)[0]
    if cur != config["scheduler"]:
        return f"the scheduler changed to {cur} during the run (a udev rule or tuned?)"
    now = {**read_tunables(device, root), **{f"knob:{k}": x for k, x in read_knobs(device, root).items()}}
    changed = [k for k, x in config.items() if k != "scheduler" and now.get(k) != x]
    return f"settings changed during the run: {', '.join(changed)}" if changed else None
