"""What every plan on this machine shares (core/experiment/local_plan.py): the one way a target is chosen for its
jobs (none for a command; the raw device for a replay, never a scratch file), and the busy watch told of every run,
what it saw kept among the result's notes once."""

from __future__ import annotations

from dataclasses import dataclass, field

from advice_support import nvme_disk
from doc_support import experiment_doc, run_doc

from iosched.core.experiment.events import Event, Note, RunEnded, RunStarted
from iosched.core.experiment.local_plan import TargetRequest, choose_for, said_by, watched
from iosched.core.load.jobs import CATALOG


def test_no_fio_job_has_no_target_and_a_reading_job_reads_the_raw_disk(tree):
    nvme_disk(tree)
    assert choose_for("nvme0n1", [], TargetRequest(), tree.root) is None
    target = choose_for("nvme0n1", [CATALOG["4k-randread"].scaled(runtime=1.0, size=16 << 20)], TargetRequest(),
                        tree.root)
    assert target is not None and target.path == "/dev/nvme0n1"


@dataclass
class Watch:
    """What the plan asks of a busy watch: told when the first run starts and after each run; its lines."""

    lines: list[str] = field(default_factory=list)
    told: list[str] = field(default_factory=list)

    def started(self) -> None:
        self.told.append("started")

    def after_run(self, run: object) -> None:
        self.told.append("after")
        self.lines.append("busy machine: another iosched loads loop1")


def test_the_busy_watch_hears_every_run_and_what_it_said_is_kept_once():
    watch, heard = Watch(), []
    emit = watched(watch, heard.append)  # type: ignore[arg-type]  # the duck-typed watch above
    run = run_doc({"variant": "none", "metrics": {"iops": 1.0}})
    events: list[Event] = [RunStarted(0, 2, "none"), RunEnded(0, 2, "none", run), Note("x")]
    for e in events:
        emit(e)
    assert heard == events and watch.told == ["started", "after"]
    doc = experiment_doc({"kind": "compare", "notes": ["busy machine: another iosched loads loop1"]})
    assert said_by(watch, doc).notes == doc.notes  # type: ignore[arg-type]  # said already: not again
    assert said_by(watch, experiment_doc({"kind": "compare"})).notes == [  # type: ignore[arg-type]
        "busy machine: another iosched loads loop1"]
