"""The experiment service on this machine's kinds with simulated runs (core/experiment/simulated.py): a plan on a
fixture disk, its runs drawn from a model through the one slot loop, without fio or root."""

from __future__ import annotations

from advice_support import nvme_disk

from iosched.core.documents.params import parse_variants
from iosched.core.experiment import service
from iosched.core.experiment.compare import ComparePlan
from iosched.core.experiment.events import Event
from iosched.core.experiment.simulated import Simulation
from iosched.core.load.jobs import CATALOG

JOB = CATALOG["4k-randread"].scaled(runtime=1.0, size=16 << 20)  # reads: the raw fixture disk is its target


def compare(tree, sim: Simulation, variants: str = "none,bfq", **kw) -> ComparePlan:
    """A compare of ``JOB`` on the fixture's nvme0n1, its runs ``sim``'s."""
    nvme_disk(tree)
    return ComparePlan("nvme0n1", parse_variants(variants), job=JOB, settle=0.0, root=tree.root, runs=sim, **kw)


def run(plan, saver=None, ctl=None) -> tuple[service.Outcome, list[Event]]:
    """``plan`` through the service: its outcome and every event it said."""
    events: list[Event] = []
    return service.run(plan, saver, events.append, ctl), events
