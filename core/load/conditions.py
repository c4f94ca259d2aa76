"""What a result was measured under beyond its variants, kept with every verdict and advice so that two results can be
told apart before they are compared: the CPU, the device's model and firmware (the kernel is the document's own
``kernel``), how full the test target was, and whether runs waited for steady state (each run says whether it came).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from iosched.core.kernel.devices import read_device
from iosched.core.kernel.machine import read_cpu_model, read_firmware
from iosched.core.load.fill import FillDoc
from iosched.core.load.steady import SteadyWait


@dataclass(frozen=True, kw_only=True)
class ConditionsDoc:
    """What the runs were measured under: the machine and device beyond their names, the target's fill level and the
    wait for steady state before each run."""

    cpu_model: str | None = field(metadata={"doc": "/proc/cpuinfo's model name (null: it names none)"})
    device: str = field(metadata={"doc": "the device the runs measured"})
    device_model: str | None
    firmware: str | None = field(metadata={"doc": "the device's firmware revision (null: it has none, a loop device)"})
    fill: FillDoc | None = field(metadata={
        "doc": "how full the target was when the first run began (null: a raw device left as found, level unknown)"})
    steady: SteadyWait | None = field(metadata={
        "doc": "each run waited for steady state so (null: runs counted from their start); each run's own steady "
               "says whether it came"})

    def words(self) -> list[str]:
        """What a report says of them, a clause each."""
        ident = ", ".join(x for x in (self.device_model, f"firmware {self.firmware}" if self.firmware else None) if x)
        out = [f"{self.device}{f' ({ident})' if ident else ''} on {self.cpu_model or 'an unnamed CPU'}"]
        if self.fill is not None:
            out.append(self.fill.words())
        if self.steady is not None:
            out.append(f"each run waited for steady state: {self.steady.words()}")
        return out


def read_conditions(device: str, fill: FillDoc | None, steady: SteadyWait | None,
                    root: str | Path = "/") -> ConditionsDoc:
    """The conditions of runs on ``device`` now."""
    dev = read_device(device, root)
    return ConditionsDoc(cpu_model=read_cpu_model(root), device=device, device_model=dev.model if dev else None,
                         firmware=read_firmware(device, root), fill=fill, steady=steady)
