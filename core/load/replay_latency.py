"""A replay's latency: the time its requests spent below fio, in the block layer; and the rule that says when fio's
own figure for them is fio's rather than the device's.

fio replays a capture at one job, at the deepest queue the capture saw (core/load/replay.py). Before each request it
sleeps the captured gap (fio's iolog.c, ``iolog_delay``), and it reaps completions only when it must, its queue full:
a request's completion latency as fio reports it runs on until fio next looks, about the depth times the gap between
requests, whatever the device did. A 1,000 IO/s capture replayed at depth 10 read 10-14 ms in fio for requests the
block layer completed in well under a millisecond.

So a replay's latency is the block layer's: the tracer (core/trace/runs.py, started for every timed replay) times
each request from where the kernel starts accounting it, as diskstats does, to its completion: ``total_mean_us``
(exact), ``total_p50_us`` and ``total_p99_us`` (log2 histograms, interpolated within a bucket). A replay beside a
write flood (roles fg and bg) is told apart by its reads, the flood writing only: the block layer's reads are the
foreground's (``fg:total_*``; fio runs every job as a thread of one process, so no process tells them apart). A
capture without reads has no such figure beside a flood. A timed replay is judged on ``JUDGED``.

Two checks, every run (``checked``):

- **the share rule**: of fio's mean latency, the share fio added above the block layer's mean of the same requests
  (``engine_share``). Past ``MAX_ENGINE_SHARE`` fio's latency figures are left out of the run, its ``latency`` record
  saying why: a figure that is mostly fio's is never judged, nor shown as the device's. A run whose block-layer
  figure is missing (tracing stopped) keeps none of fio's either: there is nothing to check them against.
- **the device's own await**: the block layer's mean of reads against iostat's r_await (without reads: writes
  against w_await), from diskstats over the same run. Both time the same requests over the same span, so figures
  more than ``AWAIT_FACTOR`` apart mean the tracer missed requests: the block layer's figures are left out too, and
  fio's with them.

Pure: figures in, figures out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Protocol

from iosched.core.base.figures import FIGURE, figure_fault
from iosched.core.base.schema import Keywords

MAX_ENGINE_SHARE = 0.25  # of fio's mean latency, the most fio itself may have added for its figures to be kept
AWAIT_FACTOR = 2.0  # the block layer's mean and the device's own await may differ by this factor, no more
JUDGED = "total_p99_us"  # what a timed replay is judged on: the block layer's p99
FIO_FIGURES = ("clat_mean_us", "clat_p50_us", "clat_p99_us", "clat_p999_us")
BLOCK_FIGURES = ("total_mean_us", "total_p50_us", "total_p99_us")

Figure = Annotated[float, FIGURE]
Share = Annotated[float, Keywords(minimum=0, maximum=1)]


class TracedOp(Protocol):
    """One operation's requests over a run, as the run's trace keeps them (core/documents/document.py)."""

    @property
    def mean_us(self) -> float | None: ...
    @property
    def p50_us(self) -> float | None: ...
    @property
    def p99_us(self) -> float | None: ...


class RunTrace(Protocol):
    """What ``checked`` reads of a run's trace: its reads' and writes' total time."""

    @property
    def reads(self) -> TracedOp | None: ...
    @property
    def writes(self) -> TracedOp | None: ...


@dataclass(frozen=True, kw_only=True)
class ReplayLatency:
    """A replay's run: its latency in the block layer against fio's, and against the device's own await."""

    role: str | None = field(metadata={"doc": "the role that replays the capture (fg beside a flood); null: the "
                                              "whole workload"})
    fio_mean_us: Figure | None = field(metadata={"doc": "fio's mean completion latency of the replay's requests"})
    block_mean_us: Figure | None = field(metadata={
        "doc": "the block layer's mean of the same requests: from where the kernel starts accounting each (as "
               "diskstats does) to its completion"})
    await_us: Figure | None = field(metadata={
        "doc": "the device's own await over the run, in µs (iostat's r_await, else w_await, from diskstats), checked "
               "against block_await_us"})
    block_await_us: Figure | None = field(metadata={
        "doc": "the block layer's mean of the same operation as await_us, from the tracer"})
    engine_share: Share | None = field(metadata={
        "doc": "of fio_mean_us, the share fio added above block_mean_us: 1 - block/fio, at least 0"})
    max_share: Share = field(metadata={"doc": "the most engine_share may be for fio's latency figures to be kept"})
    fio_kept: bool = field(metadata={"doc": "false: fio's latency figures were left out of the run's metrics"})
    block_kept: bool = field(metadata={"doc": "false: the block layer's figures were left out (or never there)"})
    note: str | None = field(metadata={"doc": "why a figure was left out, one sentence; null when none was"})


def engine_share(reported_us: float, below_us: float) -> float:
    """Of a latency fio reported, the share fio itself added above the block layer's figure of the same requests
    (0 when fio's is not above it)."""
    if not reported_us > 0 or not math.isfinite(reported_us) or not math.isfinite(below_us):
        return 0.0
    return min(max(reported_us - below_us, 0.0) / reported_us, 1.0)


def fio_usable(share: float, max_share: float = MAX_ENGINE_SHARE) -> bool:
    """Whether a figure fio reported may stand: its engine added no more than ``max_share`` of it."""
    return share <= max_share


def awaits_agree(block_us: float, await_us: float, factor: float = AWAIT_FACTOR) -> bool:
    """Whether the block layer's mean and the device's own await of the same requests are within ``factor``."""
    if block_us <= 0 or await_us <= 0:
        return block_us == await_us
    return 1.0 / factor <= block_us / await_us <= factor


def untraced_words(why: str) -> str:
    """Why a replay's latency cannot be measured here, in words: the block layer cannot be traced (``why``)."""
    return f"a replay's latency is its requests' in the block layer, not fio's, and the tracer cannot run here ({why})"


def _share_text(share: float) -> str:
    return f"{share * 100:.0f}%"


def _us(x: float) -> str:
    return f"{x / 1000:.2f} ms" if x >= 1000 else f"{x:.0f} µs"


def checked(metrics: Mapping[str, float | None], trace: RunTrace | None, role: str | None = None,
            max_share: float = MAX_ENGINE_SHARE,
            factor: float = AWAIT_FACTOR) -> tuple[dict[str, float | None], ReplayLatency]:
    """A replay's run figures with its latency judged below fio: the block layer's figures (``role``'s, its reads,
    for a replay beside a write flood), fio's latency figures left out past the share rule, the block layer's left out
    when they disagree with the device's own await; and the record of what was done and why."""
    out = dict(metrics)
    prefix = f"{role}:" if role else ""
    notes: list[str] = []
    if role and trace is not None:
        if trace.reads is not None:  # the flood only writes: the reads are the role's
            for name, value in zip(BLOCK_FIGURES, (trace.reads.mean_us, trace.reads.p50_us, trace.reads.p99_us),
                                   strict=True):
                if (value := _figure(value)) is not None:
                    out[prefix + name] = value
        else:
            notes.append(f"the {role} role read nothing, and its writes cannot be told from the flood's in the block "
                         "layer, so it has no figure of its own there")
    block = out.get(prefix + "total_mean_us") if trace is not None else None
    reported = out.get(prefix + "clat_mean_us")
    # The device's own await against the block layer's mean of the same operation: reads where there are any.
    op, await_ms = (trace.reads, metrics.get("dev_r_await")) if trace is not None else (None, None)
    if trace is not None and op is None:
        op, await_ms = trace.writes, metrics.get("dev_w_await")
    block_await = op.mean_us if op is not None else None
    await_us = await_ms * 1000.0 if await_ms is not None else None
    block_kept = block is not None
    if block_kept and block_await and await_us and not awaits_agree(block_await, await_us, factor):
        block_kept = False
        notes.append(f"the block layer's mean ({_us(block_await)}) and the device's own await ({_us(await_us)}) "
                     f"differ by more than {factor:g}x, so the tracer missed requests: its figures are left out")
    share = engine_share(reported, block) if reported is not None and block is not None else None
    if share is not None and block_kept:
        fio_kept = fio_usable(share, max_share)
        if not fio_kept:
            notes.append(f"fio's latency is {_share_text(share)} fio's own ({_us(reported or 0)} against "
                         f"{_us(block or 0)} in the block layer; more than {_share_text(max_share)} is not the "
                         "device's): its latency figures are left out")
    else:
        fio_kept = reported is None  # nothing of fio's to leave out; else nothing to check it against
        if not fio_kept:
            notes.append("fio's latency figures with them, nothing left to check them against" if block is not None
                         else "without the block layer's figures fio's latency cannot be told from fio's own "
                              "waiting: its latency figures are left out")
    if not block_kept:
        for name in BLOCK_FIGURES:
            out.pop(prefix + name, None)
    if not fio_kept:
        for name in FIO_FIGURES:
            out.pop(prefix + name, None)
            if prefix:
                out.pop(name, None)  # the pooled figures hold the role's requests too
    return out, ReplayLatency(role=role, fio_mean_us=_figure(reported), block_mean_us=_figure(block),
                              await_us=_figure(await_us), block_await_us=_figure(block_await),
                              engine_share=None if share is None else round(share, 4), max_share=max_share,
                              fio_kept=fio_kept, block_kept=block_kept, note="; ".join(notes) or None)


def _figure(x: float | None) -> float | None:
    return x if x is not None and figure_fault(x) is None else None


def latency_note(records: Sequence[ReplayLatency]) -> str | None:
    """A replay's runs in one line: what its latency is, and in how many runs fio's figures were left out and why."""
    if not records:
        return None
    said = "replay latency: judged in the block layer (queue to completion), not on fio's figures"
    left = [r for r in records if not r.fio_kept]
    shares = [r.engine_share for r in left if r.engine_share is not None and r.block_kept]  # the share rule's
    if shares:
        said += (f"; fio's are left out of {len(shares)} of {len(records)} run(s): up to {_share_text(max(shares))} "
                 f"of them was fio's own waiting (more than {_share_text(records[0].max_share)} is not the device's)")
    elif not left:
        said += f"; fio's agree with it to within {_share_text(records[0].max_share)} in every run"
    no_block = sum(not r.block_kept for r in records)
    if no_block:
        said += f"; {no_block} run(s) without a block-layer figure, not judged on latency"
    return said
