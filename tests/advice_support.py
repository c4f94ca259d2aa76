"""`advise` without a device: the simulation core/experiment/simulated.py gives (each run's figures drawn around each
variant's true value, log-normal at a chosen noise), whose executor the advice plan's runs go through in the one slot
loop in place of fio, and a fixture disk to observe (tests/unit/advice/test_advice_plan.py, the TUI's advise screen
tests)."""

from __future__ import annotations

from iosched.core.experiment.simulated import Simulation

# The figures each run carries at the current setting, and their noise: core/experiment/simulated.py's.
SimulatedRunner = Simulation


def nvme_disk(tree, scheduler: str = "[none] mq-deadline kyber bfq") -> None:
    """A fixture NVMe drive, nvme0n1, offering every scheduler."""
    tree.add_disk("nvme0n1", "259:0", scheduler=scheduler)
    for i in range(4):
        tree.write(f"sys/block/nvme0n1/mq/{i}/nr_tags", "1023\n")
