"""The simulated executor (core/experiment/simulated.py) runs the whole service without fio or root: here a matrix,
saved after every run, stopped and resumed from its file, and one until every cell decided (a compare's and an
alternation's: test_compare.py, test_alternation.py; an advice's: tests/unit/advice/test_advice_plan.py; the
fleets': tests/unit/fleet/test_simulated_hosts.py)."""

from __future__ import annotations

import json

from advice_support import nvme_disk
from service_support import run

from iosched.core.documents.document import MatrixDoc
from iosched.core.documents.params import parse_variants
from iosched.core.experiment.events import LookReached, RunStarted
from iosched.core.experiment.matrix import MatrixPlan, MatrixRunPlan, decode_matrix
from iosched.core.experiment.simulated import Simulation
from iosched.core.load.jobs import CATALOG
from iosched.core.present.result_file import ResultFile
from iosched.core.present.sentences import look_words


def matrix(tree, sim: Simulation, repeat: int = 2, **kw) -> MatrixRunPlan:
    nvme_disk(tree)
    jobs = [CATALOG[n].scaled(runtime=1.0, size=16 << 20) for n in ("4k-read", "4k-randread")]
    plan = MatrixPlan(parse_variants("none,bfq"), jobs, repeat, settle=0.0)
    return MatrixRunPlan("nvme0n1", plan.variants, matrix=plan, root=tree.root, runs=sim, **kw)


def test_a_matrix_is_saved_after_every_run_and_goes_on_from_its_file(tree, tmp_path):
    save = tmp_path / "m.json"
    sim = Simulation({"bfq": {"iops": 0.8}}, stop_after=5)
    outcome, _ = run(matrix(tree, sim), ResultFile(save, keep_empty=True))
    assert outcome.status == "cancelled" and outcome.finished_runs == 5
    saved = decode_matrix(json.loads(save.read_text()), save)
    assert saved.status == "cancelled" and len(saved.runs) == 5
    assert "ended early (Ctrl-C): 5 of 8 runs finished; --resume continues" in saved.notes
    sim.stop_after = None
    again, events = run(matrix(tree, sim, resume=saved), ResultFile(save))
    doc = again.doc
    assert again.status == "final" and isinstance(doc, MatrixDoc) and len(doc.runs) == 8
    assert sorted(r.slot for r in doc.runs) == list(range(8)) and doc.runs[5].start >= doc.runs[4].end
    assert "interrupted (Ctrl-C): 5 of 8 runs finished, then resumed" in doc.notes
    assert [e.label for e in events if isinstance(e, RunStarted)] == \
        [f"{w} · {v}" for w, v in doc.order[5:]]  # its events name the cell
    assert doc.judgement is not None and len(doc.judgement.cells) == 4


def test_a_matrix_until_a_verdict_leaves_out_decided_cells_and_stops(tree):
    sim = Simulation(by_workload={"4k-read": {"bfq": {"iops": 0.5}}, "4k-randread": {"bfq": {"iops": 0.5}}},
                     noise=0.01)
    outcome, events = run(matrix(tree, sim, repeat=12, until_verdict=12))
    doc = outcome.doc
    assert outcome.status == "final" and doc.sequential is not None and len(doc.runs) < len(doc.order)
    assert all(c.decided_at for c in doc.judgement.cells if not c.is_baseline)
    looks = [e for e in events if isinstance(e, LookReached)]
    assert looks and look_words(looks[0]).startswith("look at 4 runs per cell")
