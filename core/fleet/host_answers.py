"""A lockstep host's answers as declared types: what `iosched fleet-host` (core/fleet/fleet_host.py) says to each
of the controller's lines, read by the strict decoder (core/base/decode.py) before anything uses it.

So every number a host sends is checked where every saved figure is: finite, within its bounds, of its type (a
window's start is seconds on the session's clock, never negative and never 10**400; a window's figures are
the sampler's own, by name, none negative). An answer that does not decode is one sentence naming its place, and
its host fails with it; the others go on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal, TypeVar

from iosched.core.base.decode import DecodeError, decode
from iosched.core.base.schema import Keywords
from iosched.core.documents.document import TargetDoc
from iosched.core.kernel.device_doc import DeviceDoc, DeviceNameDoc
from iosched.core.load.conditions import ConditionsDoc

MAX_FIGURE = 1e15  # document.Measured's bound: no figure a run holds is larger
# Seconds on a host's session clock (from its ready answer): a session lasts days at most, never centuries.
SessionSeconds = Annotated[float, Keywords(minimum=0, maximum=1e9)]
# A figure of the host's sampler over a run: rates, times and shares, none below zero.
Figure = Annotated[float, Keywords(minimum=0, maximum=MAX_FIGURE)]
Name = Annotated[str, Keywords(maxLength=64)]


@dataclass(frozen=True, kw_only=True)
class Ready:
    """The host's first line: who it is, the device's settings found, where its fio server's load goes."""

    ok: Literal[True]
    kernel: str
    machine: str
    host: str
    device: DeviceDoc | DeviceNameDoc
    original: dict[str, str]
    target: TargetDoc
    started: Annotated[float, Keywords(minimum=0, maximum=1e11)] = field(metadata={"doc": "wall clock, Unix s"})
    conditions: ConditionsDoc | None = None  # CPU, device model and firmware (None: an iosched that sends none)


@dataclass(frozen=True, kw_only=True)
class Applied:
    """`apply N`: the variant in place, every setting read back."""

    ok: Literal[True]
    config: dict[str, str]


@dataclass(frozen=True, kw_only=True)
class Done:
    """`begin`, `restart`: done, nothing more to say."""

    ok: Literal[True]


@dataclass(frozen=True, kw_only=True)
class WindowFigures:
    """What the host's sampler saw over a run (core/experiment/runner.py ``window_metrics``), by name."""

    dev_iops: Figure | None = None
    dev_r_await: Figure | None = None
    dev_w_await: Figure | None = None
    dev_aqu_sz: Figure | None = None
    dev_util: Figure | None = None
    dev_ios: Figure | None = None
    dev_mb: Figure | None = None
    cpu_usr: Figure | None = None
    cpu_sys: Figure | None = None
    cpu_iowait: Figure | None = None
    cpu_irq: Figure | None = None
    cpu_soft: Figure | None = None
    cpu_steal: Figure | None = None
    cpu_us_per_io: Figure | None = None

    def as_metrics(self) -> dict[str, float]:
        return {k: v for k, v in vars(self).items() if v is not None}


@dataclass(frozen=True, kw_only=True)
class Window:
    """`end IOS`: the run's window on the session's clock, its figures, and whether the settings drifted."""

    ok: Literal[True]
    start: SessionSeconds
    end: SessionSeconds
    metrics: WindowFigures
    drift: str | None


@dataclass(frozen=True, kw_only=True)
class Bye:
    """`bye`: the device put back, and the switches made (on the session's clock)."""

    ok: Literal[True]
    bye: Literal[True]
    switches: Annotated[list[tuple[SessionSeconds, Name]], Keywords(maxItems=1_000_000)]


_A = TypeVar("_A")


def read_answer(tp: type[_A], answer: object) -> _A | str:
    """``answer`` (parsed JSON, its ``ok`` true) as a ``tp``, or the sentence of what is wrong with it."""
    try:
        return decode(tp, answer)
    except DecodeError as e:
        return str(e)
